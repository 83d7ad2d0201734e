package io.dgen.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * Debian's headless Chromium driven through its ChromeDriver ({@code chromium} and {@code
 * chromium-driver}; {@code .ci/run} installs both). Started with the flags this closed network
 * needs: no background networking, no component updates, no sync, a fresh profile.
 *
 * <p>Missing, the browser tests are skipped with the reason, unless {@code
 * DGEN_BROWSER_REQUIRED=true} (CI sets it): then they fail. Other binaries: {@code DGEN_CHROMIUM},
 * {@code DGEN_CHROMEDRIVER}.
 */
final class Browser implements AutoCloseable {

  final ChromeDriver driver;
  private final Path profile;

  private Browser(ChromeDriver driver, Path profile) {
    this.driver = driver;
    this.profile = profile;
  }

  static Browser start() {
    Path chromium = Path.of(env("DGEN_CHROMIUM", "/usr/bin/chromium"));
    Path chromedriver = Path.of(env("DGEN_CHROMEDRIVER", "/usr/bin/chromedriver"));
    if (!Files.isExecutable(chromium) || !Files.isExecutable(chromedriver)) {
      String why =
          "no browser: "
              + chromium
              + " or "
              + chromedriver
              + " is missing (apt-get install chromium chromium-driver)";
      if (Boolean.parseBoolean(System.getenv("DGEN_BROWSER_REQUIRED"))) {
        throw new IllegalStateException(why + "; DGEN_BROWSER_REQUIRED=true");
      }
      Assumptions.abort(why);
    }
    try {
      Path profile = Files.createTempDirectory("dgen-chromium");
      ChromeOptions options = new ChromeOptions();
      options.setBinary(chromium.toFile());
      options.addArguments(
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--disable-dev-shm-usage",
          "--hide-scrollbars",
          "--window-size=1100,760",
          "--user-data-dir=" + profile);
      ChromeDriverService service =
          new ChromeDriverService.Builder()
              .usingDriverExecutable(chromedriver.toFile())
              .usingAnyFreePort()
              .build();
      ChromeDriver driver = new ChromeDriver(service, options);
      driver.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(60));
      return new Browser(driver, profile);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String env(String name, String fallback) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? fallback : v;
  }

  WebDriverWait waiting() {
    return waiting(Duration.ofSeconds(60));
  }

  WebDriverWait waiting(Duration timeout) {
    WebDriverWait wait = new WebDriverWait(driver, timeout);
    wait.ignoring(StaleElementReferenceException.class).pollingEvery(Duration.ofMillis(50));
    return wait;
  }

  /** Waits until the page (which may refresh itself) shows {@code text} in {@code by}. */
  WebElement awaitText(By by, String text) {
    return awaitText(by, text, Duration.ofSeconds(60));
  }

  WebElement awaitText(By by, String text, Duration timeout) {
    waiting(timeout)
        .withMessage(() -> by + " to contain " + text + "; page: " + driver.getPageSource())
        .until(d -> d.findElements(by).stream().anyMatch(e -> e.getText().contains(text)));
    return driver.findElement(by);
  }

  /**
   * Waits until the live page has drawn at least {@code points} points; its status element has no
   * {@code data-points} attribute until the first sample arrives.
   */
  void awaitLivePoints(int points) {
    waiting()
        .withMessage(() -> "the live page to draw " + points + " points")
        .until(
            d -> {
              String drawn = d.findElement(By.id("live-status")).getAttribute("data-points");
              return drawn != null && !drawn.isEmpty() && Integer.parseInt(drawn) >= points;
            });
  }

  /**
   * Saves a screenshot of the page: into {@code docs/images} with {@code
   * -Ddgen.updateScreenshots=true}, else under {@code target/screenshots}.
   */
  void screenshot(String name) {
    try {
      Path dir =
          Boolean.getBoolean("dgen.updateScreenshots")
              ? Path.of("..", "docs", "images")
              : Path.of("target", "screenshots");
      Files.createDirectories(dir);
      byte[] png = driver.getScreenshotAs(OutputType.BYTES);
      assertThat(png).isNotEmpty();
      Files.write(dir.resolve("ui-" + name + ".png"), png);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    try {
      driver.quit();
    } finally {
      try (Stream<Path> files = Files.walk(profile)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        // a leftover temporary profile is harmless
      }
    }
  }
}

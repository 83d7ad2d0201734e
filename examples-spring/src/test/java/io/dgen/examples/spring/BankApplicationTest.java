package io.dgen.examples.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The service end to end, over HTTP on a random port, on the RocksDB backend in a fresh directory
 * under {@code target/}: the same configuration {@code exec:java} runs.
 */
@SpringBootTest(
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = "dgen.rocksdb.data-dir=target/bank-test-${random.uuid}")
class BankApplicationTest {

  /** Account ids unique to each test: the data directory is shared by the class's tests. */
  private static final AtomicLong IDS = new AtomicLong(1);

  @LocalServerPort int port;

  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private record Response(int status, String body) {}

  private Response send(String method, String path, @Nullable String json, @Nullable String key)
      throws IOException, InterruptedException {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
            .timeout(Duration.ofSeconds(30))
            .method(
                method,
                json == null
                    ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(json));
    if (json != null) {
      request.header("Content-Type", "application/json");
    }
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    HttpResponse<String> r = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    return new Response(r.statusCode(), r.body());
  }

  private Response open(long id) throws Exception {
    return send("POST", "/accounts/" + id, null, null);
  }

  private Response deposit(long id, long amount, @Nullable String key) throws Exception {
    return send("POST", "/accounts/" + id + "/deposits", "{\"amount\":" + amount + "}", key);
  }

  private Response transfer(long from, long to, long amount, @Nullable String key)
      throws Exception {
    return send(
        "POST",
        "/accounts/" + from + "/transfers",
        "{\"to\":" + to + ",\"amount\":" + amount + "}",
        key);
  }

  private Response balance(long id) throws Exception {
    return send("GET", "/accounts/" + id, null, null);
  }

  private static String view(long id, long balance, String outcome) {
    return "{\"id\":" + id + ",\"balance\":" + balance + ",\"outcome\":\"" + outcome + "\"}";
  }

  @Test
  void open_deposit_transfer_andRead() throws Exception {
    long a = IDS.getAndIncrement();
    long b = IDS.getAndIncrement();
    assertThat(open(a)).isEqualTo(new Response(201, view(a, 0, "OK")));
    assertThat(open(b)).isEqualTo(new Response(201, view(b, 0, "OK")));
    assertThat(deposit(a, 100, null)).isEqualTo(new Response(200, view(a, 100, "OK")));
    assertThat(transfer(a, b, 30, null)).isEqualTo(new Response(200, view(a, 70, "OK")));
    assertThat(balance(a)).isEqualTo(new Response(200, view(a, 70, "OK")));
    // the credit is queued in the transfer's transaction and lands moments later
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> balance(b), r -> r.equals(new Response(200, view(b, 30, "OK"))));
  }

  @Test
  void refusals_haveTheirStatus() throws Exception {
    long a = IDS.getAndIncrement();
    long nobody = IDS.getAndIncrement();
    assertThat(deposit(nobody, 10, null))
        .isEqualTo(new Response(404, view(nobody, 0, "NO_ACCOUNT")));
    assertThat(balance(nobody).status()).isEqualTo(404);
    open(a);
    assertThat(open(a)).isEqualTo(new Response(409, view(a, 0, "ALREADY_OPEN")));
    assertThat(deposit(a, 0, null)).isEqualTo(new Response(400, view(a, 0, "INVALID")));
    deposit(a, 50, null);
    assertThat(transfer(a, nobody, 80, null))
        .isEqualTo(new Response(409, view(a, 50, "INSUFFICIENT_FUNDS")));
    assertThat(transfer(a, a, 10, null)).isEqualTo(new Response(400, view(a, 50, "INVALID")));
    assertThat(deposit(a, 1, "k".repeat(300)).status()).isEqualTo(400);
  }

  @Test
  void aDepositRetriedWithItsKey_isAppliedOnce_andEveryRetryGetsTheFirstAnswer() throws Exception {
    long a = IDS.getAndIncrement();
    open(a);
    Response first = deposit(a, 100, "deposit-1");
    assertThat(first).isEqualTo(new Response(200, view(a, 100, "OK")));
    // a client that lost the response retries, several times and at once
    List<CompletableFuture<Response>> retries = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      retries.add(
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return deposit(a, 100, "deposit-1");
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              }));
    }
    for (CompletableFuture<Response> retry : retries) {
      assertThat(retry.get()).isEqualTo(first);
    }
    assertThat(balance(a)).isEqualTo(new Response(200, view(a, 100, "OK")));
    // another key is another deposit
    assertThat(deposit(a, 100, "deposit-2")).isEqualTo(new Response(200, view(a, 200, "OK")));
  }

  @Test
  void aTransferRetriedWithItsKey_movesTheMoneyOnce() throws Exception {
    long a = IDS.getAndIncrement();
    long b = IDS.getAndIncrement();
    open(a);
    open(b);
    deposit(a, 100, null);
    for (int i = 0; i < 3; i++) {
      assertThat(transfer(a, b, 40, "t-1")).isEqualTo(new Response(200, view(a, 60, "OK")));
    }
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> balance(b), r -> r.equals(new Response(200, view(b, 40, "OK"))));
    assertThat(balance(a)).isEqualTo(new Response(200, view(a, 60, "OK")));
  }

  @Test
  void aTransferToAnAccountNotOpen_comesBack() throws Exception {
    long a = IDS.getAndIncrement();
    long nobody = IDS.getAndIncrement();
    open(a);
    deposit(a, 100, null);
    assertThat(transfer(a, nobody, 25, null)).isEqualTo(new Response(200, view(a, 75, "OK")));
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> balance(a), r -> r.equals(new Response(200, view(a, 100, "OK"))));
    assertThat(balance(nobody).status()).isEqualTo(404);
  }

  @Test
  void health_includesDGen() throws Exception {
    await()
        .atMost(Duration.ofSeconds(20))
        .untilAsserted(
            () -> {
              Response health = send("GET", "/actuator/health", null, null);
              assertThat(health.status()).isEqualTo(200);
              JsonNode dgen = JsonMapper.shared().readTree(health.body()).at("/components/dgen");
              assertThat(dgen.at("/status").asString()).isEqualTo("UP");
              assertThat(dgen.at("/details/backend").asString()).isEqualTo("RocksDbBackend");
              assertThat(dgen.at("/details/hosted/0/kind").asString()).isEqualTo("account");
              assertThat(dgen.at("/details/hosted/0/member").asString()).isEqualTo("live");
            });
  }
}

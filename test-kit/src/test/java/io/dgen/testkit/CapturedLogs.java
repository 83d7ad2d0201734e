package io.dgen.testkit;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.AbstractLogger;
import org.slf4j.helpers.BasicMDCAdapter;
import org.slf4j.helpers.BasicMarkerFactory;
import org.slf4j.helpers.MessageFormatter;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * The SLF4J provider of the kit's tests: it keeps every line at INFO or above, with a copy of the
 * MDC it was logged with, and prints it to standard error.
 */
public final class CapturedLogs implements SLF4JServiceProvider {

  /** One log line and the MDC it was logged with. */
  public record Line(Level level, String logger, String message, Map<String, String> mdc) {}

  private static final List<Line> LINES = new CopyOnWriteArrayList<>();

  private final MDCAdapter mdc = new BasicMDCAdapter();
  private final IMarkerFactory markers = new BasicMarkerFactory();

  /** The lines logged so far. */
  public static List<Line> lines() {
    return List.copyOf(LINES);
  }

  @Override
  public ILoggerFactory getLoggerFactory() {
    return Captor::new;
  }

  @Override
  public IMarkerFactory getMarkerFactory() {
    return markers;
  }

  @Override
  public MDCAdapter getMDCAdapter() {
    return mdc;
  }

  @Override
  public String getRequestedApiVersion() {
    return "2.0.99";
  }

  @Override
  public void initialize() {}

  private static final class Captor extends AbstractLogger {
    private static final long serialVersionUID = 1L;

    Captor(String name) {
      this.name = name;
    }

    @Override
    protected String getFullyQualifiedCallerName() {
      return null;
    }

    @Override
    protected void handleNormalizedLoggingCall(
        Level level, Marker marker, String pattern, Object[] args, Throwable error) {
      String message = MessageFormatter.basicArrayFormat(pattern, args);
      Map<String, String> context = org.slf4j.MDC.getCopyOfContextMap();
      LINES.add(new Line(level, name, message, context == null ? Map.of() : Map.copyOf(context)));
      System.err.println(level + " " + name + " " + context + " " + message);
    }

    @Override
    public boolean isTraceEnabled(Marker marker) {
      return false;
    }

    @Override
    public boolean isTraceEnabled() {
      return false;
    }

    @Override
    public boolean isDebugEnabled(Marker marker) {
      return false;
    }

    @Override
    public boolean isDebugEnabled() {
      return false;
    }

    @Override
    public boolean isInfoEnabled(Marker marker) {
      return true;
    }

    @Override
    public boolean isInfoEnabled() {
      return true;
    }

    @Override
    public boolean isWarnEnabled(Marker marker) {
      return true;
    }

    @Override
    public boolean isWarnEnabled() {
      return true;
    }

    @Override
    public boolean isErrorEnabled(Marker marker) {
      return true;
    }

    @Override
    public boolean isErrorEnabled() {
      return true;
    }
  }
}

package io.dgen.internal.observe;

/**
 * The operability options of one runtime, apart from its core settings: whether processes consume
 * in the background, where metrics go, and what traces.
 *
 * @param backgroundConsumers false for the test kit: processes start without a consume loop and
 *     their queues are run by {@code ServerProcess.drainInCaller} only
 * @param metrics where the runtime's meters go; {@link Metrics#NONE} by default
 * @param tracing what traces messages through the queues; {@link #globalTracing()} by default
 */
public record RuntimeHooks(boolean backgroundConsumers, Metrics metrics, Tracing tracing) {

  /** The defaults: background consumers, no metrics, the global OpenTelemetry's tracing. */
  public static final RuntimeHooks DEFAULT = new RuntimeHooks(true, Metrics.NONE, globalTracing());

  /**
   * The default tracing: the global OpenTelemetry once it is set, if the API is on the class path
   * (in a version that can tell whether the global is set without fixing it); else nothing.
   */
  public static Tracing globalTracing() {
    return Present.GLOBAL ? OtelTracing.global() : Tracing.NONE;
  }

  /**
   * Whether the OpenTelemetry API is on the class path, with what the default needs; checked once.
   */
  private static final class Present {
    static final boolean GLOBAL =
        present("io.opentelemetry.context.Context")
            && present("io.opentelemetry.api.GlobalOpenTelemetry", "isSet");

    private Present() {}

    private static boolean present(String name, String... methods) {
      try {
        Class<?> c = Class.forName(name, false, RuntimeHooks.class.getClassLoader());
        for (String m : methods) {
          c.getMethod(m);
        }
        return true;
      } catch (ReflectiveOperationException | LinkageError e) {
        return false;
      }
    }
  }
}

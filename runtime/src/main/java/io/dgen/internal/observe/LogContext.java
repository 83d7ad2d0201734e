package io.dgen.internal.observe;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Tenant;
import org.jspecify.annotations.Nullable;
import org.slf4j.MDC;

/**
 * The SLF4J MDC of one server's log lines: while a callback runs, and around the runtime's own
 * lines about it (retries, dead letters), the MDC carries {@value #TENANT}, {@value #TUID}, {@value
 * #SERVER} (the behaviour's class) and {@value #MESSAGE} (the message's class, when there is one).
 * A scope puts them and, on close, restores what the thread had before: a pooled thread carries
 * nothing of one server into the next.
 */
public final class LogContext {

  /** The tenant's path, e.g. {@code [acme, orders]}. */
  public static final String TENANT = "dgen.tenant";

  /** The server's identity tuple. */
  public static final String TUID = "dgen.tuid";

  /** The behaviour's class name. */
  public static final String SERVER = "dgen.server";

  /** The class name of the message being handled. */
  public static final String MESSAGE = "dgen.message";

  private static final String[] KEYS = {TENANT, TUID, SERVER, MESSAGE};

  private final String tenant;
  private final String tuid;
  private final String server;

  public LogContext(Tenant tenant, Tuple tuid, Class<?> server) {
    this.tenant = tenant.path().toString();
    this.tuid = tuid.toString();
    this.server = server.getName();
  }

  /** An open scope; closing it restores the thread's MDC. */
  public interface Scope extends AutoCloseable {
    @Override
    void close();
  }

  /**
   * Puts this server's context, and {@code message}'s class if not null, into the MDC.
   *
   * @return the scope to close (in a try-with-resources) when the work ends
   */
  public Scope open(@Nullable Object message) {
    String[] before = new String[KEYS.length];
    for (int i = 0; i < KEYS.length; i++) {
      before[i] = MDC.get(KEYS[i]);
    }
    MDC.put(TENANT, tenant);
    MDC.put(TUID, tuid);
    MDC.put(SERVER, server);
    if (message != null) {
      MDC.put(MESSAGE, message.getClass().getName());
    } else {
      MDC.remove(MESSAGE);
    }
    return () -> {
      for (int i = 0; i < KEYS.length; i++) {
        if (before[i] == null) {
          MDC.remove(KEYS[i]);
        } else {
          MDC.put(KEYS[i], before[i]);
        }
      }
    };
  }
}

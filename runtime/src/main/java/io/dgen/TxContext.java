package io.dgen;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Transaction;
import java.time.Duration;
import java.time.ZoneId;

/**
 * What a {@code handle*Tx} callback gets besides its message: the transaction it runs in, so it can
 * read and write other keys of the tenant atomically with the state change.
 *
 * <p>The transaction may be retried (the callback then runs again) and belongs to the runtime: do
 * not keep it after the callback returns. Write only under {@link Tenant#subspace()} outside the
 * server's own keys ({@link Tenant#subspace()} {@code .subspace(tuid)} belongs to the runtime).
 */
public interface TxContext {

  /** The transaction the callback runs in. */
  Transaction transaction();

  /** The server's tenant. */
  Tenant tenant();

  /** The server's identity tuple: for a hosted server, its kind's name followed by its id. */
  Tuple tuid();

  /**
   * The server's id, in the shape its {@code init} received it. For a server of a kind hosted by
   * {@link Kind}: the {@code String} or {@code Long} it was addressed with ({@code dgen.ref(tenant,
   * kind, "alice")}, {@code dgen.ref(tenant, kind, 42)}), or the {@code Tuple} of a composite id.
   * For a kind hosted by name: the tuid without the kind, a {@code Tuple}. For a started server,
   * which has no kind: its whole tuid. See {@link DGen#host(Kind, java.util.function.Supplier,
   * HostOptions)}.
   *
   * <pre>{@code
   * String owner = (String) tx.id(); // a server addressed as dgen.ref(bank, ACCOUNT, "alice")
   * }</pre>
   */
  Object id();

  /**
   * Schedules {@code message} to this server once {@code delay} has passed, atomically with the
   * callback's state change: the timer exists if and only if this transaction commits.
   *
   * @param message one of the server's message types, not null
   * @param delay how long from now; zero or negative fires at once
   * @return the timer's id
   * @throws IllegalArgumentException if the message's type is not allowed for this server
   */
  String castAfter(Object message, Duration delay);

  /**
   * Schedules {@code message} to this server every {@code period}, first once {@code period} has
   * passed, atomically with the callback's state change: the timer exists if and only if this
   * transaction commits. Each firing queues the message and re-arms the timer in one transaction,
   * exactly once; it repeats until cancelled ({@link #cancelTimer}) or the server is killed. A
   * timer late by more than one period (no runtime was up) fires once, then keeps its phase. See
   * {@code docs/timers.md}.
   *
   * @param message one of the server's message types, not null
   * @param period the time between firings, at least one microsecond
   * @return the timer's id, the same for every firing
   * @throws IllegalArgumentException if {@code period} is zero or negative, or the message's type
   *     is not allowed for this server (nothing is written)
   */
  String castEvery(Object message, Duration period);

  /**
   * Schedules {@code message} to this server at the times the cron expression {@code cron} names in
   * {@code zone}, atomically with the callback's state change, as {@link #castEvery} does. The
   * expression has the five fields of Unix cron: minute, hour, day of month, month, day of week
   * ({@code "0 3 * * MON-FRI"}). Daylight-saving changes: see {@code docs/timers.md}.
   *
   * @param message one of the server's message types, not null
   * @param cron a five-field cron expression
   * @param zone the zone its times are read in
   * @return the timer's id, the same for every firing
   * @throws IllegalArgumentException if {@code cron} does not parse or never fires, or the
   *     message's type is not allowed for this server (nothing is written)
   */
  String castCron(Object message, String cron, ZoneId zone);

  /**
   * Cancels a pending timer of this server, atomically with the callback's state change.
   *
   * @param timerId the timer's id
   * @return true if it was pending (and is cancelled once this transaction commits)
   * @throws IllegalArgumentException if {@code timerId} is not a timer id
   */
  boolean cancelTimer(String timerId);
}

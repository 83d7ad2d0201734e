package io.dgen.internal.keys;

import com.apple.foundationdb.tuple.Tuple;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;
import com.google.common.cache.CacheBuilder;
import com.google.common.cache.CacheLoader;
import com.google.common.cache.LoadingCache;
import com.google.common.util.concurrent.UncheckedExecutionException;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.Objects;
import java.util.Optional;

/**
 * When a recurring timer fires again: a fixed period, or a cron expression in a time zone. Stored
 * with the timer (in its bucket's index entry), so that the transaction that fires it computes its
 * next due time and re-arms it.
 *
 * <p><b>Misfire</b>: a firing late by more than one occurrence (the runtimes were down) fires once,
 * and the timer is re-armed to the first occurrence after the clock's time: missed occurrences are
 * coalesced into that one firing. A fixed period keeps its phase (due times stay {@code first + k *
 * period}).
 *
 * <p><b>Cron</b>: the five fields of Unix cron (minute, hour, day of month, month, day of week),
 * parsed and evaluated by cron-utils in the given zone. Across daylight-saving changes, a local
 * time that does not exist (the hour skipped in spring) does not fire that day; a local time that
 * occurs twice (the hour repeated in autumn) fires once, at its first occurrence, for an expression
 * with a fixed hour; an expression whose hour field is {@code *} follows real time (every hour of
 * the 23-hour and of the 25-hour day fires).
 *
 * <p>Threading: immutable.
 */
public sealed interface TimerSchedule {

  /** Parsed cron expressions, as timers of the same few schedules fire again and again. */
  LoadingCache<String, ExecutionTime> PARSED =
      CacheBuilder.newBuilder()
          .maximumSize(1024)
          .build(
              CacheLoader.from(
                  expr ->
                      ExecutionTime.forCron(
                          new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX))
                              .parse(expr))));

  /**
   * Every {@code period}.
   *
   * @throws IllegalArgumentException if {@code period} is not at least one microsecond, or too long
   *     to count in microseconds
   */
  static TimerSchedule every(Duration period) {
    Objects.requireNonNull(period, "period must not be null");
    long micros;
    try {
      micros =
          Math.addExact(
              Math.multiplyExact(period.getSeconds(), 1_000_000L), period.getNano() / 1000);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("period out of range: " + period, e);
    }
    if (micros <= 0) {
      throw new IllegalArgumentException(
          "period must be positive (at least one microsecond): " + period);
    }
    return new Every(micros);
  }

  /**
   * At the times a Unix cron expression (five fields) names, in {@code zone}.
   *
   * @throws IllegalArgumentException if {@code cron} does not parse, or never fires
   */
  static TimerSchedule cron(String cron, ZoneId zone) {
    Objects.requireNonNull(cron, "cron must not be null");
    Objects.requireNonNull(zone, "zone must not be null");
    String expr = cron.trim();
    try {
      PARSED.getUnchecked(expr);
    } catch (UncheckedExecutionException e) {
      throw new IllegalArgumentException(
          "not a cron expression (minute hour day-of-month month day-of-week): \""
              + cron
              + "\": "
              + e.getCause().getMessage(),
          e.getCause());
    }
    return new Cron(expr, zone);
  }

  /**
   * The first due time of a schedule set now.
   *
   * @param nowMicros the clock's time now, in microseconds since the epoch
   * @throws IllegalArgumentException if it has none
   */
  default long first(long nowMicros) {
    long first = next(nowMicros, nowMicros);
    if (first == Long.MAX_VALUE) {
      throw new IllegalArgumentException("the schedule never fires after now: " + describe());
    }
    return first;
  }

  /**
   * The due time after a firing due at {@code dueMicros} at the clock's time {@code nowMicros}: the
   * first occurrence after both (the misfire policy above).
   *
   * @return microseconds since the epoch, or {@link Long#MAX_VALUE} if there is none
   */
  long next(long dueMicros, long nowMicros);

  /** The stored form. */
  byte[] encode();

  /**
   * The schedule as a listing shows it: {@code every PT1S} or {@code cron 0 3 * * * Europe/Berlin}.
   */
  String describe();

  /**
   * The schedule from its stored form.
   *
   * @throws IllegalArgumentException if it is not one
   */
  static TimerSchedule decode(byte[] stored) {
    Tuple t = Tuple.fromBytes(stored);
    String kind = t.getString(0);
    if (Every.TAG.equals(kind)) {
      return new Every(t.getLong(1));
    }
    if (Cron.TAG.equals(kind)) {
      return new Cron(t.getString(1), ZoneId.of(t.getString(2)));
    }
    throw new IllegalArgumentException("unknown timer schedule: " + kind);
  }

  /** Every {@code micros} microseconds, keeping the phase of the first due time. */
  record Every(long micros) implements TimerSchedule {
    static final String TAG = "every";

    @Override
    public long next(long dueMicros, long nowMicros) {
      long late = nowMicros - dueMicros;
      long periods = late < 0 ? 1 : late / micros + 1; // the first occurrence after now
      try {
        return Math.addExact(dueMicros, Math.multiplyExact(periods, micros));
      } catch (ArithmeticException e) {
        return Long.MAX_VALUE;
      }
    }

    @Override
    public byte[] encode() {
      return Tuple.from(TAG, micros).pack();
    }

    @Override
    public String describe() {
      return "every " + Duration.of(micros, ChronoUnit.MICROS);
    }
  }

  /** At the times of a five-field cron expression, in a zone. */
  record Cron(String expr, ZoneId zone) implements TimerSchedule {
    static final String TAG = "cron";

    @Override
    public long next(long dueMicros, long nowMicros) {
      long from = Math.max(dueMicros, nowMicros);
      Optional<ZonedDateTime> next;
      try {
        Instant at = Instant.EPOCH.plus(from, ChronoUnit.MICROS);
        next = PARSED.getUnchecked(expr).nextExecution(at.atZone(zone));
      } catch (DateTimeException | ArithmeticException e) {
        return Long.MAX_VALUE;
      }
      return next.isEmpty() ? Long.MAX_VALUE : micros(next.get().toInstant());
    }

    @Override
    public byte[] encode() {
      return Tuple.from(TAG, expr, zone.getId()).pack();
    }

    @Override
    public String describe() {
      return "cron " + expr + " " + zone.getId();
    }
  }

  /** Microseconds since the epoch. */
  static long micros(Instant t) {
    try {
      return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1000);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("due time out of range: " + t, e);
    }
  }
}

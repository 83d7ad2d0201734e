package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.ServerControl;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Recurring timers ({@code castEvery}, {@code castCron}, from a {@code ServerRef} and from a
 * callback) on a manual clock: each occurrence fires once, a late one once, a cancel stops it, and
 * cron follows the documented daylight-saving rules. Runs on every backend (the behaviour suite).
 */
class RecurringTimerTest extends TimerTestBase {

  static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");

  /** Counts ticks and notes the clock's time at the last one; starts and stops its own timer. */
  static final class Ticker implements DGenServer<Ticker.State, Ticker.Msg> {
    record State(long ticks, long lastAtMicros, @Nullable String timer, List<String> marks) {}

    sealed interface Msg {}

    record Tick() implements Msg {}

    /** Starts a recurring timer from the callback: every {@code period}, or by {@code cron}. */
    record Start(@Nullable Duration period, @Nullable String cron) implements Msg {}

    /** Cancels the timer {@link Start} set, in the callback's transaction. */
    record Stop() implements Msg {}

    record Mark(String name) implements Msg {}

    record Get() implements Msg, Call<State> {}

    private final ManualTestClock clock;

    static long micros(Instant t) {
      return t.getEpochSecond() * 1_000_000L + t.getNano() / 1000;
    }

    Ticker(ManualTestClock clock) {
      this.clock = clock;
    }

    @Override
    public InitResult<State> init(@Nullable Object arg) {
      return InitResult.ok(
          Tuple.from("ticker", String.valueOf(arg)), new State(0, 0, null, List.of()));
    }

    @Override
    public Result<State> handleCallTx(TxContext tx, Msg request, From from, State s) {
      return Result.reply(s, s);
    }

    @Override
    public Result<State> handleCastTx(TxContext tx, Msg m, State s) {
      if (m instanceof Tick) {
        return Result.noReply(
            new State(s.ticks() + 1, micros(clock.instant()), s.timer(), s.marks()));
      }
      if (m instanceof Start st) {
        String id =
            st.period() != null
                ? tx.castEvery(new Tick(), st.period())
                : tx.castCron(new Tick(), st.cron(), BERLIN);
        return Result.noReply(new State(s.ticks(), s.lastAtMicros(), id, s.marks()));
      }
      if (m instanceof Stop) {
        boolean cancelled = s.timer() != null && tx.cancelTimer(s.timer());
        return Result.noReply(
            new State(s.ticks(), s.lastAtMicros(), cancelled ? null : "not cancelled", s.marks()));
      }
      if (m instanceof Mark mark) {
        List<String> marks = new ArrayList<>(s.marks());
        marks.add(mark.name());
        return Result.noReply(new State(s.ticks(), s.lastAtMicros(), s.timer(), marks));
      }
      return Result.noReply(s);
    }
  }

  ServerRef<Ticker.Msg> ticker(DGen in, String name) {
    Tenant t = in == dgen ? tenant : in.tenant(tenant.path().toArray(String[]::new));
    return in.start(new Ticker(clock), name, StartOptions.builder(t).build());
  }

  static Ticker.State stateOf(ServerRef<Ticker.Msg> ref) {
    return ref.priorityCall(new Ticker.Get());
  }

  /** Waits until {@code ref} has ticked {@code n} times. */
  static void awaitTicks(ServerRef<Ticker.Msg> ref, long n) {
    await()
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(2))
        .atMost(BULK_WAIT)
        .until(() -> stateOf(ref).ticks() >= n);
  }

  /**
   * A cast queued after everything queued so far, applied: every tick that was queued before it has
   * been applied too (nothing else is queued in these tests but ticks and marks).
   */
  static void barrier(ServerRef<Ticker.Msg> ref, String name) {
    ref.cast(new Ticker.Mark(name));
    await()
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(2))
        .atMost(BULK_WAIT)
        .until(() -> stateOf(ref).marks().contains(name));
  }

  @Test
  void castEvery_firesOncePerPeriod_underOneId_untilCancelled() {
    ServerRef<Ticker.Msg> ref = ticker(dgen, "every");
    String id = ref.castEvery(new Ticker.Tick(), Duration.ofMinutes(1));
    advance(Duration.ofSeconds(59));
    barrier(ref, "before");
    assertThat(stateOf(ref).ticks()).isZero();
    for (int i = 1; i <= 5; i++) {
      advance(i == 1 ? Duration.ofSeconds(1) : Duration.ofMinutes(1));
      awaitTicks(ref, i);
      barrier(ref, "tick" + i);
      assertThat(stateOf(ref).ticks()).isEqualTo(i);
      List<ServerAdmin.PendingTimer> timers = admin(ref).timers();
      assertThat(timers).extracting(ServerAdmin.PendingTimer::id).containsExactly(id);
      assertThat(timers.get(0).due()).isEqualTo(T0.plus(Duration.ofMinutes(i + 1)));
      assertThat(timers.get(0).schedule()).isEqualTo("every PT1M");
    }
    assertThat(ref.cancelTimer(id)).isTrue();
    assertThat(ref.cancelTimer(id)).isFalse();
    advance(Duration.ofHours(1));
    barrier(ref, "after");
    assertThat(stateOf(ref).ticks()).isEqualTo(5);
    assertThat(pendingTimers()).isZero();
  }

  /**
   * How many one-second firings {@link #everySecond_eachFiringAppliedOnceAtItsTick} takes: an hour
   * on the memory backend; the behaviour suite runs a minute on the others.
   */
  int secondsToRun() {
    return 3600;
  }

  /**
   * The target of issue 41: a timer every second for an hour, the clock moved a second at a time:
   * each firing applied once, at the tick it came due (never late by more than the tick).
   */
  @Test
  void everySecond_eachFiringAppliedOnceAtItsTick() {
    ServerRef<Ticker.Msg> ref = ticker(dgen, "hour");
    String id = ref.castEvery(new Ticker.Tick(), Duration.ofSeconds(1));
    int seconds = secondsToRun();
    for (int i = 1; i <= seconds; i++) {
      advance(Duration.ofSeconds(1));
      awaitTicks(ref, i);
      Ticker.State s = stateOf(ref);
      assertThat(s.ticks()).as("ticks at second %d", i).isEqualTo(i);
      assertThat(s.lastAtMicros()).isEqualTo(Ticker.micros(clock.instant()));
    }
    barrier(ref, "end");
    assertThat(stateOf(ref).ticks()).isEqualTo(seconds);
    assertThat(admin(ref).timers().get(0).due())
        .isEqualTo(T0.plus(Duration.ofSeconds(seconds + 1)));
    assertThat(ref.cancelTimer(id)).isTrue();
  }

  @Test
  void aTimerLateBySeveralPeriodsFiresOnce_andKeepsItsPhase() {
    ServerRef<Ticker.Msg> ref = ticker(dgen, "late");
    ref.castEvery(new Ticker.Tick(), Duration.ofMinutes(1));
    advance(Duration.ofMinutes(10).plusSeconds(30)); // ten occurrences passed while "down"
    awaitTicks(ref, 1);
    barrier(ref, "b");
    assertThat(stateOf(ref).ticks()).isEqualTo(1);
    assertThat(admin(ref).timers().get(0).due()).isEqualTo(T0.plus(Duration.ofMinutes(11)));
    advance(Duration.ofSeconds(30));
    awaitTicks(ref, 2);
  }

  @Test
  void aCallbackStartsAndStopsATimerAtomicallyWithItsState() {
    ServerRef<Ticker.Msg> ref = ticker(dgen, "callback");
    ref.cast(new Ticker.Start(Duration.ofSeconds(10), null));
    barrier(ref, "started");
    String id = stateOf(ref).timer();
    assertThat(admin(ref).timers()).extracting(ServerAdmin.PendingTimer::id).containsExactly(id);
    for (int i = 1; i <= 3; i++) {
      advance(Duration.ofSeconds(10));
      awaitTicks(ref, i);
    }
    ref.cast(new Ticker.Stop());
    barrier(ref, "stopped");
    assertThat(stateOf(ref).timer()).isNull(); // the cancel found it pending
    advance(Duration.ofMinutes(5));
    barrier(ref, "later");
    assertThat(stateOf(ref).ticks()).isEqualTo(3);
    assertThat(pendingTimers()).isZero();
  }

  @Test
  void everyOccurrenceFiresOnceAcrossTwoRuntimesAndARestart() {
    DGen other = another();
    ServerRef<Ticker.Msg> ref = ticker(dgen, "shared");
    ticker(other, "shared"); // the other runtime fires the same bucket
    ref.castEvery(new Ticker.Tick(), Duration.ofSeconds(1));
    for (int i = 1; i <= 30; i++) {
      if (i == 10) {
        other.close();
        extra.remove(other);
      }
      if (i == 20) {
        other = another();
        ticker(other, "shared");
      }
      advance(Duration.ofSeconds(1), i >= 10 && i < 20 ? new DGen[0] : new DGen[] {other});
      awaitTicks(ref, i);
    }
    barrier(ref, "end");
    assertThat(stateOf(ref).ticks()).isEqualTo(30);
  }

  /**
   * Europe/Berlin, spring 2026 (29 March, 02:00 → 03:00) and autumn (25 October, 03:00 → 02:00): a
   * daily "30 2" does not fire on the day 02:30 does not exist, and fires once on the day it occurs
   * twice; an hourly "0 *" fires on every real hour of both days.
   */
  @Test
  void castCron_acrossDaylightSavingChanges_firesWhatTheDocsPromise() {
    ManualTestClock c = clock;
    c.advance(Duration.between(T0, Instant.parse("2026-03-27T12:00:00Z")));
    ServerRef<Ticker.Msg> ref = ticker(dgen, "cron");
    String daily = ref.castCron(new Ticker.Tick(), "30 2 * * *", BERLIN);
    assertThat(dues(ref, daily, 3))
        .containsExactly(
            Instant.parse("2026-03-28T01:30:00Z"), // 02:30 CET
            // 29 March: 02:30 does not exist
            Instant.parse("2026-03-30T00:30:00Z"), // 02:30 CEST
            Instant.parse("2026-03-31T00:30:00Z"));
    assertThat(ref.cancelTimer(daily)).isTrue();

    advanceTo(Instant.parse("2026-10-24T12:00:00Z"));
    daily = ref.castCron(new Ticker.Tick(), "30 2 * * *", BERLIN);
    assertThat(dues(ref, daily, 2))
        .containsExactly(
            Instant.parse("2026-10-25T00:30:00Z"), // 02:30 CEST, the first of the two
            Instant.parse("2026-10-26T01:30:00Z")); // 02:30 CET
    assertThat(ref.cancelTimer(daily)).isTrue();

    advanceTo(Instant.parse("2026-10-24T21:30:00Z")); // 23:30 CEST, 24 October
    String hourly = ref.castCron(new Ticker.Tick(), "0 * * * *", BERLIN);
    List<Instant> hours = dues(ref, hourly, 26);
    assertThat(hours.get(0)).isEqualTo(Instant.parse("2026-10-24T22:00:00Z")); // 00:00 local
    assertThat(hours.get(25)).isEqualTo(Instant.parse("2026-10-25T23:00:00Z")); // 00:00, 26th
    for (int i = 1; i < hours.size(); i++) {
      assertThat(Duration.between(hours.get(i - 1), hours.get(i))).isEqualTo(Duration.ofHours(1));
    }
    assertThat(ref.cancelTimer(hourly)).isTrue();
    assertThat(pendingTimers()).isZero();
  }

  /** Moves the clock forward to {@code t}. */
  void advanceTo(Instant t) {
    advance(Duration.between(clock.instant(), t));
  }

  /**
   * The next {@code n} due times of timer {@code id}, as the admin lists them, each reached by
   * moving the clock there and waiting for its tick.
   */
  List<Instant> dues(ServerRef<Ticker.Msg> ref, String id, int n) {
    List<Instant> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ServerAdmin.PendingTimer t =
          admin(ref).timers().stream().filter(p -> p.id().equals(id)).findFirst().orElseThrow();
      out.add(t.due());
      long before = stateOf(ref).ticks();
      advanceTo(t.due());
      awaitTicks(ref, before + 1);
      assertThat(stateOf(ref).lastAtMicros()).isEqualTo(Ticker.micros(t.due()));
    }
    return out;
  }

  @Test
  void badSchedulesAreRefusedBeforeAnythingIsWritten() {
    ServerRef<Ticker.Msg> ref = ticker(dgen, "bad");
    assertThatThrownBy(() -> ref.castEvery(new Ticker.Tick(), Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("period must be positive");
    assertThatThrownBy(() -> ref.castEvery(new Ticker.Tick(), Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ref.castEveryAsync(new Ticker.Tick(), Duration.ofNanos(999)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ref.castCron(new Ticker.Tick(), "every minute", BERLIN))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a cron expression");
    assertThatThrownBy(() -> ref.castCron(new Ticker.Tick(), "61 * * * *", BERLIN))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ref.castCron(new Ticker.Tick(), "0 0 30 2 *", BERLIN))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("never fires");
    @SuppressWarnings({"unchecked", "rawtypes"})
    ServerRef<Object> raw = (ServerRef) ref;
    assertThatThrownBy(() -> raw.castEvery("not a message", Duration.ofMinutes(1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(pendingTimers()).isZero();
  }

  @Test
  void theAdminListsTimersInPages_withTheirSchedules() {
    ServerRef<Ticker.Msg> ref = ticker(dgen, "paged");
    java.util.Set<String> ids = new java.util.HashSet<>();
    ids.add(ref.castEvery(new Ticker.Tick(), Duration.ofMinutes(1)));
    ids.add(ref.castCron(new Ticker.Tick(), "0 9 * * MON-FRI", BERLIN));
    for (int i = 0; i < 3; i++) {
      ids.add(ref.castAfter(new Ticker.Mark("m" + i), Duration.ofHours(i + 1)));
    }
    ServerAdmin admin = admin(ref);
    List<ServerAdmin.PendingTimer> seen = new ArrayList<>();
    String after = null;
    int pages = 0;
    do {
      ServerAdmin.TimerPage page = admin.timers(after, 2);
      assertThat(page.timers()).hasSizeLessThanOrEqualTo(2).isNotEmpty();
      assertThat(page.timers())
          .isSortedAccordingTo(java.util.Comparator.comparing(ServerAdmin.PendingTimer::due));
      seen.addAll(page.timers());
      after = page.next();
      pages++;
    } while (after != null);
    assertThat(pages).isEqualTo(3);
    assertThat(seen)
        .extracting(ServerAdmin.PendingTimer::id)
        .containsExactlyInAnyOrderElementsOf(ids);
    assertThat(seen)
        .extracting(ServerAdmin.PendingTimer::schedule)
        .containsExactlyInAnyOrder(
            "every PT1M", "cron 0 9 * * MON-FRI Europe/Berlin", null, null, null);
    assertThat(seen)
        .filteredOn(t -> t.schedule() != null)
        .allSatisfy(t -> assertThat(t.item().type()).endsWith("Ticker$Tick"));
    ServerAdmin.TimerPage all = admin.timers(null, 5);
    assertThat(all.timers()).hasSize(5);
    assertThat(all.next()).isNull();
    assertThatThrownBy(() -> admin.timers(null, 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> admin.timers("nope", 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a timer id");
    // a cancel of an unknown timer, or of one already cancelled: false
    String unknown = java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(new byte[16]);
    assertThat(admin.cancelTimer(unknown)).isFalse();
    String any = seen.get(0).id();
    assertThat(admin.cancelTimer(any)).isTrue();
    assertThat(admin.cancelTimer(any)).isFalse();
  }

  @Test
  void killDeletesARecurringTimer() {
    ServerRef<Ticker.Msg> ref = ticker(dgen, "killed");
    ref.castEvery(new Ticker.Tick(), Duration.ofMinutes(1));
    advance(Duration.ofMinutes(1));
    awaitTicks(ref, 1);
    ServerControl.of(ref).kill("test");
    assertThat(pendingTimers()).isZero();
  }
}

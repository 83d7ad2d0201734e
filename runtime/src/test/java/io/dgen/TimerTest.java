package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.ServerControl;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Durable timers ({@code castAfter}, {@code castAt}, {@code cancelTimer}, {@code Outbox.castAfter},
 * {@code TxContext.castAfter}) on a manual clock: the test advances it and tells the runtimes, so
 * no test sleeps through a delay. "Nothing fired" is shown with a barrier: a timer due now is fired
 * by a cycle that took every timer due by then, in due order, so once the barrier's message is
 * applied, any earlier due timer has been too.
 */
class TimerTest extends TimerTestBase {

  /** Records what arrives, checking each server's due order; ticks by scheduling its next tick. */
  static final class Recorder implements DGenServer<Recorder.State, Recorder.Msg> {
    record State(long count, long lastDue, long outOfOrder, List<String> names, int ticks) {}

    sealed interface Msg {}

    /** A timer's message: its due time (distinct per server) and a name. */
    record Due(long due, String name) implements Msg {}

    /** One tick; schedules the next one a minute later until {@code last}. */
    record Tick(int last) implements Msg {}

    /** Schedules a tick, then (if asked) cancels it, in the callback's transaction. */
    record ScheduleTick(boolean cancel) implements Msg {}

    /** Replies the state. */
    record Get() implements Msg, Call<State> {}

    @Override
    public InitResult<State> init(@Nullable Object arg) {
      Tuple tuid = Tuple.from("recorder", String.valueOf(arg));
      return InitResult.ok(tuid, new State(0, Long.MIN_VALUE, 0, List.of(), 0));
    }

    @Override
    public Result<State> handleCallTx(TxContext tx, Msg request, From from, State s) {
      return Result.reply(s, s);
    }

    @Override
    public Result<State> handleCastTx(TxContext tx, Msg m, State s) {
      if (m instanceof Due d) {
        List<String> names = new ArrayList<>(s.names());
        names.add(d.name());
        long ooo = s.outOfOrder() + (d.due() <= s.lastDue() ? 1 : 0);
        return Result.noReply(
            new State(s.count() + 1, Math.max(d.due(), s.lastDue()), ooo, names, s.ticks()));
      }
      if (m instanceof Tick t) {
        if (s.ticks() + 1 < t.last()) {
          tx.castAfter(t, Duration.ofMinutes(1));
        }
        return Result.noReply(
            new State(s.count(), s.lastDue(), s.outOfOrder(), s.names(), s.ticks() + 1));
      }
      if (m instanceof ScheduleTick st) {
        String id = tx.castAfter(new Tick(1), Duration.ofMinutes(1));
        if (st.cancel()) {
          assertThat(tx.cancelTimer(id)).isTrue();
        }
        return Result.noReply(s);
      }
      return Result.noReply(s);
    }
  }

  ServerRef<Recorder.Msg> recorder(DGen in, String name) {
    Tenant t = in == dgen ? tenant : in.tenant(tenant.path().toArray(String[]::new));
    return in.start(new Recorder(), name, StartOptions.builder(t).build());
  }

  static Recorder.State stateOf(ServerRef<Recorder.Msg> ref) {
    return ref.priorityCall(new Recorder.Get());
  }

  /** Fires a timer due now and waits until it is applied: every earlier due timer fired first. */
  static void barrier(ServerRef<Recorder.Msg> ref, String name) {
    ref.castAfter(new Recorder.Due(Long.MAX_VALUE, name), Duration.ZERO);
    await().atMost(BULK_WAIT).until(() -> stateOf(ref).names().contains(name));
  }

  @Test
  void aTimerFiresWhenDueAndNotBefore() {
    ServerRef<Recorder.Msg> ref = recorder(dgen, "a");
    ref.castAfter(new Recorder.Due(1, "ten-minutes"), Duration.ofMinutes(10));
    ref.castAt(new Recorder.Due(2, "at-twenty"), T0.plus(Duration.ofMinutes(20)));
    assertThat(pendingTimers()).isEqualTo(2);

    advance(Duration.ofMinutes(9));
    barrier(ref, "b1");
    assertThat(stateOf(ref).names()).containsExactly("b1");

    advance(Duration.ofMinutes(1));
    await().atMost(BULK_WAIT).until(() -> stateOf(ref).names().contains("ten-minutes"));
    advance(Duration.ofMinutes(10));
    await().atMost(BULK_WAIT).until(() -> stateOf(ref).count() == 3);
    assertThat(stateOf(ref).names()).containsExactly("b1", "ten-minutes", "at-twenty");
    assertThat(pendingTimers()).isZero();
  }

  @Test
  void cancelBeforeDueNeverFiresAndAfterFireIsFalse() {
    ServerRef<Recorder.Msg> ref = recorder(dgen, "c");
    String cancelled = ref.castAfter(new Recorder.Due(1, "cancelled"), Duration.ofMinutes(5));
    String fired = ref.castAfter(new Recorder.Due(2, "fired"), Duration.ofMinutes(5));
    assertThat(ref.cancelTimer(cancelled)).isTrue();
    assertThat(ref.cancelTimer(cancelled)).isFalse();

    advance(Duration.ofHours(1));
    await().atMost(BULK_WAIT).until(() -> stateOf(ref).names().contains("fired"));
    barrier(ref, "b");
    assertThat(stateOf(ref).names()).containsExactly("fired", "b");
    assertThat(ref.cancelTimer(fired)).isFalse();
    assertThat(pendingTimers()).isZero();
  }

  @Test
  void aTimerScheduledInAnAbortedTransactionNeverExists() {
    ServerRef<Recorder.Msg> ref = recorder(dgen, "abort");
    Outbox<Recorder.Msg> out = ref.outbox();
    String[] id = new String[1];
    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      id[0] = out.castAfter(tx, new Recorder.Due(1, "aborted"), Duration.ZERO);
                      throw new IllegalStateException("abort");
                    }))
        .hasMessageContaining("abort");
    assertThat(pendingTimers()).isZero();
    assertThat(ref.cancelTimer(id[0])).isFalse();
    barrier(ref, "b");
    assertThat(stateOf(ref).names()).containsExactly("b");
  }

  @Test
  void anOutboxTimerIsScheduledWithTheTransaction() {
    ServerRef<Recorder.Msg> ref = recorder(dgen, "outbox");
    String id =
        backend.run(
            tx -> ref.outbox().castAfter(tx, new Recorder.Due(1, "o"), Duration.ofMinutes(1)));
    assertThat(pendingTimers()).isEqualTo(1);
    advance(Duration.ofMinutes(1));
    await().atMost(BULK_WAIT).until(() -> stateOf(ref).names().contains("o"));
    assertThat(ref.cancelTimer(id)).isFalse();
  }

  @Test
  void anOutboxTimerReRunAfterAnAppliedUnknownResultIsScheduledOnce() {
    ServerRef<Recorder.Msg> ref = recorder(dgen, "outbox1021");
    faults().commitUnknownResult(1, true);
    List<String> ids = new ArrayList<>();
    backend.run(
        tx -> {
          ids.add(ref.outbox().castAfter(tx, new Recorder.Due(1, "o"), Duration.ofMinutes(1)));
          return null;
        });
    assertThat(ids).hasSize(2);
    assertThat(ids.get(1)).isEqualTo(ids.get(0));
    assertThat(pendingTimers()).isEqualTo(1);
  }

  @Test
  void badInput() {
    ServerRef<Recorder.Msg> ref = recorder(dgen, "bad");
    // a negative delay fires now, without the clock moving
    ref.castAfter(new Recorder.Due(1, "negative"), Duration.ofMinutes(-5));
    await().atMost(BULK_WAIT).until(() -> stateOf(ref).names().contains("negative"));

    @SuppressWarnings({"unchecked", "rawtypes"})
    ServerRef<Object> raw = (ServerRef) ref;
    assertThatThrownBy(() -> raw.castAfter("not a message", Duration.ofMinutes(1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> raw.castAt("not a message", T0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () -> backend.run(tx -> raw.outbox().castAfter(tx, "nope", Duration.ofMinutes(1))))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ref.castAt(new Recorder.Due(1, "x"), Instant.MAX))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ref.cancelTimer("not-an-id"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a timer id");
    assertThat(pendingTimers()).isZero();
  }

  @Test
  void cancellingFromAnotherRuntimeWorks() {
    ServerRef<Recorder.Msg> ref = recorder(dgen, "x");
    String id = ref.castAfter(new Recorder.Due(1, "never"), Duration.ofMinutes(5));
    DGen other = another();
    ServerRef<Recorder.Msg> there = recorder(other, "x");
    assertThat(there.cancelTimer(id)).isTrue();
    assertThat(ref.cancelTimer(id)).isFalse();
    advance(Duration.ofHours(1), other);
    barrier(ref, "b");
    assertThat(stateOf(ref).names()).containsExactly("b");
  }

  @Test
  void aTimerOfAnotherServerIsNotCancelledThroughThisOne() {
    ServerRef<Recorder.Msg> a = recorder(dgen, "one");
    ServerRef<Recorder.Msg> b = recorder(dgen, "two");
    String id = a.castAfter(new Recorder.Due(1, "a"), Duration.ofMinutes(5));
    assertThat(b.cancelTimer(id)).isFalse();
    assertThat(a.cancelTimer(id)).isTrue();
  }

  @Test
  void killDeletesTheServersPendingTimers() {
    ServerRef<Recorder.Msg> doomed = recorder(dgen, "doomed");
    ServerRef<Recorder.Msg> kept = recorder(dgen, "kept");
    for (int i = 0; i < 5; i++) {
      doomed.castAfter(new Recorder.Due(i, "d" + i), Duration.ofMinutes(i + 1));
    }
    kept.castAfter(new Recorder.Due(1, "k"), Duration.ofMinutes(1));
    assertThat(pendingTimers()).isEqualTo(6);
    ServerControl.of(doomed).kill("test");
    assertThat(pendingTimers()).isEqualTo(1);
    advance(Duration.ofHours(1));
    await().atMost(BULK_WAIT).until(() -> stateOf(kept).names().contains("k"));
    // the timers were due before the kept one: none came back to life under the killed server
    var root = tenant.subspace().subspace(doomed.tuid());
    List<io.dgen.backend.KeyValue> rows =
        backend.run(tx -> tx.getRange(root.range().begin, root.range().end));
    assertThat(rows).isEmpty();
  }

  @Test
  void theAdminListsPendingTimersSoonestFirst_andItsKillDeletesThem() {
    ServerRef<Recorder.Msg> doomed = recorder(dgen, "admin-doomed");
    String later = doomed.castAfter(new Recorder.Due(2, "later"), Duration.ofMinutes(20));
    String sooner = doomed.castAfter(new Recorder.Due(1, "sooner"), Duration.ofMinutes(10));
    ServerAdmin admin =
        new DGenAdmin(backend)
            .tenant(tenant.path().toArray(String[]::new))
            .orElseThrow()
            .server(doomed.tuid())
            .orElseThrow();
    List<ServerAdmin.PendingTimer> timers = admin.timers();
    assertThat(timers).extracting(ServerAdmin.PendingTimer::id).containsExactly(sooner, later);
    assertThat(timers.get(0).due()).isEqualTo(clock.instant().plus(Duration.ofMinutes(10)));
    assertThat(timers.get(0).item().message().get("name").asString()).isEqualTo("sooner");

    admin.kill(); // the CLI's kill: no ServerRef, same effect on timers
    assertThat(pendingTimers()).isZero();
    assertThat(admin.timers()).isEmpty();
  }

  @Test
  void aCallbackSchedulesAndCancelsAtomicallyWithItsStateChange() {
    ServerRef<Recorder.Msg> ref = recorder(dgen, "cb");
    ref.cast(new Recorder.ScheduleTick(true));
    barrier(ref, "b0");
    assertThat(pendingTimers()).isZero();
    ref.cast(new Recorder.ScheduleTick(false));
    barrier(ref, "b1");
    assertThat(pendingTimers()).isEqualTo(1);
    advance(Duration.ofMinutes(1));
    await().atMost(BULK_WAIT).until(() -> stateOf(ref).ticks() == 1);
  }

  @Test
  void aSelfTickingServerTicksSixtyTimesInAnHourAcrossARestart() {
    DGen first = another();
    List<ServerRef<Recorder.Msg>> ref = new ArrayList<>(List.of(recorder(first, "ticker")));
    ref.get(0).cast(new Recorder.Tick(60));
    for (int minute = 1; minute < 60; minute++) {
      int expected = minute;
      await().atMost(BULK_WAIT).until(() -> stateOf(ref.get(0)).ticks() >= expected);
      if (minute == 30) {
        first.close();
        extra.remove(first);
        first = another();
        ref.set(0, recorder(first, "ticker"));
        assertThat(stateOf(ref.get(0)).ticks()).isEqualTo(30);
      }
      clock.advance(Duration.ofMinutes(1));
      first.clockAdvanced();
    }
    ServerRef<Recorder.Msg> last = recorder(dgen, "ticker");
    await().atMost(BULK_WAIT).until(() -> stateOf(last).ticks() == 60);
    assertThat(pendingTimers()).isZero();
  }

  @Test
  void tenThousandTimersFireOnceEachInDueOrderAcrossTwoRuntimesAndARestart() {
    int servers = 10;
    int timers = 10_000;
    DGen other = another();
    List<ServerRef<Recorder.Msg>> here = new ArrayList<>();
    List<ServerRef<Recorder.Msg>> there = new ArrayList<>();
    for (int s = 0; s < servers; s++) {
      here.add(recorder(dgen, "s" + s));
      there.add(recorder(other, "s" + s));
    }
    Random random = new Random(14);
    long hourMicros = Duration.ofHours(1).toNanos() / 1000;
    List<long[]> dues = new ArrayList<>();
    java.util.Set<Long> used = new java.util.HashSet<>();
    while (dues.size() < timers) {
      long due = 1 + (long) (random.nextDouble() * (hourMicros - 1));
      if (used.add(due)) { // distinct, so a repeat would show as out of order
        dues.add(new long[] {due, random.nextInt(servers)});
      }
    }
    for (int from = 0; from < timers; from += 100) {
      List<long[]> chunk = dues.subList(from, from + 100);
      backend.run(
          tx -> {
            for (long[] d : chunk) {
              ServerRef<Recorder.Msg> ref = here.get((int) d[1]);
              ref.outbox().castAfter(tx, new Recorder.Due(d[0], ""), Duration.ofNanos(d[0] * 1000));
            }
            return null;
          });
    }
    assertThat(pendingTimers()).isEqualTo(timers);
    for (int minute = 1; minute <= 60; minute++) {
      if (minute == 30) {
        other.close();
        extra.remove(other);
      }
      if (minute == 35) {
        other = another();
        for (int s = 0; s < servers; s++) {
          recorder(other, "s" + s);
        }
      }
      advance(
          Duration.ofMinutes(1), minute >= 30 && minute < 35 ? new DGen[0] : new DGen[] {other});
    }
    await()
        .atMost(BULK_WAIT)
        .until(() -> here.stream().mapToLong(r -> stateOf(r).count()).sum() >= timers);
    long total = 0;
    for (ServerRef<Recorder.Msg> r : here) {
      Recorder.State s = stateOf(r);
      assertThat(s.outOfOrder()).isZero();
      total += s.count();
    }
    assertThat(total).isEqualTo(timers);
    assertThat(pendingTimers()).isZero();
  }

  @Test
  void aCastAfterWhoseCommitIsUnknownIsStoredOnce() {
    ServerRef<Recorder.Msg> ref = recorder(dgen, "u1");
    faults().commitUnknownResult(1, true);
    String id = ref.castAfter(new Recorder.Due(1, "once"), Duration.ofMinutes(1));
    assertThat(pendingTimers()).isEqualTo(1);
    faults().commitUnknownResult(1, true);
    assertThat(ref.cancelTimer(id)).as("the replayed cancel reports its first attempt").isTrue();
    assertThat(pendingTimers()).isZero();
  }

  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void anUnknownResultWhileFiringFiresOnce(boolean applied) {
    ServerRef<Recorder.Msg> ref = recorder(dgen, "u");
    for (int i = 0; i < 50; i++) {
      ref.castAfter(new Recorder.Due(i, "t" + i), Duration.ofSeconds(i + 1));
    }
    faults().commitUnknownResult(3, applied);
    advance(Duration.ofMinutes(1));
    await().atMost(BULK_WAIT).until(() -> stateOf(ref).count() >= 50);
    barrier(ref, "b");
    Recorder.State s = stateOf(ref);
    assertThat(s.count()).isEqualTo(51);
    assertThat(s.outOfOrder()).isZero();
  }

  @Test
  void onTheSystemClockATimerFiresWhenDueWithoutBeingTold() {
    DGen real = DGen.builder(backend).build();
    extra.add(real);
    ServerRef<Recorder.Msg> ref = recorder(real, "real");
    long start = System.nanoTime();
    ref.castAfter(new Recorder.Due(1, "soon"), Duration.ofMillis(300));
    await()
        .atMost(BULK_WAIT)
        .pollInterval(Duration.ofMillis(5))
        .until(() -> stateOf(ref).names().contains("soon"));
    long tookMillis = (System.nanoTime() - start) / 1_000_000;
    assertThat(tookMillis).isGreaterThanOrEqualTo(300);
  }
}

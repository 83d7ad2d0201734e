package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Add;
import io.dgen.TestServer.AddAndGet;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A call's own timeout bounds its whole wait, whatever the cluster does: once its push committed, a
 * cluster that stops answering (every transaction waits far longer for its read version than the
 * call may) must not keep {@code call} blocked or {@code callAsync} pending; nor may a take of the
 * reply slot that hangs keep the deadline from passing. The same holds for {@code awaitReply}, for
 * a keyed call's repeat, and for a push that does not complete within the call's timeout.
 */
class CallTimeoutTest extends RuntimeTestBase {

  /** Long enough that the cluster stops answering well before the deadline, on a slow machine. */
  private static final Duration TIMEOUT = Duration.ofMillis(1_500);

  /** How long the unreachable cluster makes every transaction wait: far beyond the timeout. */
  private static final Duration UNREACHABLE = Duration.ofSeconds(4);

  /** Well under {@link #UNREACHABLE}: the call gave up by its timeout, not by the cluster's. */
  private static final Duration GAVE_UP_WITHIN = Duration.ofMillis(2_500);

  @AfterEach
  void reachableAgain() {
    faults().reset();
  }

  private void unreachable() {
    faults().readVersionLatency(UNREACHABLE);
  }

  private static void assertTimedOut(CompletableFuture<?> call, long startNanos) {
    assertThat(call)
        .failsWithin(GAVE_UP_WITHIN.toMillis(), TimeUnit.MILLISECONDS)
        .withThrowableOfType(ExecutionException.class)
        .havingCause()
        .isInstanceOf(CallTimeoutException.class);
    assertThat(Duration.ofNanos(System.nanoTime() - startNanos)).isLessThan(GAVE_UP_WITHIN);
  }

  @Test
  void aQueuedCallWhoseClusterStopsAnsweringAfterItsPush_failsByItsOwnTimeout() {
    ServerRef<Msg> ref = start(b -> b.consume(false)); // nobody replies: the call is queued
    long start = System.nanoTime();
    CompletableFuture<Long> call = ref.callAsync(new AddAndGet(1), TIMEOUT);
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> ServerControl.of(ref).queueLength() == 1); // pushed
    unreachable();

    assertTimedOut(call, start);
  }

  @Test
  void aBlockingCallWhoseClusterStopsAnsweringAfterItsPush_throwsByItsOwnTimeout()
      throws Exception {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    long start = System.nanoTime();
    CompletableFuture<Long> call =
        CompletableFuture.supplyAsync(() -> ref.call(new AddAndGet(1), TIMEOUT));
    await().atMost(Duration.ofSeconds(10)).until(() -> ServerControl.of(ref).queueLength() == 1);
    unreachable();

    assertTimedOut(call, start);
  }

  @Test
  void awaitReplyOnAnUnreachableCluster_failsByItsOwnTimeout() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    String callId = ref.submit(new Add(1));
    unreachable();

    long start = System.nanoTime();
    assertTimedOut(ref.awaitReplyAsync(callId, TIMEOUT), start);
  }

  @Test
  void aKeyedCallsRepeatOnAnUnreachableCluster_throwsByItsOwnTimeout() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    assertThatThrownBy(() -> ref.call(new AddAndGet(1), "order-1", TIMEOUT))
        .isInstanceOf(CallTimeoutException.class); // nobody consumes: the first call times out
    unreachable();

    long start = System.nanoTime();
    assertTimedOut(
        CompletableFuture.supplyAsync(() -> ref.<Long>call(new AddAndGet(1), "order-1", TIMEOUT)),
        start);
  }

  @Test
  void aCallWhosePushDoesNotCompleteWithinItsTimeout_failsByItsTimeout_beforeTheOperationTimeout() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    unreachable(); // the push itself hangs; the operation timeout (30 s) is far longer

    long start = System.nanoTime();
    assertTimedOut(ref.callAsync(new AddAndGet(1), TIMEOUT), start);
  }

  @Test
  void anInlineCallThatDoesNotCompleteWithinItsTimeout_failsByItsTimeout() {
    ServerRef<Msg> ref = start(); // consumeK 1: the call runs inline
    unreachable();

    long start = System.nanoTime();
    assertTimedOut(ref.callAsync(new AddAndGet(1), TIMEOUT), start);
  }
}

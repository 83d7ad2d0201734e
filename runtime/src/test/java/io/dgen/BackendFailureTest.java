package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.TestServer.Add;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import io.dgen.backend.BackendException;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * Every exception a {@link ServerRef} method throws is a {@link DGenException}, argument errors
 * aside (issue 37, item 3): the backend's failures, injected here, reach the caller as {@link
 * BackendFailureException} carrying the backend's {@link BackendException} and its code, from the
 * blocking and the non-blocking forms alike.
 */
class BackendFailureTest extends RuntimeTestBase {

  private static final Duration WAIT = Duration.ofSeconds(30);

  private static final int TIMED_OUT = BackendException.TRANSACTION_TIMED_OUT;

  @Test
  void aCommitThatFails_reachesTheCallerOfEachOperation_asBackendFailureException() {
    ServerRef<Msg> ref = start(); // consumeK 1 and an empty queue: the call runs inline

    faults().failCommits(1, TIMED_OUT, false);
    assertThatThrownBy(() -> ref.cast(new Add(1)))
        .satisfies(e -> assertBackendFailure(e, TIMED_OUT));
    faults().failCommits(1, TIMED_OUT, false);
    assertThat(ref.castAsync(new Add(2)))
        .failsWithin(WAIT)
        .withThrowableOfType(ExecutionException.class)
        .satisfies(e -> assertBackendFailure(e.getCause(), TIMED_OUT));
    faults().failCommits(1, TIMED_OUT, false);
    assertThatThrownBy(() -> ref.cast(new Add(3), "key-3"))
        .satisfies(e -> assertBackendFailure(e, TIMED_OUT));
    faults().failCommits(1, TIMED_OUT, false);
    assertThatThrownBy(() -> ref.call(new Add(4), Long.class, WAIT))
        .satisfies(e -> assertBackendFailure(e, TIMED_OUT));
    faults().failCommits(1, TIMED_OUT, false);
    assertThatThrownBy(() -> ref.priorityCast(new Add(5)))
        .satisfies(e -> assertBackendFailure(e, TIMED_OUT));
    faults().failCommits(1, TIMED_OUT, false);
    assertThatThrownBy(() -> ref.castAfter(new Add(6), Duration.ofHours(1)))
        .satisfies(e -> assertBackendFailure(e, TIMED_OUT));

    faults().reset();
    assertThat(ServerControl.of(ref).queueLength()).isZero();
    assertThat(total(ref)).isZero(); // none of them committed
  }

  @Test
  void aReadThatFails_reachesTheCaller_asBackendFailureException() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    ServerKeys keys =
        new ServerKeys(tenant.subspace(), Buckets.of(tenant.bucketCount()), ref.tuid());
    byte[] begin = keys.root().range().begin;
    byte[] end = keys.root().range().end;

    faults().failReads(begin, end, 1, BackendException.IO_ERROR);
    assertThatThrownBy(ServerControl.of(ref)::queueLength)
        .satisfies(e -> assertBackendFailure(e, BackendException.IO_ERROR));
    faults().failReads(begin, end, 1, BackendException.IO_ERROR);
    assertThatThrownBy(ServerControl.of(ref)::deadLetters)
        .satisfies(e -> assertBackendFailure(e, BackendException.IO_ERROR));
  }

  @Test
  void argumentErrors_areThrownAsTheyAre() {
    ServerRef<Msg> ref = start();
    assertThatThrownBy(() -> ref.call(new Add(1), Long.class, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ref.cast(new Add(1), "")).isInstanceOf(IllegalArgumentException.class);
  }

  private static void assertBackendFailure(Throwable e, int code) {
    assertThat(e)
        .isInstanceOfSatisfying(
            BackendFailureException.class,
            f -> {
              assertThat(f.code()).isEqualTo(code);
              assertThat(f.backendCause().code()).isEqualTo(code);
            })
        .isInstanceOf(DGenException.class)
        .hasCauseInstanceOf(BackendException.class);
  }
}

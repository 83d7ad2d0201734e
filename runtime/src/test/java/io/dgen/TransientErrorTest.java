package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.TestServer.Add;
import io.dgen.TestServer.Ask;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Transient;
import io.dgen.admin.ServerControl;
import io.dgen.backend.BackendException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Retryable backend errors met inside a callback (here: wrapped by user code; a read through {@code
 * TxContext} is in {@code TimeLimitTest}, which controls the backend's clock) are transient: the
 * transaction is retried, the error counts toward nothing and never reaches the caller as a
 * callback failure.
 */
class TransientErrorTest extends RuntimeTestBase {

  @Test
  void queuedMessage_retryableBackendError_isRetried_notCountedTowardDeadLetters() {
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(1));
    ref.cast(new Transient("q", 3, BackendException.NOT_COMMITTED));
    ref.cast(new Add(1));
    awaitTotal(ref, 2);
    assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
    assertThat(hooks.attempts.get("q")).hasValue(4);
    assertThat(state(ref).seen()).containsExactly(1L, 1L);
  }

  @Test
  void inlineCall_retryableBackendError_isRetried_notReportedAsCallbackException() {
    ServerRef<Msg> ref = start();
    long reply =
        ref.call(
            new Transient("i", 2, BackendException.FUTURE_VERSION),
            Long.class,
            Duration.ofSeconds(30));
    assertThat(reply).isEqualTo(1);
    assertThat(hooks.attempts.get("i")).hasValue(3);
    assertThat(ServerControl.of(ref).queueLength())
        .isZero(); // not queued for a retry: it succeeded inline
  }

  @Test
  void priorityCall_retryableBackendError_isRetried() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    long reply = ref.priorityCall(new Ask(new Transient("p", 2, 1037))); // process_behind
    assertThat(reply).isEqualTo(1);
    assertThat(total(ref)).isEqualTo(1);
  }

  @Test
  void nonRetryableBackendErrorInCallback_isACallbackFailure() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    assertThatThrownBy(
            () ->
                ref.priorityCall(
                    new Ask(new Transient("n", 1, BackendException.KEY_OUTSIDE_LEGAL_RANGE))))
        .isInstanceOf(CallbackException.class)
        .hasRootCauseInstanceOf(BackendException.class);
    assertThat(hooks.attempts.get("n")).hasValue(1);
    assertThat(total(ref)).isZero();
  }
}

package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Act;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Ask;
import io.dgen.TestServer.LockedThrow;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Throw;
import io.dgen.admin.ServerControl;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An {@link Error} from user code is that code's failure, not the runtime's: thrown by a callback
 * it is the message's failure (counted, dead-lettered at the threshold, its neighbours applied); by
 * {@code handleLocked}, an action or {@code handleDeadLetter} it never takes a worker task down
 * with it. Only a {@link VirtualMachineError} other than {@link StackOverflowError} stops the
 * process, visibly: its {@code termination()} fails with it.
 */
class UserErrorTest extends RuntimeTestBase {

  private static final int ALWAYS = Integer.MAX_VALUE;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"assertion", "stackoverflow"})
  void anErrorFromACallback_isThatMessagesFailure_deadLetteredAtTheThreshold_theRestApplied(
      String kind) {
    ServerRef<Msg> publisher = start(b -> b.consume(false));
    publisher.castAll(List.of(new Add(1), new Throw("e", kind, ALWAYS), new Add(2)));

    ProcessRef<Msg> consumer = start(b -> b.consumeK(8).deadLetterThreshold(3));
    awaitTotal(consumer, 3);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(consumer).deadLetters().size() == 1);
    assertThat(hooks.attempts.get("e")).hasValue(3);
    assertThat(ServerControl.of(consumer).deadLetters().get(0).lastError())
        .startsWith(TestServer.throwable(kind, "").getClass().getName());
    await().atMost(Duration.ofSeconds(10)).until(() -> hooks.deadLetters.size() == 1);
    assertThat(hooks.deadLetters).containsExactly(new Throw("e", kind, ALWAYS) + "x3");
    assertThat(state(consumer).seen()).containsExactly(1L, 2L);
    assertThat(consumer.isAlive()).isTrue();
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"assertion", "stackoverflow"})
  void anErrorFromHandleLocked_releasesTheLock_andTheMessageIsRetried(String kind) {
    ProcessRef<Msg> ref = start();
    ref.cast(new LockedThrow("l", kind, 2));
    ref.cast(new Add(1));

    awaitTotal(ref, 1001);
    assertThat(hooks.attempts.get("locked:l")).hasValue(3);
    assertThat(state(ref).seen()).containsExactly(1000L, 1L);
    assertThat(ref.isAlive()).isTrue();
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"assertion", "stackoverflow"})
  void anErrorFromAnAction_skipsTheRemainingActions_andTheLoopGoesOn(String kind) {
    ProcessRef<Msg> ref = start();
    ref.cast(new Act(List.of("rec:before", "throw:" + kind, "rec:after")));
    ref.cast(new Add(5));

    awaitTotal(ref, 6);
    await().atMost(Duration.ofSeconds(10)).until(() -> !hooks.actions.isEmpty());
    assertThat(hooks.actions).containsExactly("rec:before@1");
    ref.cast(new Act(List.of("rec:later")));
    await().atMost(Duration.ofSeconds(10)).until(() -> hooks.actions.size() == 2);
    assertThat(hooks.actions).containsExactly("rec:before@1", "rec:later@7");
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"assertion", "stackoverflow"})
  void anErrorFromHandleDeadLetter_isLogged_andTheLoopGoesOn(String kind) {
    hooks.deadLetterThrows = kind;
    ProcessRef<Msg> ref = start(b -> b.deadLetterThreshold(1));
    ref.cast(new Throw("d", "runtime", ALWAYS));
    ref.cast(new Add(1));

    awaitTotal(ref, 1);
    assertThat(ServerControl.of(ref).deadLetters()).hasSize(1);
    ref.cast(new Throw("d2", "runtime", ALWAYS));
    ref.cast(new Add(2));
    awaitTotal(ref, 3);
    assertThat(hooks.deadLetters).hasSize(2);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"oom", "internal"})
  void aVirtualMachineErrorFromACallback_stopsTheProcess_whoseTerminationFailsWithIt(String kind) {
    ProcessRef<Msg> ref = start();
    ref.cast(new Throw("f", kind, 1));
    assertTerminatedBy(ref, kind);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"oom", "internal"})
  void aVirtualMachineErrorFromHandleLocked_stopsTheProcess_whoseTerminationFailsWithIt(
      String kind) {
    ProcessRef<Msg> ref = start();
    ref.cast(new LockedThrow("g", kind, 1));
    assertTerminatedBy(ref, kind);
  }

  @Test
  void aVirtualMachineErrorFromAnAction_stopsTheProcess_whoseTerminationFailsWithIt() {
    ProcessRef<Msg> ref = start();
    ref.cast(new Act(List.of("throw:oom")));
    assertTerminatedBy(ref, "oom");
  }

  @Test
  void aVirtualMachineErrorFromHandleDeadLetter_stopsTheProcess_whoseTerminationFailsWithIt() {
    hooks.deadLetterThrows = "oom";
    ProcessRef<Msg> ref = start(b -> b.deadLetterThreshold(1));
    ref.cast(new Throw("h", "runtime", ALWAYS));
    assertTerminatedBy(ref, "oom");
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"assertion", "stackoverflow"})
  void anErrorFromAnInlineOrPriorityCallback_isTheCallersCallbackException(String kind) {
    ProcessRef<Msg> ref = start(); // consumeK 1: calls run inline when the queue is empty
    Class<? extends Throwable> type = TestServer.throwable(kind, "").getClass();

    assertThatThrownBy(() -> ref.call(new Throw("i", kind, 1), Long.class, Duration.ofSeconds(10)))
        .isInstanceOf(CallbackException.class)
        .hasCauseInstanceOf(type);
    awaitTotal(ref, 1); // the inline call was queued for retry, and succeeded then

    assertThatThrownBy(() -> ref.priorityCall(new Ask(new Throw("p", kind, 1))))
        .isInstanceOf(CallbackException.class)
        .hasCauseInstanceOf(type);
    assertThat(total(ref)).isEqualTo(1);
    assertThat(ref.isAlive()).isTrue();
  }

  private static void assertTerminatedBy(ProcessRef<Msg> ref, String kind) {
    Class<? extends Throwable> type = TestServer.throwable(kind, "").getClass();
    assertThat(ref.termination())
        .failsWithin(Duration.ofSeconds(30))
        .withThrowableOfType(ExecutionException.class)
        .havingCause()
        .isInstanceOf(type);
    assertThat(ref.isAlive()).isFalse();
  }
}

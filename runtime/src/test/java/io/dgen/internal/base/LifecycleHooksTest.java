package io.dgen.internal.base;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.ServerStoppedException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A process stops once, whoever stops it and however many at once. */
class LifecycleHooksTest {

  private final Lifecycle lifecycle = new Lifecycle("tenant=[t] tuid=(\"s\")");

  @Test
  void terminate_runsTheHooksOnceInOrder_thenCompletesTermination() throws Exception {
    List<String> ran = new ArrayList<>();
    lifecycle.onStop(() -> ran.add("cancel watch"));
    lifecycle.onStop(() -> ran.add("unregister"));

    lifecycle.terminate(null);
    lifecycle.terminate(null);
    lifecycle.stopIfAsked("again");

    assertThat(ran).containsExactly("cancel watch", "unregister");
    assertThat(lifecycle.isAlive()).isFalse();
    assertThat(lifecycle.termination().get(1, TimeUnit.SECONDS)).isNull();
    assertThatThrownBy(lifecycle::ensureAlive)
        .isInstanceOf(ServerStoppedException.class)
        .hasMessageContaining("tuid=(\"s\")");
  }

  @Test
  void terminate_withReason_failsTermination_andTheCopyCannotCompleteIt() {
    IllegalStateException reason = new IllegalStateException("fenced");
    lifecycle.termination().complete(null); // a caller's copy: no effect on the process

    lifecycle.terminate(reason);

    assertThatThrownBy(() -> lifecycle.termination().get(1, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .hasCause(reason);
  }

  @Test
  void stopIfAsked_withoutReason_keepsTheProcessAlive() {
    lifecycle.stopIfAsked(null);

    assertThat(lifecycle.isAlive()).isTrue();
    assertThat(lifecycle.termination()).isNotDone();
  }

  @Test
  void terminate_fromManyThreadsAtOnce_runsEachHookOnce() throws Exception {
    List<Integer> ran = Collections.synchronizedList(new ArrayList<>());
    lifecycle.onStop(() -> ran.add(1));
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  start.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
                lifecycle.terminate(null);
              });
      t.start();
      threads.add(t);
    }
    start.countDown();
    for (Thread t : threads) {
      t.join(TimeUnit.SECONDS.toMillis(10));
    }

    assertThat(ran).containsExactly(1);
  }
}

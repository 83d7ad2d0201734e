package io.dgen.internal.base;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link BoundedPool}: an idle thread takes the next task before a new thread is made, a new thread
 * is made before a task queues, and threads and queued tasks stay within their bounds.
 */
class BoundedPoolTest {

  private static final Duration WAIT = Duration.ofSeconds(30);

  private final List<ThreadPoolExecutor> pools = new ArrayList<>();
  private static final AtomicInteger tests = new AtomicInteger();

  private final CountDownLatch release = new CountDownLatch(1);
  private final String prefix = "bounded-pool-test-" + tests.incrementAndGet() + "-";

  @AfterEach
  void shutDown() {
    release.countDown();
    pools.forEach(ThreadPoolExecutor::shutdownNow);
  }

  private ThreadPoolExecutor pool(int threads, int queued) {
    ThreadPoolExecutor pool = BoundedPool.create(prefix, threads, queued, "the test");
    pools.add(pool);
    return pool;
  }

  /**
   * Until every thread of the pool waits for a task (parked in the queue's timed poll), not between
   * two tasks: a task submitted then finds them idle.
   */
  private void awaitIdle(ThreadPoolExecutor pool) {
    await()
        .atMost(WAIT)
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(1))
        .until(
            () -> {
              List<Thread> threads =
                  Thread.getAllStackTraces().keySet().stream()
                      .filter(t -> t.getName().startsWith(prefix))
                      .toList();
              return threads.size() == pool.getPoolSize()
                  && threads.stream().allMatch(t -> t.getState() == Thread.State.TIMED_WAITING);
            });
  }

  private Runnable blocked() {
    return () -> {
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    };
  }

  @Test
  void tasksOneAfterTheOther_runOnOneThread() throws Exception {
    ThreadPoolExecutor pool = pool(256, 1_000);
    Set<Thread> ran = ConcurrentHashMap.newKeySet();
    for (int i = 0; i < 100; i++) {
      pool.submit(() -> ran.add(Thread.currentThread())).get(WAIT.toSeconds(), TimeUnit.SECONDS);
      awaitIdle(pool);
    }
    assertThat(ran).hasSize(1).allMatch(Thread::isDaemon);
    assertThat(pool.getLargestPoolSize()).isEqualTo(1);
  }

  @Test
  void busyThreads_makeNewOnes_beforeAnyTaskQueues() {
    ThreadPoolExecutor pool = pool(4, 10);
    for (int i = 0; i < 4; i++) {
      pool.execute(blocked());
    }
    assertThat(pool.getPoolSize()).isEqualTo(4);
    assertThat(pool.getQueue()).isEmpty();
  }

  @Test
  void pastTheThreadBound_tasksQueue_andPastTheQueueBound_areRefusedSayingWhy() throws Exception {
    ThreadPoolExecutor pool = pool(2, 3);
    List<Future<?>> accepted = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      accepted.add(pool.submit(blocked()));
    }
    assertThat(pool.getPoolSize()).isEqualTo(2);
    assertThat(pool.getQueue()).hasSize(3);

    assertThatThrownBy(() -> pool.execute(() -> {}))
        .isInstanceOf(RejectedExecutionException.class)
        .hasMessageContaining("the test: all 2 threads are busy and 3 tasks wait already");

    release.countDown();
    for (Future<?> f : accepted) {
      f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }
    assertThat(pool.getLargestPoolSize()).isEqualTo(2);
  }

  @Test
  void idleThreads_takeTasksBeforeNewOnesAreMade() throws Exception {
    ThreadPoolExecutor pool = pool(8, 10);
    List<Future<?>> first = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      first.add(pool.submit(() -> {}));
    }
    for (Future<?> f : first) {
      f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }
    awaitIdle(pool);
    int idle = pool.getPoolSize();

    for (int i = 0; i < idle; i++) {
      pool.execute(blocked());
    }
    assertThat(pool.getPoolSize()).as("the idle threads took them").isEqualTo(idle);
    pool.execute(blocked());
    assertThat(pool.getPoolSize()).as("none idle: a new thread").isEqualTo(idle + 1);
  }

  @Test
  void threadsAreDroppedAfterAMinuteIdle() {
    assertThat(pool(2, 2).getKeepAliveTime(TimeUnit.SECONDS)).isEqualTo(60);
  }
}

package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dgen.TestServer.Ask;
import io.dgen.TestServer.Msg;
import io.dgen.TestServer.Slow;
import io.dgen.admin.ServerControl;
import io.dgen.backend.Backend;
import io.dgen.backend.BackendException;
import io.dgen.backend.ForwardingBackend;
import io.dgen.backend.ReadTransaction;
import io.dgen.backend.Transaction;
import io.dgen.backend.memory.MemoryBackend;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TimeLimitTest extends RuntimeTestBase {

  private SlowReads slowReads;

  @Override
  Backend newBackend() {
    slowReads =
        new SlowReads(
            MemoryBackend.builder()
                .ticker(() -> hooks.clock.get() + hooks.backendClock.get())
                .maxRetryDelay(Duration.ofMillis(2))
                .build());
    return slowReads;
  }

  @Override
  DGen newDGen() {
    return DGen.builder(backend)
        .ticker(hooks.clock::get)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(20))
        .build();
  }

  /** 4.5 s would pass a five-second check, then fail at commit with 1007 every time. */
  @ParameterizedTest
  @ValueSource(longs = {6_000, 4_500})
  void callbackPastTheFourSecondGuard_failsWithAClearError(long millis) {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    assertThatThrownBy(
            () -> ref.priorityCall(new Ask(new Slow(TimeUnit.MILLISECONDS.toNanos(millis)))))
        .isInstanceOf(CallbackException.class)
        .cause()
        .isInstanceOf(TransactionTooLongException.class)
        .hasMessageContaining("past the 4000 ms allowed to callbacks")
        .hasMessageContaining("5000 ms transaction limit");
    assertThat(total(ref)).isZero();
  }

  @Test
  void queuedCallbackPastTheGuard_isTheItemsFailure_deadLettered_andTheQueueMovesOn() {
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(2));
    ref.cast(new Slow(TimeUnit.MILLISECONDS.toNanos(4_900)));
    ref.cast(new TestServer.Add(1));
    awaitTotal(ref, 1);
    assertThat(ServerControl.of(ref).deadLetters())
        .singleElement()
        .satisfies(
            d -> {
              assertThat(d.message()).isEqualTo(new Slow(TimeUnit.MILLISECONDS.toNanos(4_900)));
              assertThat(d.attempts()).isEqualTo(2);
              assertThat(d.lastError()).contains("TransactionTooLongException");
            });
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  @Test
  void readThroughTxContext_failingWithTransactionTooOld_isRetried_notDeadLettered() {
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(1));
    // the backend sees the attempt age past five seconds (a cluster-side delay); the callback
    // itself was fast
    ref.cast(new TestServer.ReadAfter("r", 1, TimeUnit.SECONDS.toNanos(6), true));
    awaitTotal(ref, 1);
    assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
    assertThat(hooks.attempts.get("r")).hasValue(2);
    assertThat(ServerControl.of(ref).queueLength()).isZero();
    // inline: retried, not reported as CallbackException
    long reply =
        ref.call(
            new TestServer.ReadAfter("c", 1, TimeUnit.SECONDS.toNanos(6), true),
            Long.class,
            Duration.ofSeconds(30));
    assertThat(reply).isEqualTo(2);
    assertThat(hooks.attempts.get("c")).hasValue(2);
  }

  @Test
  void slowCallbackWhoseReadFailsTooOld_isTheItemsFailure_notATransientError() {
    // the read fails with the retryable 1007, but because the callback was slow: retrying would
    // run it slowly again, forever
    ServerRef<Msg> ref = start(b -> b.deadLetterThreshold(2));
    ref.cast(new TestServer.ReadAfter("slow", 5, TimeUnit.SECONDS.toNanos(6), false));
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(ref).deadLetters().size() == 1);
    assertThat(ServerControl.of(ref).deadLetters().get(0).lastError())
        .contains("TransactionTooLongException");
    assertThat(hooks.attempts.get("slow")).hasValue(2);
  }

  /**
   * A batch whose queue read waits out a cluster recovery (seconds without a read version) is past
   * the guard before any callback runs: seen in the chaos test, such batches failed with {@code
   * TransactionTooLongException}, counted against a valid message's dead-letter threshold. It is
   * retried instead, and nothing is counted.
   */
  @Test
  void batchWhoseReadsTookPastTheGuard_isRetried_notTheMessagesFailure() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    ref.cast(new TestServer.Add(1));
    // the consumer's first batch is the one that reads the queue slowly
    // its queue's items: (tuid.., "q", layout 0, "i", lane, versionstamp)
    byte[] items = tenant.subspace().pack(ref.tuid().add("q").add(0L).add("i"));
    slowReads.arm(items, TimeUnit.MILLISECONDS.toNanos(4_500));
    start(b -> b.deadLetterThreshold(1));
    awaitTotal(ref, 1);
    assertThat(slowReads.aged).as("the batch's queue read was slowed").isTrue();
    assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  @Test
  void runThatKeepsRetrying_givesUpWithinAMinute_longBeforeItsCommitMarkerIsSwept() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    faults().failNextCommits(1_000); // every attempt conflicts, each one 3 s long
    assertThatThrownBy(() -> ref.priorityCast(new Slow(TimeUnit.SECONDS.toNanos(3))))
        .isInstanceOfSatisfying(
            BackendFailureException.class,
            e -> assertThat(e.code()).isEqualTo(BackendException.TRANSACTION_TIMED_OUT))
        .hasMessageContaining("nothing was committed")
        .hasMessageContaining("60000 ms");
    long attempts = TimeUnit.NANOSECONDS.toSeconds(hooks.clock.get()) / 3;
    assertThat(attempts).isBetween(20L, 22L);
    faults().reset();
    assertThat(total(ref)).isZero();
  }

  @Test
  void callbackUnderFiveSeconds_commits() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    ref.priorityCast(new Slow(TimeUnit.SECONDS.toNanos(4)));
    assertThat(total(ref)).isEqualTo(1);
  }

  /**
   * Moves the runtime's clock on by {@code nanos} while the first snapshot range read of keys under
   * {@code prefix} after {@link #arm} is in flight (a batch's read of its queue): as a read that
   * waits out a cluster recovery does.
   */
  private final class SlowReads extends ForwardingBackend {
    private volatile byte @Nullable [] prefix;
    private volatile long nanos;
    volatile boolean aged;

    SlowReads(Backend delegate) {
      super(delegate);
    }

    void arm(byte[] prefix, long nanos) {
      this.nanos = nanos;
      this.prefix = prefix;
    }

    @Override
    public <T> T run(Function<? super Transaction, ? extends T> body) {
      return delegate().run(tx -> body.apply(slowed(Transaction.class, tx, false)));
    }

    @Override
    public <T> CompletableFuture<T> runAsync(
        Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
      return delegate().runAsync(tx -> body.apply(slowed(Transaction.class, tx, false)));
    }

    private <R extends ReadTransaction> R slowed(Class<R> type, R target, boolean snapshot) {
      InvocationHandler handler =
          (proxy, method, args) -> {
            if (snapshot && method.getName().startsWith("getRange")) {
              byte[] p = prefix;
              byte[] begin = (byte[]) args[0];
              if (p != null && startsWith(begin, p)) {
                prefix = null;
                hooks.clock.addAndGet(nanos);
                aged = true;
              }
            }
            try {
              Object result = method.invoke(target, args);
              return method.getName().equals("snapshot")
                  ? slowed(ReadTransaction.class, (ReadTransaction) result, true)
                  : result;
            } catch (InvocationTargetException e) {
              throw e.getCause();
            }
          };
      return type.cast(
          Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler));
    }

    private static boolean startsWith(byte[] key, byte[] prefix) {
      return key.length >= prefix.length
          && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
    }
  }
}

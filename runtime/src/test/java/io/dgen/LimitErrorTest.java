package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerControl;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * FoundationDB's size limits met by a message: a transaction over 10,000,000 bytes (2101), a reply
 * over the runtime's cap, a state write larger than what its transaction has left. Each is the
 * failure of the message that caused it, never of its batch: the batch is run item by item to find
 * it, its neighbours apply, it is dead-lettered at the threshold, and a caller gets a clear error.
 */
class LimitErrorTest extends RuntimeTestBase {

  /** Ten-megabyte transactions take a while on FoundationDB; a hang is what this bounds. */
  private static final Duration WAIT = Duration.ofSeconds(60);

  /** The server's state: a count of applied messages and named blobs. */
  record Blobs(long applied, Map<String, String> blobs) {}

  sealed interface Op {}

  /** Writes {@code bytes} of user data in 100,000-byte values through the transaction; counts 1. */
  record Put(String id, int bytes) implements Op {}

  /**
   * Writes like {@link Put}, but leaves the state as it is: nothing is checked before the commit.
   */
  record Fill(String id, int bytes) implements Op {}

  /** Sets the blob {@code name} to {@code bytes} characters, then does a {@link Put}; counts 1. */
  record Grow(String name, int bytes, int putBytes) implements Op {}

  /** Counts 1 and, as a call, replies {@code bytes} characters. */
  record Echo(int bytes) implements Op, Call<String> {}

  /** Replies how many messages were applied. */
  record Applied() implements Op, Call<Long> {}

  static final class LimitServer implements DGenServer<Blobs, Op> {
    final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    final List<String> deadLetters = new CopyOnWriteArrayList<>();

    @Override
    public InitResult<Blobs> init(@Nullable Object arg) {
      return InitResult.ok(Tuple.from("limits"), new Blobs(0, Map.of()));
    }

    @Override
    public Result<Blobs> handleCallTx(TxContext tx, Op request, From from, Blobs state)
        throws Exception {
      if (request instanceof Applied) {
        return Result.reply(state.applied(), state);
      }
      Result<Blobs> r = handleCastTx(tx, request, state);
      return request instanceof Echo e
          ? Result.reply("x".repeat(e.bytes()), r.state())
          : Result.reply(r.state().applied(), r.state());
    }

    @Override
    public Result<Blobs> handleCastTx(TxContext tx, Op message, Blobs state) {
      Blobs next = new Blobs(state.applied() + 1, state.blobs());
      if (message instanceof Fill f) {
        put(tx, f.id(), f.bytes());
        return Result.noReply(state);
      }
      if (message instanceof Put p) {
        runs.computeIfAbsent(p.id(), k -> new AtomicInteger()).incrementAndGet();
        put(tx, p.id(), p.bytes());
      } else if (message instanceof Grow g) {
        runs.computeIfAbsent(g.name(), k -> new AtomicInteger()).incrementAndGet();
        Map<String, String> blobs = new HashMap<>(state.blobs());
        blobs.put(g.name(), "b".repeat(g.bytes()));
        next = new Blobs(state.applied() + 1, blobs);
        put(tx, g.name(), g.putBytes());
      }
      return Result.noReply(next);
    }

    private static void put(TxContext tx, String id, int bytes) {
      for (int i = 0, left = bytes; left > 0; i++, left -= 100_000) {
        tx.transaction()
            .set(
                tx.tenant().subspace().pack(Tuple.from("user", id, i)),
                new byte[Math.min(100_000, left)]);
      }
    }

    @Override
    public void handleDeadLetter(Op message, int attempts) {
      deadLetters.add(message + "x" + attempts);
    }
  }

  private final LimitServer server = new LimitServer();

  private ProcessRef<Op> startLimits(java.util.function.Consumer<StartOptions.Builder> options) {
    StartOptions.Builder b = StartOptions.builder(tenant);
    options.accept(b);
    return dgen.start(server, null, b.build());
  }

  private static long applied(ServerRef<Op> ref) {
    return ref.<Long>priorityCall(new Applied());
  }

  private int runs(String id) {
    AtomicInteger n = server.runs.get(id);
    return n == null ? 0 : n.get();
  }

  @Test
  void aBatchWhoseCommitIsTooLarge_failsTheItemThatCausedIt_andTheRestApply() {
    ServerRef<Op> publisher = startLimits(b -> b.consume(false));
    List<Op> ops = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      // 11 MB of writes in one callback: the commit fails with transaction_too_large (2101)
      ops.add(i == 7 ? new Put("big", 11_000_000) : new Put("p" + i, 1_000));
    }
    publisher.castAll(ops);

    ServerRef<Op> consumer = startLimits(b -> b.consumeK(16).deadLetterThreshold(2));
    await().atMost(WAIT).until(() -> ServerControl.of(consumer).deadLetters().size() == 1);
    await().atMost(WAIT).until(() -> applied(consumer) == 15);

    assertThat(ServerControl.of(consumer).deadLetters())
        .singleElement()
        .satisfies(
            d -> {
              assertThat(d.message()).isEqualTo(new Put("big", 11_000_000));
              assertThat(d.attempts()).isEqualTo(2);
              assertThat(d.lastError()).contains("transaction_too_large").contains("2101");
            });
    assertThat(server.deadLetters).containsExactly(new Put("big", 11_000_000) + "x2");
    assertThat(ServerControl.of(consumer).queueLength()).isZero();
    // the queue is not wedged: the next message is applied
    consumer.cast(new Put("after", 10));
    await().atMost(WAIT).until(() -> applied(consumer) == 16);
  }

  @Test
  void aBatchWhoseCommitFailsWith2101_withoutAStateChange_failsTheItemThatCausedIt() {
    ServerRef<Op> publisher = startLimits(b -> b.consume(false));
    List<Op> ops = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      // no state change: nothing stops the batch before FoundationDB refuses its commit
      ops.add(i == 7 ? new Fill("big", 11_000_000) : new Fill("f" + i, 1_000));
    }
    publisher.castAll(ops);

    ServerRef<Op> consumer = startLimits(b -> b.consumeK(16).deadLetterThreshold(2));
    await()
        .atMost(WAIT)
        .until(
            () ->
                ServerControl.of(consumer).deadLetters().size() == 1
                    && ServerControl.of(consumer).queueLength() == 0);
    assertThat(ServerControl.of(consumer).deadLetters().get(0).message())
        .isEqualTo(new Fill("big", 11_000_000));
    assertThat(ServerControl.of(consumer).deadLetters().get(0).attempts()).isEqualTo(2);
    assertThat(ServerControl.of(consumer).deadLetters().get(0).lastError())
        .contains("transaction_too_large");
    for (int i = 0; i < 16; i++) {
      assertThat(userKeyExists(i == 7 ? "big" : "f" + i)).as("item %d", i).isEqualTo(i != 7);
    }
  }

  private boolean userKeyExists(String id) {
    byte[] key = tenant.subspace().pack(Tuple.from("user", id, 0));
    return backend.run(tx -> tx.get(key)) != null;
  }

  @Test
  void aQueuedCallWhoseReplyIsTooLarge_failsTheCallerWithAClearError() {
    ServerRef<Op> ref = startLimits(b -> b.consumeK(4).deadLetterThreshold(3));
    CompletableFuture<String> call = ref.callAsync(new Echo(11_000_000), Duration.ofMinutes(5));

    // at its first failure, long before its timeout and its dead-lettering
    assertThat(call)
        .failsWithin(Duration.ofSeconds(30))
        .withThrowableOfType(ExecutionException.class)
        .havingCause()
        .isInstanceOfSatisfying(
            ReplyTooLargeException.class,
            e -> {
              assertThat(e.replyBytes()).isGreaterThan(11_000_000);
              assertThat(e.limitBytes()).isEqualTo(ReplyTooLargeException.MAX_REPLY_BYTES);
              assertThat(e.getMessage())
                  .contains(String.valueOf(e.replyBytes()))
                  .contains(String.valueOf(ReplyTooLargeException.MAX_REPLY_BYTES));
            });

    // the server goes on consuming: the call is dead-lettered at the threshold, never applied
    ref.cast(new Put("after", 10));
    await().atMost(WAIT).until(() -> applied(ref) == 1);
    assertThat(ServerControl.of(ref).deadLetters())
        .singleElement()
        .satisfies(
            d -> {
              assertThat(d.message()).isEqualTo(new Echo(11_000_000));
              assertThat(d.attempts()).isEqualTo(3);
              assertThat(d.lastError()).contains("ReplyTooLargeException");
            });
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  @Test
  void aQueuedCallWhoseReplyIsTooLarge_atThresholdOne_failsTheCallerWithTheSameError() {
    ServerRef<Op> ref = startLimits(b -> b.consumeK(4).deadLetterThreshold(1));
    assertThatThrownBy(() -> ref.call(new Echo(6_000_000), Duration.ofMinutes(5)))
        .isInstanceOf(ReplyTooLargeException.class)
        .hasMessageContaining("dead-letter");
    assertThat(applied(ref)).isZero();
    assertThat(ServerControl.of(ref).deadLetters()).hasSize(1);
  }

  @Test
  void aKeyedCallWhoseReplyIsTooLarge_keepsTheErrorForEveryRetryOfTheKey() {
    ServerRef<Op> ref = startLimits(b -> b.deadLetterThreshold(1));
    for (int i = 0; i < 2; i++) { // the client retries: the same key gets the same error
      assertThatThrownBy(() -> ref.call(new Echo(6_000_000), "order-1", Duration.ofMinutes(1)))
          .isInstanceOfSatisfying(
              ReplyTooLargeException.class,
              e -> assertThat(e.replyBytes()).isGreaterThan(6_000_000));
    }
    assertThat(applied(ref)).isZero();
    assertThat(ServerControl.of(ref).deadLetters()).hasSize(1);
  }

  @Test
  void aReplyUnderTheCap_isDelivered() {
    ServerRef<Op> ref = startLimits(b -> b.consumeK(4));
    String reply = ref.call(new Echo(1_000_000), Duration.ofMinutes(1));
    assertThat(reply).hasSize(1_000_000);
  }

  @Test
  void anInlineCallWhoseReplyIsTooLarge_failsWithAClearError_andCommitsNothing() {
    ServerRef<Op> ref = startLimits(b -> {}); // consumeK 1, empty queue: the call runs inline
    assertThatThrownBy(() -> ref.call(new Echo(6_000_000), Duration.ofMinutes(1)))
        .isInstanceOfSatisfying(
            ReplyTooLargeException.class,
            e -> {
              assertThat(e.replyBytes()).isGreaterThan(6_000_000);
              assertThat(e.limitBytes()).isEqualTo(ReplyTooLargeException.MAX_REPLY_BYTES);
            })
        .hasMessageContaining("nothing was committed");
    assertThat(applied(ref)).isZero();
    assertThat(ServerControl.of(ref).queueLength()).isZero();
    assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
  }

  @Test
  void aPriorityCallWhoseReplyIsTooLarge_failsWithAClearError_andCommitsNothing() {
    ServerRef<Op> ref = startLimits(b -> b.consume(false));
    assertThatThrownBy(() -> ref.priorityCall(new Echo(6_000_000)))
        .isInstanceOf(ReplyTooLargeException.class)
        .hasMessageContaining("nothing was committed")
        .hasMessageContaining(String.valueOf(ReplyTooLargeException.MAX_REPLY_BYTES));
    assertThat(applied(ref)).isZero();
  }

  @Test
  void aStateWriteThatFitsAloneButNotAfterTheBatchsOtherWrites_isRetriedItemByItem() {
    ServerRef<Op> publisher = startLimits(b -> b.consume(false));
    // 990 KB of writes keeps the batch taking items; the next one's state change (8.95 MB, under
    // the 9 MB a state write may use) and 200 KB of writes do not fit after it
    publisher.castAll(List.of(new Put("first", 990_000), new Grow("blob", 8_950_000, 200_000)));

    ServerRef<Op> consumer = startLimits(b -> b.consumeK(16).deadLetterThreshold(1));
    await().atMost(WAIT).until(() -> applied(consumer) == 2);
    assertThat(ServerControl.of(consumer).deadLetters())
        .isEmpty(); // no failure was counted against either
    assertThat(ServerControl.of(consumer).queueLength()).isZero();
  }

  @Test
  void aStateWriteLargerThanWhatItsTransactionHasLeft_isRefusedBeforeTheCommit() {
    ServerRef<Op> ref = startLimits(b -> b.consume(false));
    // 8.95 MB of state fits the state's 9 MB, but not after 1.2 MB of other writes
    assertThatThrownBy(() -> ref.priorityCast(new Grow("blob", 8_950_000, 1_200_000)))
        .isInstanceOfSatisfying(
            StateTooLargeException.class,
            e -> assertThat(e.limitBytes()).isLessThan(10_000_000 - 1_200_000))
        .hasMessageContaining("nothing was written");
    assertThat(applied(ref)).isZero();
    // alone, it fits
    ref.priorityCast(new Grow("blob", 8_950_000, 0));
    assertThat(applied(ref)).isEqualTo(1);
  }

  @Test
  void aQueuedStateWriteLargerThanWhatItsTransactionHasLeft_isDeadLetteredWithTheStateError() {
    ServerRef<Op> ref = startLimits(b -> b.deadLetterThreshold(1));
    ref.cast(new Grow("blob", 8_950_000, 1_200_000));
    await().atMost(WAIT).until(() -> ServerControl.of(ref).deadLetters().size() == 1);
    assertThat(ServerControl.of(ref).deadLetters().get(0).lastError())
        .contains("StateTooLargeException");
    assertThat(applied(ref)).isZero();
    assertThat(runs("blob")).isEqualTo(1); // refused before the commit, not retried
  }
}

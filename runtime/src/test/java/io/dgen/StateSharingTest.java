package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Callbacks that change their state in place, and the cached state they load from: a change in
 * place is always written, a callback never sees another's unfinished change, and only a deeply
 * immutable state is handed to several callbacks.
 */
class StateSharingTest extends RuntimeTestBase {

  /** Jackson decodes the list as an ArrayList: a state callbacks may change in place. */
  record Bag(List<String> items) {}

  /** The same, made deeply immutable by its constructor. */
  record Frozen(List<String> items) {
    Frozen {
      items = List.copyOf(items);
    }
  }

  /** A POJO changed through its setter. */
  public static final class Counter {
    private long count;

    public long getCount() {
      return count;
    }

    public void setCount(long count) {
      this.count = count;
    }
  }

  sealed interface Msg {}

  /** Adds an item in place and returns the same state. */
  record Add(String item) implements Msg {}

  /** Adds an item in place, then fails the first {@code failures} times. */
  record AddThenFail(String item, int failures) implements Msg {}

  /** Adds an item in place, then waits until the test lets it go on. */
  record AddAndWait(String item) implements Msg {}

  /** Replies the items. */
  record Items() implements Msg, Call<List<String>> {}

  /** Replies the count ({@link CounterServer}'s). */
  record Count() implements Msg, Call<Long> {}

  /** Replies the state object itself (an in-JVM test only: its identity is what is asked). */
  record Identity() implements Msg, Call<Integer> {}

  /** The latches and counters of one test, shared with its servers. */
  static final class Gate {
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    final AtomicInteger attempts = new AtomicInteger();
    final Map<Object, Boolean> seen = new ConcurrentHashMap<>();
  }

  final Gate gate = new Gate();

  /** A server over a list state of either kind. */
  abstract static class ListServer<S> implements DGenServer<S, Msg> {
    final Gate gate;

    ListServer(Gate gate) {
      this.gate = gate;
    }

    abstract List<String> items(S state);

    abstract S withItem(S state, String item);

    @Override
    public Result<S> handleCast(Msg message, S state) throws Exception {
      if (message instanceof Add a) {
        return Result.noReply(withItem(state, a.item()));
      }
      if (message instanceof AddThenFail f) {
        S next = withItem(state, f.item());
        if (gate.attempts.incrementAndGet() <= f.failures()) {
          throw new IllegalStateException("failing attempt " + gate.attempts.get());
        }
        return Result.noReply(next);
      }
      if (message instanceof AddAndWait w) {
        S next = withItem(state, w.item());
        gate.entered.countDown();
        if (!gate.release.await(4, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the test never released the callback");
        }
        return Result.noReply(next);
      }
      throw new IllegalArgumentException(message.toString());
    }

    @Override
    public Result<S> handleCall(Msg request, From from, S state) {
      if (request instanceof Identity) {
        gate.seen.put(new IdentityKey(state), true);
        return Result.reply(gate.seen.size(), state);
      }
      return Result.reply(new ArrayList<>(items(state)), state);
    }
  }

  record IdentityKey(Object state) {
    @Override
    public boolean equals(Object o) {
      return o instanceof IdentityKey k && k.state == state;
    }

    @Override
    public int hashCode() {
      return System.identityHashCode(state);
    }
  }

  static final class BagServer extends ListServer<Bag> {
    BagServer(Gate gate) {
      super(gate);
    }

    @Override
    public InitResult<Bag> init(@Nullable Object arg) {
      return InitResult.ok(new Bag(new ArrayList<>()));
    }

    @Override
    List<String> items(Bag state) {
      return state.items();
    }

    @Override
    Bag withItem(Bag state, String item) {
      state.items().add(item); // in place: the same record, the same list
      return state;
    }
  }

  static final class FrozenServer extends ListServer<Frozen> {
    FrozenServer(Gate gate) {
      super(gate);
    }

    @Override
    public InitResult<Frozen> init(@Nullable Object arg) {
      return InitResult.ok(new Frozen(List.of()));
    }

    @Override
    List<String> items(Frozen state) {
      return state.items();
    }

    @Override
    Frozen withItem(Frozen state, String item) {
      List<String> items = new ArrayList<>(state.items());
      items.add(item);
      return new Frozen(items);
    }
  }

  static final class CounterServer implements DGenServer<Counter, Msg> {
    @Override
    public InitResult<Counter> init(@Nullable Object arg) {
      return InitResult.ok(new Counter());
    }

    @Override
    public Result<Counter> handleCast(Msg message, Counter state) {
      state.setCount(state.getCount() + 1);
      return Result.noReply(state);
    }

    @Override
    public Result<Counter> handleCall(Msg request, From from, Counter state) {
      return Result.reply(state.getCount(), state);
    }
  }

  private <S> ProcessRef<Msg> start(DGenServer<S, Msg> server, int consumeK) {
    return dgen.start(server, null, StartOptions.builder(tenant).consumeK(consumeK).build());
  }

  @SuppressWarnings("unchecked")
  private static List<String> items(ServerRef<Msg> ref) {
    return (List<String>) ref.<List<String>>priorityCall(new Items());
  }

  @ParameterizedTest(name = "consumeK={0}")
  @ValueSource(ints = {1, 4})
  void inPlaceAddsToAListInsideARecord_areAllWritten(int consumeK) {
    ProcessRef<Msg> ref = start(new BagServer(gate), consumeK);
    List<Msg> adds = new ArrayList<>();
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      adds.add(new Add("i" + i));
      expected.add("i" + i);
    }
    ref.castAll(adds);
    await().atMost(Duration.ofSeconds(30)).until(() -> items(ref).size() == 20);
    assertThat(items(ref)).containsExactlyElementsOf(expected);
    ref.stop();
    // A new process reads the store, not the cache.
    assertThat(items(start(new BagServer(gate), consumeK))).containsExactlyElementsOf(expected);
  }

  @ParameterizedTest(name = "consumeK={0}")
  @ValueSource(ints = {1, 4})
  void aPojoChangedThroughItsSetters_isWrittenEveryTime(int consumeK) {
    ProcessRef<Msg> ref = start(new CounterServer(), consumeK);
    for (int i = 0; i < 30; i++) {
      ref.cast(new Add("x"));
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> ref.priorityCall(new Count()) == 30L);
    ref.stop();
    assertThat(start(new CounterServer(), consumeK).priorityCall(new Count())).isEqualTo(30);
  }

  @ParameterizedTest(name = "consumeK={0}")
  @ValueSource(ints = {1, 4})
  void aCallbackThatChangedItsStateInPlaceAndFailed_leavesNoTraceForTheRetry(int consumeK) {
    ProcessRef<Msg> ref = start(new BagServer(gate), consumeK);
    ref.cast(new Add("a"));
    ref.cast(new AddThenFail("x", 2));
    await().atMost(Duration.ofSeconds(30)).until(() -> items(ref).size() >= 2);
    assertThat(gate.attempts.get()).isEqualTo(3);
    assertThat(items(ref)).containsExactly("a", "x");
  }

  @ParameterizedTest(name = "consumeK={0}")
  @ValueSource(ints = {1, 4})
  void aPriorityCall_neverSeesAConcurrentBatchsUnfinishedChangeInPlace(int consumeK)
      throws Exception {
    ProcessRef<Msg> ref = start(new BagServer(gate), consumeK);
    ref.cast(new Add("a"));
    await().atMost(Duration.ofSeconds(30)).until(() -> items(ref).size() == 1);
    ref.cast(new AddAndWait("b")); // changes its state in place, then waits
    assertThat(gate.entered.await(10, TimeUnit.SECONDS)).isTrue();
    try {
      // Both load the same cached state; each must have its own copy of it.
      assertThat(items(ref)).containsExactly("a");
    } finally {
      gate.release.countDown();
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> items(ref).size() == 2);
    assertThat(items(ref)).containsExactly("a", "b");
  }

  @ParameterizedTest(name = "consumeK={0}")
  @ValueSource(ints = {1, 4})
  void aDeeplyImmutableState_isSharedByCallbacks_andAMutableOneNever(int consumeK) {
    ProcessRef<Msg> frozen = start(new FrozenServer(gate), consumeK);
    frozen.cast(new Add("a"));
    await().atMost(Duration.ofSeconds(30)).until(() -> items(frozen).size() == 1);
    for (int i = 0; i < 5; i++) {
      frozen.priorityCall(new Identity());
    }
    assertThat(gate.seen).hasSize(1);
    frozen.stop();
    gate.seen.clear();

    ServerRef<Msg> mutable = start(new BagServer(gate), consumeK); // another tuid: its class
    mutable.cast(new Add("a"));
    await().atMost(Duration.ofSeconds(30)).until(() -> items(mutable).size() == 1);
    for (int i = 0; i < 5; i++) {
      mutable.priorityCall(new Identity());
    }
    assertThat(gate.seen).hasSize(5);
  }
}

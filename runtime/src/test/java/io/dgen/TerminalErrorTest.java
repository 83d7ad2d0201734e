package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Account.Deposit;
import io.dgen.Account.LockedWithdraw;
import io.dgen.Account.Msg;
import io.dgen.Account.State;
import io.dgen.Account.Statement;
import io.dgen.Account.Withdraw;
import io.dgen.Account.WithdrawCall;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.ServerControl;
import io.dgen.admin.TenantAdmin;
import io.dgen.internal.process.ServerProcess;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A handler refuses its message by throwing {@link TerminalException} (issue 37, item 3): the
 * message leaves the queue without anything the handler did (state, actions, outbox casts, timers,
 * its own writes), is neither retried nor dead-lettered, and the server goes on; a caller gets
 * {@link CallRejectedException}, a refused cast is logged, counted and reported. Each case runs
 * with a handler that wrote nothing (refused within its batch) and one that wrote through its
 * transaction first ({@code tx}: its batch is aborted and the refusal committed without it). Also:
 * a hosted server's {@code init} declines to create it.
 */
class TerminalErrorTest extends RuntimeTestBase {

  private static final Duration WAIT = Duration.ofSeconds(30);

  private static final String BROKE = "insufficient funds: balance=10 amount=50";

  private final Account.Hooks accounts = new Account.Hooks();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  /** What the runtime's listener heard: each refused cast, and the handler's message. */
  private final List<String> heard = new CopyOnWriteArrayList<>();

  @Override
  DGen newDGen() {
    return DGen.builder(backend)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
        .meterRegistry(registry)
        .listener(
            new DGenListener() {
              @Override
              public void castRefused(ServerRef<?> server, Object message, TerminalException why) {
                heard.add(message + " " + why.getMessage());
              }
            })
        .build();
  }

  @BeforeEach
  void startSink() {
    // Where a refusing tx withdrawal casts through its outbox: nothing consumes it, so its queue
    // tells whether such a cast was ever delivered.
    accounts.sink = account("sink", b -> b.consume(false));
  }

  /** How a call reaches the account. */
  enum Route {
    /** consumeK 1, an empty queue: in the caller's transaction. */
    INLINE(1),
    /** Queued by a process that does not consume, applied by one with consumeK 1. */
    QUEUED(1),
    /** Queued, applied by a consumer with consumeK 8. */
    BATCHED(8);

    final int consumeK;

    Route(int consumeK) {
      this.consumeK = consumeK;
    }
  }

  static Stream<Arguments> routesAndWrites() {
    return Stream.of(Route.values())
        .flatMap(r -> Stream.of(Arguments.of(r, false), Arguments.of(r, true)));
  }

  static Stream<Arguments> batchesAndWrites() {
    return Stream.of(1, 8).flatMap(k -> Stream.of(Arguments.of(k, false), Arguments.of(k, true)));
  }

  static Stream<Arguments> declinesAndBatches() {
    return Stream.of("throw", "error")
        .flatMap(how -> Stream.of(Arguments.of(how, 1), Arguments.of(how, 8)));
  }

  private ServerRef<Msg> account(String name, Consumer<StartOptions.Builder> options) {
    StartOptions.Builder b = StartOptions.builder(tenant);
    options.accept(b);
    return dgen.start(new Account(accounts, false), Tuple.from("acct", name), b.build());
  }

  /** The account's consumer for {@code route}, and the process its calls go through. */
  private ServerRef<Msg> caller(Route route) {
    ServerRef<Msg> consumer = account("a", b -> b.consumeK(route.consumeK));
    return route == Route.INLINE ? consumer : account("a", b -> b.consume(false));
  }

  private static State statement(ServerRef<Msg> ref) {
    return ref.call(new Statement(), State.class, WAIT);
  }

  private static long deposit(ServerRef<Msg> ref, String id, long amount) {
    return ref.call(new Deposit(id, amount), Long.class, WAIT);
  }

  private double refusedCasts() {
    Counter c = registry.find("dgen.casts.refused").counter();
    return c == null ? 0 : c.count();
  }

  private TenantAdmin admin() {
    return new DGenAdmin(backend).tenant(tenant.path().toArray(String[]::new)).orElseThrow();
  }

  /**
   * Message {@code refused} left nothing behind: no queue item, dead letter, lock or timer of the
   * account, no key it wrote, no cast through the outbox, no action run.
   */
  private void assertLeftNothing(ServerRef<Msg> ref, String refused) {
    assertThat(ServerControl.of(ref).queueLength()).isZero();
    assertThat(ServerControl.of(ref).deadLetters()).isEmpty();
    ServerAdmin server = admin().server(ref.tuid()).orElseThrow();
    assertThat(server.timers()).isEmpty();
    assertThat(server.lock()).isEmpty();
    byte[] mark = backend.run(tx -> tx.get(Account.mark(tenant, refused)));
    assertThat(mark).isNull();
    assertThat(ServerControl.of(accounts.sink).queueLength()).isZero();
    assertThat(accounts.actions).doesNotContain(refused);
  }

  private static void assertRejected(Throwable e, String reason) {
    assertThat(e)
        .isInstanceOfSatisfying(
            CallRejectedException.class, r -> assertThat(r.reason()).isEqualTo(reason))
        .hasMessageContaining(reason);
  }

  @ParameterizedTest(name = "{0}, tx={1}")
  @MethodSource("routesAndWrites")
  void aRefusedCall_throwsCallRejected_withTheHandlersMessage_andLeavesNothingBehind(
      Route route, boolean tx) {
    ServerRef<Msg> ref = caller(route);
    assertThat(deposit(ref, "d1", 10)).isEqualTo(10L);

    assertThatThrownBy(() -> ref.call(new Withdraw("w1", 50, tx), Long.class, WAIT))
        .satisfies(e -> assertRejected(e, BROKE));
    CompletableFuture<Long> async = ref.callAsync(new WithdrawCall("w2", 50, tx), WAIT);
    assertThat(async)
        .failsWithin(WAIT)
        .withThrowableOfType(ExecutionException.class)
        .satisfies(e -> assertRejected(e.getCause(), BROKE));

    assertThat(deposit(ref, "d2", 5)).isEqualTo(15L);
    assertThat(statement(ref).applied()).containsExactly("d1", "d2");
    assertLeftNothing(ref, "w1");
    assertLeftNothing(ref, "w2");
    assertThat(accounts.runs("w1")).isPositive(); // the handler did run: it refused
    assertThat(heard).isEmpty(); // a call's refusal is its caller's to hear
    assertThat(refusedCasts()).isZero();
  }

  @ParameterizedTest(name = "consumeK={0}, tx={1}")
  @MethodSource("batchesAndWrites")
  void aRefusedCast_isDropped_loggedCountedAndReportedOnce_andTheServerGoesOn(
      int consumeK, boolean tx) {
    ServerRef<Msg> ref = account("a", b -> b.consumeK(consumeK));
    ref.cast(new Deposit("d1", 10));
    ref.cast(new Withdraw("w", 50, tx));
    ref.cast(new Deposit("d2", 5));

    assertThat(statement(ref).applied()).containsExactly("d1", "d2");
    await().atMost(WAIT).until(() -> heard.size() == 1);
    assertThat(heard).containsExactly(new Withdraw("w", 50, tx) + " " + BROKE);
    assertThat(refusedCasts()).isEqualTo(1.0);
    assertLeftNothing(ref, "w");
  }

  @ParameterizedTest(name = "tx={0}")
  @ValueSource(booleans = {false, true})
  void aRefusalInABatch_leavesTheOtherMessagesOfTheBatchAppliedExactlyOnce(boolean tx) {
    ServerRef<Msg> publisher = account("a", b -> b.consume(false));
    publisher.castAll(
        List.of(new Deposit("d1", 10), new Withdraw("w1", 50, tx), new Deposit("d2", 5)));
    CompletableFuture<Long> refused = publisher.callAsync(new WithdrawCall("w2", 100, tx), WAIT);
    await().atMost(WAIT).until(() -> ServerControl.of(publisher).queueLength() == 4);
    publisher.castAll(List.of(new Withdraw("w3", 12, tx), new Deposit("d3", 1)));

    ServerRef<Msg> consumer = account("a", b -> b.consumeK(8)); // one batch takes all six

    assertThat(refused)
        .failsWithin(WAIT)
        .withThrowableOfType(ExecutionException.class)
        .satisfies(e -> assertRejected(e.getCause(), "insufficient funds: balance=15 amount=100"));
    State state = statement(consumer);
    assertThat(state.applied()).containsExactly("d1", "d2", "w3", "d3");
    assertThat(state.balance()).isEqualTo(4);
    await().atMost(WAIT).until(() -> heard.size() == 1);
    assertThat(heard)
        .containsExactly(new Withdraw("w1", 50, tx) + " insufficient funds: balance=10 amount=50");
    assertThat(refusedCasts()).isEqualTo(1.0);
    assertLeftNothing(consumer, "w1");
    assertLeftNothing(consumer, "w2");
  }

  @ParameterizedTest(name = "tx={0}")
  @ValueSource(booleans = {false, true})
  void aKeyedOrSubmittedCallThatWasRefused_staysRefused_withoutRunningTheHandlerAgain(boolean tx) {
    ServerRef<Msg> ref = account("a", b -> {});
    String reason = "insufficient funds: balance=0 amount=5";
    assertThatThrownBy(() -> ref.call(new WithdrawCall("k", 5, tx), "key-1", WAIT))
        .satisfies(e -> assertRejected(e, reason));
    int runs = accounts.runs("k");

    deposit(ref, "d", 10); // the account could pay now: the key keeps its outcome all the same
    assertThatThrownBy(() -> ref.call(new WithdrawCall("k", 5, tx), "key-1", WAIT))
        .satisfies(e -> assertRejected(e, reason));
    assertThat(accounts.runs("k")).isEqualTo(runs);

    String callId = ref.submit(new Withdraw("s", 50, tx));
    assertThatThrownBy(() -> ref.awaitReply(callId, WAIT)).satisfies(e -> assertRejected(e, BROKE));
    int submittedRuns = accounts.runs("s");
    assertThatThrownBy(() -> ref.awaitReply(callId, WAIT)).satisfies(e -> assertRejected(e, BROKE));
    assertThat(accounts.runs("s")).isEqualTo(submittedRuns);
    assertThat(statement(ref).applied()).containsExactly("d");
    assertLeftNothing(ref, "k");
    assertLeftNothing(ref, "s");
  }

  @ParameterizedTest(name = "tx={0}")
  @ValueSource(booleans = {false, true})
  void priorityMessagesThatRefuse_throwCallRejected_andCommitNothing(boolean tx) {
    ServerRef<Msg> ref = account("a", b -> {});
    deposit(ref, "d", 10);

    assertThatThrownBy(() -> ref.priorityCall(new WithdrawCall("p", 50, tx)))
        .satisfies(e -> assertRejected(e, BROKE));
    assertThatThrownBy(() -> ref.priorityCast(new Withdraw("c", 50, tx)))
        .satisfies(e -> assertRejected(e, BROKE));
    assertThatThrownBy(() -> ref.info("ping"))
        .satisfies(e -> assertRejected(e, "info refused: ping"));

    assertThat(statement(ref).applied()).containsExactly("d");
    assertLeftNothing(ref, "p");
    assertLeftNothing(ref, "c");
    assertThat(heard).isEmpty();
  }

  @ParameterizedTest(name = "consumeK={0}")
  @ValueSource(ints = {1, 8})
  void handleLockedThatRefuses_releasesTheLock_keepsTheLockedState_andTheServerGoesOn(
      int consumeK) {
    ServerRef<Msg> ref = account("a", b -> b.consumeK(consumeK));
    deposit(ref, "d1", 10);

    assertThatThrownBy(() -> ref.call(new LockedWithdraw("l1", 50), Long.class, WAIT))
        .satisfies(e -> assertRejected(e, BROKE));
    ref.cast(new LockedWithdraw("l2", 60));
    assertThat(deposit(ref, "d2", 1)).isEqualTo(11L); // queued behind l2's lock, or after it
    await().atMost(WAIT).until(() -> heard.size() == 1);
    assertThat(heard)
        .containsExactly(
            new LockedWithdraw("l2", 60) + " insufficient funds: balance=10 amount=60");
    assertThat(ref.call(new LockedWithdraw("l3", 4), Long.class, WAIT)).isEqualTo(7L);

    assertThat(statement(ref).applied()).containsExactly("d1", "d2", "l3");
    assertThat(refusedCasts()).isEqualTo(1.0);
    assertLeftNothing(ref, "l1");
    assertLeftNothing(ref, "l2");
  }

  @ParameterizedTest(name = "{0}, consumeK={1}")
  @MethodSource("declinesAndBatches")
  void aHostedInitThatDeclines_refusesTheMessagesThatActivatedIt_andStoresNothing(
      String how, int consumeK) {
    accounts.declineByError = how.equals("error");
    dgen.host(
        Account.KIND,
        () -> new Account(accounts, true),
        HostOptions.builder(tenant).consumeK(consumeK).build());
    ServerRef<Msg> ref = dgen.ref(tenant, Account.KIND, Tuple.from(7L));
    String reason = "no such account: (7)";

    ref.castAll(List.of(new Deposit("d1", 10), new Deposit("d2", 5)));
    assertThatThrownBy(() -> ref.call(new Withdraw("w", 1, false), Long.class, WAIT))
        .satisfies(e -> assertRejected(e, reason));
    await().atMost(WAIT).until(() -> heard.size() == 2);
    assertThat(heard)
        .containsExactly(new Deposit("d1", 10) + " " + reason, new Deposit("d2", 5) + " " + reason);
    assertThat(refusedCasts()).isEqualTo(2.0);

    Tuple tuid = Tuple.from(Account.KIND, 7L);
    ServerAdmin server = admin().server(tuid).orElseThrow();
    assertThat(server.state()).isEmpty();
    assertThat(server.queueLength()).isZero();
    assertThat(server.peek(10)).isEmpty();
    assertThat(server.stuck()).isEmpty();
    assertThat(server.deadLetters()).isEmpty();
    assertThat(server.lock()).isEmpty();
    // deactivated: no process stays loaded for a server that does not exist
    await()
        .atMost(WAIT)
        .until(
            () -> admin().servers().contains(new TenantAdmin.ServerEntry(tuid, "hosted (idle)")));

    accounts.opened.add(Tuple.from(7L)); // its next message tries init again, and creates it
    assertThat(deposit(ref, "d3", 4)).isEqualTo(4L);
    assertThat(statement(ref).applied()).containsExactly("d3");
    assertThat(server.state()).isPresent();
  }

  @Test
  void aDrainInTheCaller_refusesAsTheConsumeLoopDoes() {
    dgen.close();
    dgen =
        DGen.builder(backend)
            .backgroundConsumers(false)
            .meterRegistry(registry)
            .listener(
                new DGenListener() {
                  @Override
                  public void castRefused(
                      ServerRef<?> server, Object message, TerminalException why) {
                    heard.add(message + " " + why.getMessage());
                  }
                })
            .build();
    tenant = dgen.tenant(tenant.path().toArray(String[]::new));
    accounts.sink = account("sink", b -> b.consume(false));
    ServerRef<Msg> ref = account("a", b -> b.consumeK(8));
    ref.castAll(
        List.of(
            new Deposit("d1", 10),
            new Withdraw("w1", 50, false),
            new Withdraw("w2", 50, true),
            new Deposit("d2", 5)));

    assertThat(((ServerProcess<?, ?>) ref).drainInCaller(10)).isEqualTo(4);

    assertThat(admin().server(ref.tuid()).orElseThrow().state().orElseThrow().get("applied"))
        .hasToString("[\"d1\",\"d2\"]");
    assertThat(heard).hasSize(2);
    assertLeftNothing(ref, "w1");
    assertLeftNothing(ref, "w2");
  }
}

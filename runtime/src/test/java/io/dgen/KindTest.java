package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.TenantAdmin;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Typed kinds ({@link Kind}) and plain ids: a kind hosted by {@code Kind} is addressed by a string,
 * an integer or a tuple from any runtime, its servers' {@code init} and callbacks get the id in one
 * shape, a message of another type is refused before anything is written, and a kind's name has one
 * message type per runtime.
 */
class KindTest extends RuntimeTestBase {

  /** A call, of no server's message type here. */
  record Stranger() implements Call<Long> {}

  static final Kind<Ledger.Msg> LEDGER = Kind.of("ledger", Ledger.Msg.class);

  private static final Duration CALL = Duration.ofSeconds(30);

  private final Ledger.Seen seen = new Ledger.Seen();
  private final List<DGen> runtimes = new ArrayList<>();
  private final String[] path = {"kind", UUID.randomUUID().toString()};

  @AfterEach
  void closeRuntimes() {
    runtimes.forEach(DGen::close);
  }

  /** A hosted server that records the id its {@code init} and callbacks got. */
  static final class Ledger implements DGenServer<Ledger.State, Ledger.Msg> {

    record State(long total) {}

    sealed interface Msg permits Add, Get, Audit {}

    /** Adds {@code n}. */
    record Add(long n) implements Msg {}

    /** Replies the total. */
    record Get() implements Msg {}

    /** Takes the lock: {@code handleLocked} records the id it gets. */
    record Audit() implements Msg {}

    /** What the servers of one test saw, by tuid. */
    static final class Seen {
      final List<@Nullable Object> inits = new CopyOnWriteArrayList<>();
      final Map<Tuple, Object> callbackIds = new ConcurrentHashMap<>();
      final Map<Tuple, Object> lockedIds = new ConcurrentHashMap<>();
    }

    private final Seen seen;

    Ledger(Seen seen) {
      this.seen = seen;
    }

    @Override
    public InitResult<State> init(@Nullable Object id) {
      seen.inits.add(id);
      return InitResult.ok(new State(0));
    }

    @Override
    public Result<State> handleCastTx(TxContext tx, Msg message, State state) {
      seen.callbackIds.put(tx.tuid(), tx.id());
      if (message instanceof Add a) {
        return Result.noReply(new State(state.total() + a.n()));
      }
      if (message instanceof Audit) {
        return Result.lock(state);
      }
      return Result.noReply(state);
    }

    @Override
    public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state) {
      seen.callbackIds.put(tx.tuid(), tx.id());
      if (request instanceof Add a) {
        State next = new State(state.total() + a.n());
        return Result.reply(next.total(), next);
      }
      return Result.reply(state.total(), state);
    }

    @Override
    public Result<State> handleLocked(DbContext db, Event<Msg> event, State state) {
      seen.lockedIds.put(db.tuid(), db.id());
      return Result.noReply(state);
    }
  }

  /** Another behaviour, with another message type, for a kind's name hosted twice. */
  static final class Other implements DGenServer<Long, String> {
    @Override
    public InitResult<Long> init(@Nullable Object id) {
      return InitResult.ok(0L);
    }
  }

  private DGen runtime() {
    DGen d =
        DGen.builder(backend)
            .buckets(16)
            .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
            .build();
    runtimes.add(d);
    return d;
  }

  /** A runtime that hosts {@link #LEDGER} in the test's tenant. */
  private DGen holder() {
    DGen d = runtime();
    d.host(LEDGER, () -> new Ledger(seen), HostOptions.builder(d.tenant(path)).build());
    return d;
  }

  private TenantAdmin admin() {
    return new DGenAdmin(backend).tenant(path).orElseThrow();
  }

  /** Runs {@code body} in a transaction of the test's own, as a user's outbox code does. */
  private void inTransaction(java.util.function.Consumer<io.dgen.backend.Transaction> body) {
    backend.run(
        tx -> {
          body.accept(tx);
          return null;
        });
  }

  private static long ledgerTotal(ServerRef<Ledger.Msg> ref) {
    return ref.call(new Ledger.Get(), Long.class, CALL);
  }

  @Test
  void aKindHostedServer_isReachedByStringLongAndTupleIds_fromARuntimeThatDoesNotHostIt() {
    holder();
    DGen client = runtime();
    Tenant t = client.tenant(path);
    ServerRef<Ledger.Msg> alice = client.ref(t, LEDGER, "alice");
    ServerRef<Ledger.Msg> fortyTwo = client.ref(t, LEDGER, 42);
    ServerRef<Ledger.Msg> composite = client.ref(t, LEDGER, Tuple.from("eu", 7));

    alice.cast(new Ledger.Add(1));
    fortyTwo.cast(new Ledger.Add(2));
    assertThat(composite.call(new Ledger.Add(3), Long.class, CALL)).isEqualTo(3L);
    client.ref(t, LEDGER, Tuple.from("alice")).cast(new Ledger.Add(10)); // alice, as a tuple

    await().atMost(BULK_WAIT).until(() -> ledgerTotal(alice) == 11 && ledgerTotal(fortyTwo) == 2);
    assertThat(ledgerTotal(composite)).isEqualTo(3);
    assertThat(List.of(alice.tuid(), fortyTwo.tuid(), composite.tuid()))
        .containsExactly(
            Tuple.from("ledger", "alice"),
            Tuple.from("ledger", 42L),
            Tuple.from("ledger", "eu", 7L));
    assertThat(admin().servers())
        .extracting(TenantAdmin.ServerEntry::tuid)
        .containsExactlyInAnyOrder(alice.tuid(), fortyTwo.tuid(), composite.tuid());
  }

  @Test
  void init_getsTheIdAsTheRefGaveIt_andEveryCallbackGetsTheSameValue() {
    DGen d = holder();
    Tenant t = d.tenant(path);
    ServerRef<Ledger.Msg> alice = d.ref(t, LEDGER, "alice");
    ServerRef<Ledger.Msg> fortyTwo = d.ref(t, LEDGER, 42L);
    ServerRef<Ledger.Msg> composite = d.ref(t, LEDGER, Tuple.from("eu", 7));

    for (ServerRef<Ledger.Msg> r : List.of(alice, fortyTwo, composite)) {
      r.castAll(List.of(new Ledger.Add(1), new Ledger.Audit()));
    }
    await()
        .atMost(BULK_WAIT)
        .until(() -> seen.lockedIds.size() == 3 && admin().server(alice.tuid()).isPresent());

    assertThat(seen.inits).containsExactlyInAnyOrder("alice", 42L, Tuple.from("eu", 7L));
    Map<Tuple, Object> expected =
        Map.of(alice.tuid(), "alice", fortyTwo.tuid(), 42L, composite.tuid(), Tuple.from("eu", 7L));
    assertThat(seen.callbackIds).isEqualTo(expected);
    assertThat(seen.lockedIds).as("handleLocked's DbContext.id()").isEqualTo(expected);
  }

  @Test
  void aKindHostedByName_keepsGivingInitAndCallbacksItsIdAsATuple() {
    DGen d = runtime();
    Tenant t = d.tenant(path);
    d.host("ledger", () -> new Ledger(seen), HostOptions.builder(t).build());
    ServerRef<Ledger.Msg> byName = d.ref(t, "ledger", Tuple.from(42));

    byName.cast(new Ledger.Add(5));

    await().atMost(BULK_WAIT).until(() -> ledgerTotal(byName) == 5);
    assertThat(seen.inits).containsExactly(Tuple.from(42L));
    assertThat(seen.callbackIds)
        .containsExactly(Map.entry(Tuple.from("ledger", 42L), Tuple.from(42L)));
    assertThat(ledgerTotal(d.ref(t, LEDGER, 42)))
        .as("the same server through its Kind")
        .isEqualTo(5);
  }

  /** Where the ref a test sends through comes from. */
  enum Source {
    /** A runtime that does not host the kind: its ref knows only the Kind's message type. */
    ADDRESSING,
    /** The runtime that hosts the kind: its ref has the behaviour's types. */
    HOSTING,
    /** A server from {@code DGen.start}: the behaviour's declared types. */
    STARTED
  }

  /**
   * A message that is not of the kind's (or the started behaviour's) message type, sent through a
   * raw ref, is refused by every operation with {@link IllegalArgumentException}; the server's
   * queue, timers, dead letters, kept replies and state are as they were.
   */
  @ParameterizedTest
  @EnumSource(Source.class)
  @SuppressWarnings({"unchecked", "rawtypes"})
  void aMessageOfAnotherType_isRefusedByEveryOperation_beforeAnythingIsWritten(Source source) {
    DGen holder = holder();
    DGen client = runtime();
    ServerRef<Ledger.Msg> typed =
        switch (source) {
          case ADDRESSING -> client.ref(client.tenant(path), LEDGER, "bob");
          case HOSTING -> holder.ref(holder.tenant(path), LEDGER, "bob");
          case STARTED ->
              holder.start(
                  new Ledger(seen), null, StartOptions.builder(holder.tenant(path)).build());
        };
    typed.cast(new Ledger.Add(1));
    await().atMost(BULK_WAIT).until(() -> ledgerTotal(typed) == 1);
    ServerAdmin before = admin().server(typed.tuid()).orElseThrow();
    String state = String.valueOf(before.state().orElseThrow());
    ServerRef raw = typed;
    Object wrong = "not a Ledger.Msg";
    Call<Long> stranger = new Stranger(); // a call of another server's type

    List<ThrowingCallable> operations =
        List.of(
            () -> raw.cast(wrong),
            () -> raw.castAsync(wrong),
            () -> raw.castAll(List.of(new Ledger.Add(1), wrong)),
            () -> raw.castAfter(wrong, Duration.ofMillis(1)),
            () -> raw.castAt(wrong, Instant.now()),
            () -> raw.cast(wrong, "key-1"),
            () -> raw.call(wrong, Long.class, CALL),
            () -> raw.callAsync(stranger, CALL).join(),
            () -> raw.call(stranger, "key-2", CALL),
            () -> raw.submit(wrong),
            () -> raw.priorityCall(stranger),
            () -> raw.priorityCast(wrong),
            () -> inTransaction(tx -> raw.outbox().cast(tx, wrong)),
            () -> inTransaction(tx -> raw.outbox().castAll(tx, List.of(new Ledger.Add(1), wrong))),
            () -> inTransaction(tx -> raw.outbox().castAfter(tx, wrong, Duration.ofMillis(1))),
            () -> inTransaction(tx -> raw.outbox().cast(tx, wrong, "key-3")));
    for (int i = 0; i < operations.size(); i++) {
      assertThatThrownBy(operations.get(i))
          .as("operation %d", i)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(" is not a " + Ledger.Msg.class.getName());
    }

    ServerAdmin after = admin().server(typed.tuid()).orElseThrow();
    assertThat(after.queueLength()).isZero();
    assertThat(after.timers()).isEmpty();
    assertThat(after.deadLetters()).isEmpty();
    assertThat(after.keptReplies(10)).isEmpty();
    assertThat(String.valueOf(after.state().orElseThrow())).isEqualTo(state);
    assertThat(ledgerTotal(typed)).isEqualTo(1);
  }

  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void aMessageOfAnotherType_toAServerNeverAddressed_createsNothing() {
    DGen client = runtime(); // nothing hosts the kind: a push would create the server
    ServerRef raw = client.ref(client.tenant(path), LEDGER, "nobody");

    assertThatThrownBy(() -> raw.cast(42L))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("java.lang.Long is not a " + Ledger.Msg.class.getName());
    assertThatThrownBy(() -> raw.castAfter(42L, Duration.ofHours(1)))
        .isInstanceOf(IllegalArgumentException.class);

    assertThat(admin().servers()).isEmpty();
    assertThat(admin().server(raw.tuid())).isEmpty();
  }

  @Test
  void aKindsNameUnderTwoMessageTypes_isRefusedAtOnce() {
    DGen d = holder();
    Tenant elsewhere = d.tenant("kind", UUID.randomUUID().toString());
    Kind<String> asStrings = Kind.of("ledger", String.class);

    assertThatThrownBy(() -> d.host(asStrings, Other::new, HostOptions.builder(elsewhere).build()))
        .as("hosting the name with another type, in another tenant")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kind ledger")
        .hasMessageContaining(String.class.getName())
        .hasMessageContaining(Ledger.Msg.class.getName());
    assertThatThrownBy(() -> d.host("ledger", Other::new, HostOptions.builder(elsewhere).build()))
        .as("hosting the name by name, with a behaviour of another type")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kind ledger");
    assertThatThrownBy(() -> d.ref(d.tenant(path), asStrings, "x"))
        .as("addressing the hosted name with another type")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(Ledger.Msg.class.getName());

    DGen client = runtime();
    client.ref(client.tenant(path), LEDGER, "x");
    assertThatThrownBy(() -> client.ref(client.tenant(path), asStrings, "x"))
        .as("addressing the name with two types, hosting nothing")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kind ledger");
    assertThat(admin().servers()).isEmpty();
  }

  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void aBehaviourThatDoesNotAcceptTheKindsMessageType_isRefused() {
    DGen d = runtime();
    Kind raw = LEDGER;
    assertThatThrownBy(() -> d.host(raw, Other::new, HostOptions.builder(d.tenant(path)).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(Other.class.getName())
        .hasMessageContaining("does not accept");
    assertThat(admin().members()).as("a refused kind joins no placement").isEmpty();
  }

  /** A behaviour generic in its message type: only a {@code Kind} can say what it takes. */
  static final class Journal<M> implements DGenServer<Long, M> {
    @Override
    public InitResult<Long> init(@Nullable Object id) {
      return InitResult.ok(0L);
    }

    @Override
    public Result<Long> handleCast(M message, Long count) {
      return Result.noReply(count + 1);
    }

    @Override
    public Result<Long> handleCall(M request, From from, Long count) {
      return Result.reply(count, count);
    }
  }

  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void aBehaviourGenericInItsMessageType_takesTheKindsType() {
    DGen d = runtime();
    Tenant t = d.tenant(path);
    assertThatThrownBy(() -> d.host("journal", Journal::new, HostOptions.builder(t).build()))
        .as("by name, nothing says what it takes")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cannot resolve the message type");
    Kind<Ledger.Msg> journal = Kind.of("journal", Ledger.Msg.class);
    d.host(journal, Journal::new, HostOptions.builder(t).build());
    ServerRef<Ledger.Msg> ref = d.ref(t, journal, 1);

    ref.castAll(List.of(new Ledger.Add(1), new Ledger.Get()));
    assertThatThrownBy(() -> ((ServerRef) ref).cast("not a Ledger.Msg"))
        .isInstanceOf(IllegalArgumentException.class);

    await().atMost(BULK_WAIT).until(() -> ref.call(new Ledger.Get(), Long.class, CALL) == 2L);
  }

  @Test
  void nullsAndBlankNames_areRefusedClearly_andNothingIsWritten() {
    DGen d = holder();
    Tenant t = d.tenant(path);
    ServerRef<Ledger.Msg> ref = d.ref(t, LEDGER, "n");
    HostOptions options = HostOptions.builder(t).build();

    assertThatThrownBy(() -> Kind.of(null, String.class))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("kind must not be null");
    assertThatThrownBy(() -> Kind.of("k", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("messageType must not be null");
    assertThatThrownBy(() -> Kind.of(" ", String.class))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("blank");
    assertThatThrownBy(() -> Kind.of("k", int.class))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("primitive");
    assertThatThrownBy(() -> d.host((Kind<Ledger.Msg>) null, () -> new Ledger(seen), options))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("kind must not be null");
    assertThatThrownBy(() -> d.host(Kind.of("other", Ledger.Msg.class), null, options))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("behaviour must not be null");
    assertThatThrownBy(() -> d.ref(t, (Kind<Ledger.Msg>) null, "a"))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("kind must not be null");
    assertThatThrownBy(() -> d.ref(null, LEDGER, 1))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("tenant must not be null");
    assertThatThrownBy(() -> d.ref(t, LEDGER, (String) null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("id must not be null");
    assertThatThrownBy(() -> d.ref(t, LEDGER, (Tuple) null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("id must not be null");
    assertThatThrownBy(() -> ref.cast(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("message must not be null");
    assertThatThrownBy(() -> ref.castAll(java.util.Arrays.asList(new Ledger.Add(1), null)))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("message must not be null");
    assertThatThrownBy(() -> ref.call(null, Long.class, CALL))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("request must not be null");
    assertThatThrownBy(() -> ref.submit(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> ref.priorityCast(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("message must not be null");

    assertThat(admin().servers()).isEmpty();
  }

  @Test
  void aKind_isAValue_namedByItsParts() {
    assertThat(Kind.of("ledger", Ledger.Msg.class)).isEqualTo(LEDGER).hasSameHashCodeAs(LEDGER);
    assertThat(Kind.of("ledger", Ledger.Add.class)).isNotEqualTo(LEDGER);
    assertThat(Kind.of("journal", Ledger.Msg.class)).isNotEqualTo(LEDGER);
    assertThat(LEDGER.name()).isEqualTo("ledger");
    assertThat(LEDGER.messageType()).isEqualTo(Ledger.Msg.class);
    assertThat(LEDGER).hasToString("Kind[ledger, " + Ledger.Msg.class.getName() + "]");
  }
}

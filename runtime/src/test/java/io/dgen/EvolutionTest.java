package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerControl;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import tools.jackson.databind.node.ObjectNode;

/**
 * Two versions of one application over the same stored data, in every state encoding: version 1
 * stores state, queued items, a dead letter, a timer and a kept reply; version 2 renames classes
 * (aliases), adds and removes fields and migrates, and reads all of it. And a rolling deploy: a
 * version 2 message reaching a version 1 consumer is moved aside, never lost or mis-decoded, and is
 * re-queued once version 2 consumes.
 */
class EvolutionTest extends RuntimeTestBase {

  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  /** Version 1 of the application. */
  static final class V1 {
    record Entry(String id, long amount) {}

    @TypeName("evo.account")
    record Account(String owner, long balance, String legacy, List<Entry> entries) {}

    sealed interface Msg {}

    @TypeName("evo.deposit")
    record Deposit(long amount) implements Msg {}

    /** Not annotated: stored under its class name. */
    record Note(String text) implements Msg {}

    @TypeName("evo.memo")
    record Memo(String text) implements Msg {}

    @TypeName("evo.poison")
    record Poison(String why) implements Msg {}

    @TypeName("evo.get")
    record Get() implements Msg, Call<Balance> {}

    @TypeName("evo.balance")
    record Balance(long amount) {}

    @TypeName("evo.bank")
    static final class Bank implements DGenServer<Account, Msg> {
      @Override
      public InitResult<Account> init(@Nullable Object arg) {
        return InitResult.ok(new Account("nobody", 0, "legacy", List.of()));
      }

      @Override
      public Result<Account> handleCast(Msg m, Account s) {
        if (m instanceof Deposit d) {
          List<Entry> entries = new ArrayList<>(s.entries());
          entries.add(new Entry("e" + entries.size(), d.amount()));
          return Result.noReply(
              new Account(s.owner(), s.balance() + d.amount(), s.legacy(), entries));
        }
        if (m instanceof Note n) {
          return Result.noReply(new Account(n.text(), s.balance(), s.legacy(), s.entries()));
        }
        if (m instanceof Memo n) {
          return Result.noReply(new Account(n.text(), s.balance(), s.legacy(), s.entries()));
        }
        if (m instanceof Poison p) {
          throw new IllegalStateException("version 1 cannot take " + p.why());
        }
        return Result.noReply(s);
      }

      @Override
      public Result<Account> handleCall(Msg m, From from, Account s) {
        return Result.reply(m instanceof Get ? new Balance(s.balance()) : s, s);
      }
    }
  }

  /**
   * Version 2: the account counts cents (migrated), lost {@code legacy} and gained {@code
   * currency}; deposits are credits in cents under a new name (alias); the note gained a field and
   * a logical name (its old class name is an alias); the memo gained an author (migrated); the
   * reply counts cents (migrated); the behaviour has a new logical name (the old one is an alias).
   */
  static final class V2 {
    record Entry(String id, long cents) {}

    @TypeName(value = "evo.account", version = 2)
    record Account(String owner, long cents, List<Entry> entries, @Nullable String currency) {}

    sealed interface Msg {}

    @TypeName(value = "evo.credit", aliases = "evo.deposit", version = 2)
    record Credit(long cents) implements Msg {}

    @TypeName(value = "evo.note", aliases = "io.dgen.EvolutionTest$V1$Note")
    record Note(String text, int priority) implements Msg {}

    @TypeName(value = "evo.memo", version = 2)
    record Memo(String text, String author) implements Msg {}

    @TypeName("evo.poison")
    record Poison(String why) implements Msg {}

    @TypeName("evo.get")
    record Get() implements Msg, Call<Balance> {}

    @TypeName(value = "evo.balance", version = 2)
    record Balance(long cents) {}

    /** Replies with the whole state. */
    @TypeName("evo.state")
    record GetState() implements Msg {}

    @TypeName(value = "evo.ledger", aliases = "evo.bank")
    static final class Ledger implements DGenServer<Account, Msg> {
      @Override
      public InitResult<Account> init(@Nullable Object arg) {
        return InitResult.ok(new Account("nobody", 0, List.of(), "EUR"));
      }

      @Override
      public Result<Account> handleCast(Msg m, Account s) {
        if (m instanceof Credit c) {
          List<Entry> entries = new ArrayList<>(s.entries());
          entries.add(new Entry("e" + entries.size(), c.cents()));
          return Result.noReply(
              new Account(s.owner(), s.cents() + c.cents(), entries, s.currency()));
        }
        if (m instanceof Note n) {
          return Result.noReply(
              new Account(n.text() + "/" + n.priority(), s.cents(), s.entries(), s.currency()));
        }
        if (m instanceof Memo n) {
          return Result.noReply(
              new Account(n.text() + " by " + n.author(), s.cents(), s.entries(), s.currency()));
        }
        if (m instanceof Poison p) {
          return Result.noReply(
              new Account("cured:" + p.why(), s.cents(), s.entries(), s.currency()));
        }
        return Result.noReply(s);
      }

      @Override
      public Result<Account> handleCall(Msg m, From from, Account s) {
        return Result.reply(m instanceof Get ? new Balance(s.cents()) : s, s);
      }
    }
  }

  final ManualTestClock clock = new ManualTestClock(T0);
  final List<DGen> runtimes = new ArrayList<>();

  @AfterEach
  void closeRuntimes() {
    runtimes.forEach(DGen::close);
  }

  DGen version1(StateEncoding encoding) {
    return runtime(DGen.builder(backend).stateEncoding(encoding));
  }

  /** Version 2's runtime, with its migrations. */
  DGen version2(StateEncoding encoding) {
    return runtime(
        DGen.builder(backend)
            .stateEncoding(encoding)
            .migration(
                "evo.account",
                1,
                tree -> {
                  ObjectNode o = (ObjectNode) tree;
                  o.put("cents", o.get("balance").asLong() * 100);
                  o.remove("balance");
                  for (var e : o.withArray("entries")) {
                    ObjectNode entry = (ObjectNode) e;
                    entry.put("cents", entry.get("amount").asLong() * 100);
                    entry.remove("amount");
                  }
                  return o;
                })
            .migration("evo.credit", 1, tree -> cents((ObjectNode) tree, "amount"))
            .migration("evo.balance", 1, tree -> cents((ObjectNode) tree, "amount"))
            .migration("evo.memo", 1, tree -> ((ObjectNode) tree).put("author", "unknown")));
  }

  private static ObjectNode cents(ObjectNode o, String field) {
    o.put("cents", o.get(field).asLong() * 100);
    o.remove(field);
    return o;
  }

  private DGen runtime(DGen.Builder b) {
    DGen d = b.clock(clock).retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50)).build();
    runtimes.add(d);
    return d;
  }

  private Tenant in(DGen d) {
    return d.tenant(tenant.path().toArray(String[]::new));
  }

  private String storedStateTag(ServerRef<?> ref) {
    ServerKeys keys =
        new ServerKeys(tenant.subspace(), Buckets.of(tenant.bucketCount()), ref.tuid());
    byte[] tag = backend.run(tx -> tx.get(keys.stateTagKey()));
    return tag == null ? "(none)" : new String(tag, StandardCharsets.UTF_8);
  }

  @ParameterizedTest
  @EnumSource(StateEncoding.class)
  void version2_readsEverythingVersion1Stored(StateEncoding encoding) {
    DGen one = version1(encoding);
    ProcessRef<V1.Msg> v1 =
        one.start(
            new V1.Bank(),
            null,
            StartOptions.builder(in(one))
                .allowTypes(V1.Balance.class)
                .deadLetterThreshold(1)
                .build());
    assertThat((Object) v1.tuid()).isEqualTo(Tuple.from("dgen_server", "evo.bank"));
    v1.cast(new V1.Deposit(5));
    assertThat(v1.<V1.Balance>call(new V1.Get())).isEqualTo(new V1.Balance(5));
    String kept = v1.submit(new V1.Get()); // a kept reply, read by version 2
    assertThat(v1.<V1.Balance>awaitReply(kept, Duration.ofSeconds(30)))
        .isEqualTo(new V1.Balance(5));
    v1.cast(new V1.Poison("bad"));
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(v1).deadLetters().size() == 1);
    v1.stop();
    // Queued items and a timer that version 1 never consumes.
    ServerRef<V1.Msg> publisher =
        one.start(
            new V1.Bank(),
            null,
            StartOptions.builder(in(one)).allowTypes(V1.Balance.class).consume(false).build());
    publisher.cast(new V1.Deposit(7));
    publisher.cast(new V1.Note("ann"));
    publisher.cast(new V1.Memo("memo"));
    publisher.castAfter(new V1.Deposit(11), Duration.ofMinutes(1));
    assertThat(ServerControl.of(publisher).queueLength()).isEqualTo(3);
    assertThat(storedStateTag(publisher)).isEqualTo("evo.account");
    one.close();

    DGen two = version2(encoding);
    ServerRef<V2.Msg> v2 =
        two.start(
            new V2.Ledger(),
            null,
            StartOptions.builder(in(two)).allowTypes(V2.Balance.class).build());
    assertThat((Object) v2.tuid())
        .isEqualTo(Tuple.from("dgen_server", "evo.bank")); // found by its alias
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(v2).queueLength() == 0 && stateOf(v2).cents() == 1_200);
    V2.Account state = stateOf(v2);
    assertThat(state.owner()).isEqualTo("memo by unknown"); // the note, then the migrated memo
    assertThat(state.entries()).containsExactly(new V2.Entry("e0", 500), new V2.Entry("e1", 700));
    assertThat(state.currency()).isNull(); // gained: the default
    assertThat(storedStateTag(v2)).isEqualTo("evo.account#2"); // the write stored version 2
    // The kept reply, stored at version 1, is read migrated.
    assertThat(v2.<V2.Balance>awaitReply(kept, Duration.ofSeconds(30)))
        .isEqualTo(new V2.Balance(500));
    // The dead letter, stored at version 1 under the same name, decodes and re-queues.
    List<DeadLetter<V2.Msg>> dead = ServerControl.of(v2).deadLetters();
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).message()).isEqualTo(new V2.Poison("bad"));
    assertThat(ServerControl.of(v2).requeueDeadLetter(dead.get(0).id(), false)).isTrue();
    await().atMost(Duration.ofSeconds(30)).until(() -> stateOf(v2).owner().equals("cured:bad"));
    // The timer, stored by version 1 with its version 1 deposit, fires into version 2.
    clock.advance(Duration.ofMinutes(2));
    two.clockAdvanced();
    await().atMost(Duration.ofSeconds(30)).until(() -> stateOf(v2).cents() == 2_300);
    assertThat(stateOf(v2).entries()).last().isEqualTo(new V2.Entry("e2", 1_100));
  }

  @ParameterizedTest
  @EnumSource(StateEncoding.class)
  void rollingDeploy_aVersion2MessageAtAVersion1Consumer_isMovedAsideAndRequeued(
      StateEncoding encoding) {
    DGen one = version1(encoding);
    ProcessRef<V1.Msg> v1 =
        one.start(
            new V1.Bank(),
            null,
            StartOptions.builder(in(one)).allowTypes(V1.Balance.class).build());
    v1.cast(new V1.Deposit(1));
    DGen two = version2(encoding);
    ServerRef<V2.Msg> producer =
        two.start(
            new V2.Ledger(),
            null,
            StartOptions.builder(in(two)).allowTypes(V2.Balance.class).consume(false).build());
    producer.cast(new V2.Credit(300)); // a name version 1 does not know
    producer.cast(new V2.Memo("hello", "ann")); // a name it knows, at a newer version
    v1.cast(new V1.Deposit(2)); // behind them, and still applied
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                ServerControl.of(v1).queueLength() == 0
                    && ServerControl.of(v1).deadLetters().size() == 2);
    assertThat(v1.<V1.Balance>call(new V1.Get())).isEqualTo(new V1.Balance(3));
    List<DeadLetter<V1.Msg>> aside = ServerControl.of(v1).deadLetters();
    assertThat(aside).extracting(DeadLetter::message).containsOnlyNulls();
    assertThat(aside.get(0).lastError())
        .contains("UndecodableDataException", "storedType=evo.credit", "storedVersion=2", "key=")
        .contains("tuid=" + v1.tuid());
    assertThat(aside.get(1).lastError())
        .contains("newer than this code", "storedType=evo.memo", "storedVersion=2");
    v1.stop();

    ServerRef<V2.Msg> v2 =
        two.start(
            new V2.Ledger(),
            null,
            StartOptions.builder(in(two)).allowTypes(V2.Balance.class).build());
    List<DeadLetter<V2.Msg>> dead = ServerControl.of(v2).deadLetters();
    assertThat(dead)
        .extracting(DeadLetter::message)
        .containsExactly(new V2.Credit(300), new V2.Memo("hello", "ann"));
    for (DeadLetter<V2.Msg> d : dead) {
      assertThat(ServerControl.of(v2).requeueDeadLetter(d.id(), false)).isTrue();
    }
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> ServerControl.of(v2).queueLength() == 0 && stateOf(v2).cents() == 600);
    assertThat(stateOf(v2).owner()).isEqualTo("hello by ann");
  }

  private static V2.Account stateOf(ServerRef<V2.Msg> ref) {
    return ref.call(new V2.GetState(), V2.Account.class, Duration.ofSeconds(10));
  }
}

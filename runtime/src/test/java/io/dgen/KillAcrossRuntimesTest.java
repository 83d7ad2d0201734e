package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.ByteArrayUtil;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import io.dgen.backend.KeyValue;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A kill in one runtime ends the server everywhere: processes of the same server in other runtimes
 * (several {@link DGen}s on one backend stand for several JVMs: they share nothing but the
 * database) stop within seconds, and a publish to the killed server, from any runtime and by any
 * route, fails with {@link ServerStoppedException} and writes nothing.
 */
class KillAcrossRuntimesTest extends RuntimeTestBase {

  private static final Duration WITHIN = Duration.ofSeconds(5);

  private ProcessRef<Msg> startIn(DGen runtime, Consumer<StartOptions.Builder> options) {
    StartOptions.Builder b =
        StartOptions.builder(runtime.tenant(tenant.path().toArray(String[]::new)));
    options.accept(b);
    return runtime.start(new TestServer(hooks), null, b.build());
  }

  /** Every key of the test's tenant, printable: what a publish must leave unchanged. */
  private List<String> tenantKeys() {
    byte[] begin = tenant.subspace().range().begin;
    byte[] end = tenant.subspace().range().end;
    return backend.run(tx -> tx.getRange(begin, end)).stream()
        .map(KeyValue::key)
        .map(ByteArrayUtil::printable)
        .toList();
  }

  @ParameterizedTest(name = "cache={0}")
  @ValueSource(booleans = {true, false})
  void aKillInOneRuntime_stopsTheServersConsumersInOthers_withinSeconds(boolean cache) {
    ServerRef<Msg> here = start(b -> b.cache(cache));
    try (DGen elsewhere = newDGen()) {
      ProcessRef<Msg> there = startIn(elsewhere, b -> b.cache(cache));
      there.cast(new Add(2));
      awaitTotal(there, 2); // both consumers ran or looked, then parked

      ServerControl.of(here).kill("test");

      await().atMost(WITHIN).until(() -> !there.isAlive());
      assertThat(there.termination()).succeedsWithin(WITHIN);
      assertThatThrownBy(() -> there.cast(new Add(1))).isInstanceOf(ServerStoppedException.class);
      assertThat(serverRows(there)).isEmpty();
    }
  }

  /** One way to publish to a server. */
  private interface Publish {
    void to(ProcessRef<Msg> ref) throws Throwable;
  }

  @Test
  void aPublishToAKilledServer_failsWithServerStopped_andWritesNothing() {
    List<Publish> publishes =
        List.of(
            r -> r.cast(new Add(1)),
            r -> r.castAll(List.of(new Add(1), new Add(2))),
            r -> r.call(new TestServer.Get(), Duration.ofSeconds(5)),
            r -> join(r.callAsync(new TestServer.Get(), Duration.ofSeconds(5))),
            r -> r.castAfter(new Add(1), Duration.ofMillis(1)),
            r -> r.castAt(new Add(1), Instant.now().plusSeconds(60)),
            r -> r.cast(new Add(1), "key-1"),
            r -> r.call(new TestServer.Get(), "key-2", Duration.ofSeconds(5)),
            r -> r.submit(new TestServer.Get()),
            r -> inOwnTransaction(tx -> r.outbox().cast(tx, new Add(1))),
            r -> inOwnTransaction(tx -> r.outbox().castAll(tx, List.of(new Add(1), new Add(2)))),
            r ->
                inOwnTransaction(tx -> r.outbox().castAfter(tx, new Add(1), Duration.ofMinutes(1))),
            r -> inOwnTransaction(tx -> r.outbox().cast(tx, new Add(1), "key-3")));
    ServerRef<Msg> here = start();
    try (DGen elsewhere = newDGen()) {
      // Publishers only, one per way to publish (the first failure stops its process): no
      // consumer of their own that could notice the kill first.
      List<ProcessRef<Msg>> there = new ArrayList<>();
      for (int i = 0; i < publishes.size(); i++) {
        there.add(startIn(elsewhere, b -> b.consume(false)));
      }
      there.get(0).cast(new Add(1));
      awaitTotal(here, 1);

      ServerControl.of(here).kill("test");
      List<String> afterKill = tenantKeys();

      for (int i = 0; i < publishes.size(); i++) {
        ProcessRef<Msg> ref = there.get(i);
        Publish publish = publishes.get(i);
        assertThat(ref.isAlive()).isTrue();
        assertThatThrownBy(() -> publish.to(ref))
            .as("publish #%d", i)
            .isInstanceOf(ServerStoppedException.class)
            .hasMessageContaining("killed")
            .hasMessageContaining("tuid=");
        assertThat(ref.isAlive()).as("process of publish #%d", i).isFalse();
      }
      assertThat(tenantKeys()).as("keys of the tenant").isEqualTo(afterKill);
    }
  }

  @Test
  void aPublishRacingAKill_eitherFailsOrIsErasedByIt() {
    ServerRef<Msg> here = start();
    try (DGen elsewhere = newDGen()) {
      ProcessRef<Msg> there = startIn(elsewhere, b -> b.consume(false));
      AtomicInteger sent = new AtomicInteger();
      CompletableFuture<Void> publisher =
          CompletableFuture.runAsync(
              () -> {
                try {
                  while (true) {
                    there.cast(new Add(1));
                    sent.incrementAndGet();
                  }
                } catch (ServerStoppedException expected) {
                  // the kill won: from now on every publish fails
                }
              });
      await().atMost(WITHIN).until(() -> sent.get() > 10);
      ServerControl.of(here).kill("test");
      assertThat(publisher).succeedsWithin(WITHIN);
      assertThat(serverRows(there)).isEmpty();
    }
  }

  /** Every key under the server's subspace. */
  private List<KeyValue> serverRows(ProcessRef<Msg> ref) {
    var root = tenant.subspace().subspace(ref.tuid());
    return backend.run(tx -> tx.getRange(root.range().begin, root.range().end));
  }

  private static void join(CompletableFuture<?> f) throws Throwable {
    try {
      f.get();
    } catch (ExecutionException e) {
      throw e.getCause();
    }
  }

  /** Runs {@code body} in a transaction of the user's own (the outbox's). */
  private void inOwnTransaction(Consumer<io.dgen.backend.Transaction> body) {
    backend.run(
        tx -> {
          body.accept(tx);
          return null;
        });
  }

  /** The messages of a server before a redeploy: an index of the type table each. */
  sealed interface Before {}

  /** Sorted first in the type table: index 0. */
  record Alpha(String text) implements Before {}

  record Beta(long n) implements Before {}

  /** The messages of the same server after the redeploy: another table, built anew. */
  sealed interface After {}

  /** Sorted first in the new table: index 0, and it decodes Alpha's bytes without a complaint. */
  record Gamma(String text) implements After {}

  /** Replies what the server recorded. */
  record Recorded() implements After, Call<List<String>> {}

  record Delta(long n) implements After {}

  private static final com.apple.foundationdb.tuple.Tuple SHAPED =
      com.apple.foundationdb.tuple.Tuple.from("shaped");

  /** A server that records the messages it applies; a call replies the record. */
  abstract static class Recording<M> implements DGenServer<List<String>, M> {
    @Override
    public InitResult<List<String>> init(Object arg) {
      return InitResult.ok(SHAPED, List.of());
    }

    @Override
    public Result<List<String>> handleCast(M message, List<String> state) {
      List<String> next = new ArrayList<>(state);
      next.add(message.toString());
      return Result.noReply(next);
    }

    @Override
    public Result<List<String>> handleCall(M request, From from, List<String> state) {
      return Result.reply(state, state);
    }
  }

  /** A server of the first version. */
  static final class BeforeServer extends Recording<Before> {}

  /** The second version of the same server (same tuid), with another message set. */
  static final class AfterServer extends Recording<After> {}

  /**
   * Kills the server from {@code elsewhere} and starts it there again with another message set
   * ({@link AfterServer}'s), consuming.
   */
  private ProcessRef<After> redeploy(DGen elsewhere) {
    Tenant there = elsewhere.tenant(tenant.path().toArray(String[]::new));
    ServerControl.of(
            elsewhere.start(
                new BeforeServer(), null, StartOptions.builder(there).consume(false).build()))
        .kill("redeploy");
    return elsewhere.start(new AfterServer(), null, StartOptions.builder(there).build());
  }

  /**
   * A publish-only process learned the server's type table; the server is killed elsewhere and
   * started again with another message set, whose table gives the same index to another class. The
   * stale process's message must never be decoded as that class: its publish fails, writes nothing,
   * and the process stops, as after a kill; a process started now works.
   */
  @Test
  void aProcessOfAKilledServer_startedAgainWithOtherMessages_neverHasItsMessagesMisdecoded() {
    ProcessRef<Before> stale =
        dgen.start(new BeforeServer(), null, StartOptions.builder(tenant).consume(false).build());
    stale.cast(new Alpha("before the redeploy"));

    try (DGen elsewhere = newDGen()) {
      ServerRef<After> redeployed = redeploy(elsewhere);

      assertThatThrownBy(() -> stale.cast(new Alpha("stale")))
          .isInstanceOf(ServerStoppedException.class)
          .hasMessageContaining("started again");
      assertThat(stale.isAlive()).isFalse();

      redeployed.cast(new Gamma("fresh"));
      ServerRef<After> now =
          dgen.start(new AfterServer(), null, StartOptions.builder(tenant).consume(false).build());
      now.cast(new Delta(7));
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> redeployed.priorityCall(new Recorded()).size() == 2);
      assertThat(redeployed.priorityCall(new Recorded()))
          .containsExactly("Gamma[text=fresh]", "Delta[n=7]");
    }
  }

  /**
   * A consumer of a server that is killed and started again elsewhere with another message set must
   * not run its own callbacks on the new server's messages: it stops, whether a batch finds the
   * server gone or finds it started again.
   */
  @Test
  void aConsumerOfAKilledServer_startedAgainWithOtherMessages_stopsWithoutApplyingThem() {
    ProcessRef<Before> stale =
        dgen.start(new BeforeServer(), null, StartOptions.builder(tenant).build());
    stale.cast(new Alpha("before the redeploy"));

    try (DGen elsewhere = newDGen()) {
      ServerRef<After> redeployed = redeploy(elsewhere);
      redeployed.cast(new Gamma("fresh"));

      await().atMost(WITHIN).until(() -> !stale.isAlive());
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> redeployed.priorityCall(new Recorded()).size() == 1);
      assertThat(redeployed.priorityCall(new Recorded())).containsExactly("Gamma[text=fresh]");
    }
  }

  /**
   * A kill whose commit applied but raised {@code commit_unknown_result} runs again; meanwhile the
   * server was started again elsewhere. The retry must not remove the new server.
   */
  @Test
  void aKillRetriedAfterAnApplied1021_sparesTheServerStartedInBetween() {
    ProcessRef<Msg> killed = start(b -> b.consume(false));
    try (DGen elsewhere = newDGen()) {
      List<ProcessRef<Msg>> restarted = new ArrayList<>();
      faults().commitUnknownResult(1, true);
      faults()
          .afterAppliedUnknownResult(() -> restarted.add(startIn(elsewhere, b -> b.consumeK(1))));

      ServerControl.of(killed).kill("retried");

      assertThat(restarted).hasSize(1);
      ProcessRef<Msg> again = restarted.get(0);
      assertThat(again.isAlive()).isTrue();
      again.cast(new Add(3));
      awaitTotal(again, 3);
      assertThat(killed.isAlive()).isFalse();
    }
  }
}

package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.ByteArrayUtil;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Msg;
import io.dgen.backend.KeyValue;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
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

  private ServerRef<Msg> startIn(DGen runtime, Consumer<StartOptions.Builder> options) {
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
      ServerRef<Msg> there = startIn(elsewhere, b -> b.cache(cache));
      there.cast(new Add(2));
      awaitTotal(there, 2); // both consumers ran or looked, then parked

      here.kill("test");

      await().atMost(WITHIN).until(() -> !there.isAlive());
      assertThat(there.termination()).succeedsWithin(WITHIN);
      assertThatThrownBy(() -> there.cast(new Add(1))).isInstanceOf(ServerStoppedException.class);
      assertThat(serverRows(there)).isEmpty();
    }
  }

  @Test
  void aPublishToAKilledServer_failsWithServerStopped_andWritesNothing() {
    ServerRef<Msg> here = start();
    try (DGen elsewhere = newDGen()) {
      // A publisher only: no consumer of its own that could notice the kill first.
      ServerRef<Msg> there = startIn(elsewhere, b -> b.consume(false));
      there.cast(new Add(1));
      awaitTotal(here, 1);

      here.kill("test");
      List<String> afterKill = tenantKeys();

      List<ThrowingCallable> publishes =
          List.of(
              () -> there.cast(new Add(1)),
              () -> there.castAll(List.of(new Add(1), new Add(2))),
              () -> there.call(new TestServer.Get(), Duration.ofSeconds(5)),
              () -> join(there.callAsync(new TestServer.Get(), Duration.ofSeconds(5))),
              () -> there.castAfter(new Add(1), Duration.ofMillis(1)),
              () -> there.castAt(new Add(1), Instant.now().plusSeconds(60)),
              () -> there.cast(new Add(1), "key-1"),
              () -> there.call(new TestServer.Get(), "key-2", Duration.ofSeconds(5)),
              () -> there.submit(new TestServer.Get()),
              () -> outbox(there, o -> (tx) -> o.cast(tx, new Add(1))),
              () -> outbox(there, o -> (tx) -> o.castAll(tx, List.of(new Add(1), new Add(2)))),
              () -> outbox(there, o -> (tx) -> o.castAfter(tx, new Add(1), Duration.ofMinutes(1))),
              () -> outbox(there, o -> (tx) -> o.cast(tx, new Add(1), "key-3")));
      for (int i = 0; i < publishes.size(); i++) {
        assertThatThrownBy(publishes.get(i))
            .as("publish #%d", i)
            .isInstanceOf(ServerStoppedException.class)
            .hasMessageContaining("tuid=");
      }
      assertThat(tenantKeys()).as("keys of the tenant").isEqualTo(afterKill);
    }
  }

  @Test
  void aPublishRacingAKill_eitherFailsOrIsErasedByIt() {
    ServerRef<Msg> here = start();
    try (DGen elsewhere = newDGen()) {
      ServerRef<Msg> there = startIn(elsewhere, b -> b.consume(false));
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
      here.kill("test");
      assertThat(publisher).succeedsWithin(WITHIN);
      assertThat(serverRows(there)).isEmpty();
    }
  }

  /** Every key under the server's subspace. */
  private List<KeyValue> serverRows(ServerRef<Msg> ref) {
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

  /** Runs one outbox use in a transaction of the user's own. */
  private void outbox(
      ServerRef<Msg> ref,
      java.util.function.Function<Outbox<Msg>, Consumer<io.dgen.backend.Transaction>> use) {
    Consumer<io.dgen.backend.Transaction> body = use.apply(ref.outbox());
    backend.run(
        tx -> {
          body.accept(tx);
          return null;
        });
  }
}

package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerControl;
import io.dgen.backend.KeyHeatBackend;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.TenantKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * No key, and no range appended to, is touched by every message of a tenant: with 1,000 uniformly
 * loaded servers, the hottest one takes at most 0.01 committed mutations per message, whether the
 * servers are hosted (addressed by id) or started, batched or not. Counts, not timings: the memory
 * backend counts exactly what FoundationDB would be sent. (Two of the four combinations here, to
 * keep the build short; the benchmark's hot-key rows measure all four.)
 */
class HotKeyTest {

  private static final int SERVERS = 1_000;
  private static final int PER_SERVER = 4;

  @ParameterizedTest(name = "hosted={0} consumeK={1}")
  @CsvSource({"true, 1", "false, 16"}) // the benchmark's hot-key rows measure all four
  void theHottestKeyOrAppendedRange_takesAtMostOneHundredthOfTheMessages(
      boolean hosted, int consumeK) {
    KeyHeatBackend heat = KeyHeatBackend.wrap(MemoryBackend.create());
    Tally.Seen seen = new Tally.Seen();
    try (DGen dgen = DGen.builder(heat).build()) {
      Tenant tenant = dgen.tenant("hot", UUID.randomUUID().toString());
      List<ServerRef<Tally.Msg>> servers = new ArrayList<>();
      if (hosted) {
        dgen.host(
            "tally",
            () -> new Tally(seen, "one"),
            HostOptions.builder(tenant).consumeK(consumeK).build());
        for (int s = 0; s < SERVERS; s++) {
          servers.add(dgen.ref(tenant, "tally", Tuple.from(s)));
        }
      } else {
        for (int s = 0; s < SERVERS; s++) {
          servers.add(
              dgen.start(
                  new Started(seen, Tuple.from("tally", s)),
                  null,
                  StartOptions.builder(tenant).consumeK(consumeK).build()));
        }
      }
      heat.reset(); // what the messages cost, not the starts
      for (int i = 0; i < PER_SERVER; i++) {
        for (ServerRef<Tally.Msg> s : servers) {
          s.cast(new Tally.Add(1));
        }
      }
      // reads only, which mutate nothing; one wait for all (a wait per server costs its first
      // poll's delay a thousand times)
      await()
          .atMost(Duration.ofMinutes(5))
          .until(() -> servers.stream().allMatch(s -> ServerControl.of(s).queueLength() == 0));
      long messages = (long) SERVERS * PER_SERVER;
      // A hosting runtime's member record is rewritten once a second whatever the load (its
      // heartbeat): not a key messages touch. Every other key counts.
      byte[] members =
          new TenantKeys(tenant.subspace(), Buckets.of(tenant.bucketCount())).members().getKey();
      KeyHeatBackend.Hot hottest = heat.hottestOutside(members).orElseThrow();
      assertThat((double) hottest.mutations() / messages)
          .as("mutations per message of the hottest: %s", hottest)
          .isLessThanOrEqualTo(0.01);
      for (ServerRef<Tally.Msg> s : servers) {
        assertThat(s.call(new Tally.Get(), Tally.State.class, Duration.ofSeconds(30)).total())
            .isEqualTo(PER_SERVER);
      }
    }
  }

  /** {@link Tally} started rather than hosted, with its tuid chosen by its init. */
  private static final class Started implements DGenServer<Tally.State, Tally.Msg> {
    private final Tally tally;
    private final Tuple tuid;

    Started(Tally.Seen seen, Tuple tuid) {
      this.tally = new Tally(seen, "one");
      this.tuid = tuid;
    }

    @Override
    public InitResult<Tally.State> init(Object arg) {
      return InitResult.ok(tuid, new Tally.State(0, 0));
    }

    @Override
    public Result<Tally.State> handleCastTx(TxContext tx, Tally.Msg m, Tally.State s) {
      return tally.handleCastTx(tx, m, s);
    }

    @Override
    public Result<Tally.State> handleCallTx(TxContext tx, Tally.Msg m, From f, Tally.State s) {
      return tally.handleCallTx(tx, m, f, s);
    }
  }
}

package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.TestServer.Add;
import io.dgen.TestServer.Msg;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A server's commit markers are as many as its runs in flight, not one per transaction for ten
 * minutes: at a sustained rate of K=1 casts, the keys (and the heap of the memory and RocksDB
 * backends, which hold them) stay bounded whatever the number of casts.
 */
class CommitMarkerBoundTest extends RuntimeTestBase {

  /**
   * Enough that one marker per run (2 × CASTS: a push and a consumer batch per cast) would exceed
   * the bound a hundredfold; more only lengthens the drain, which on a loaded FoundationDB runs at
   * tens of K=1 batches a second.
   */
  private static final int CASTS = 1_000;

  private int markers(ServerRef<Msg> ref) {
    Subspace markers = tenant.subspace().subspace(ref.tuid()).subspace(Tuple.from("o"));
    return backend.run(tx -> tx.getRange(markers.range().begin, markers.range().end)).size();
  }

  @Test
  void casts_atK1_leaveABoundedNumberOfMarkers_notOnePerTransaction() {
    ServerRef<Msg> ref = start();
    for (int i = 0; i < CASTS; i++) {
      ref.cast(new Add(1));
    }
    awaitTotal(ref, CASTS);

    // one push and one consumer batch per cast: 2 × CASTS markers if each run kept its own
    assertThat(markers(ref)).isLessThanOrEqualTo(16);
  }

  @Test
  void castsFromSeveralThreads_leaveAsManyMarkersAsRunsInFlight() throws InterruptedException {
    ServerRef<Msg> ref = start();
    int threads = 4;
    List<Thread> publishers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread p =
          new Thread(
              () -> {
                for (int i = 0; i < CASTS / threads; i++) {
                  ref.cast(new Add(1));
                }
              });
      p.start();
      publishers.add(p);
    }
    for (Thread p : publishers) {
      p.join();
    }
    awaitTotal(ref, CASTS);

    assertThat(markers(ref)).isLessThanOrEqualTo(16 + threads);
  }
}

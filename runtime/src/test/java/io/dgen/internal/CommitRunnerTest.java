package io.dgen.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.KeyValue;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.internal.codec.StoredState;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * The commit runner alone, on the memory backend: a run whose commit raised {@code
 * commit_unknown_result} after applying replays instead of running its body again; one that did not
 * apply runs again; read-only runs leave no marker; a state write's stamp reaches the observer.
 */
class CommitRunnerTest {

  private final MemoryBackend backend = MemoryBackend.create();
  private final ServerKeys keys =
      new ServerKeys(backend.directory("commit-runner"), Tuple.from("server"));
  private final byte[] counter = keys.root().pack(Tuple.from("counter"));
  private final RecordingObserver observer = new RecordingObserver();
  private final CommitRunner commits = new CommitRunner(backend, keys, observer, System::nanoTime);

  private static final class RecordingObserver implements CommitRunner.Observer {
    final List<byte[]> stamps = new ArrayList<>();
    int replays;

    @Override
    public void stateCommitted(StoredState written, byte[] stamp) {
      stamps.add(stamp);
    }

    @Override
    public void replayed() {
      replays++;
    }
  }

  private long counterValue() {
    return ServerKeys.decodeCounter(backend.run(tx -> tx.get(counter)));
  }

  private List<KeyValue> markers() {
    return backend.run(tx -> tx.getRange(keys.markers().range().begin, keys.markers().range().end));
  }

  private @Nullable String incrementOnce(AtomicInteger bodyRuns) {
    return commits.commit(
        tx -> {
          bodyRuns.incrementAndGet();
          tx.add(counter, 1);
          return "ran";
        },
        (tx, previous) -> "replayed " + previous);
  }

  @Test
  void commit_unknownResultThatApplied_replaysInsteadOfRunningTheBodyAgain() {
    backend.faults().commitUnknownResult(1, true);
    AtomicInteger bodyRuns = new AtomicInteger();

    String result = incrementOnce(bodyRuns);

    assertThat(result).isEqualTo("replayed ran");
    assertThat(bodyRuns).hasValue(1);
    assertThat(counterValue()).isEqualTo(1);
    assertThat(observer.replays).isEqualTo(1);
  }

  @Test
  void commit_unknownResultThatDidNotApply_runsTheBodyAgain() {
    backend.faults().commitUnknownResult(1, false);
    AtomicInteger bodyRuns = new AtomicInteger();

    String result = incrementOnce(bodyRuns);

    assertThat(result).isEqualTo("ran");
    assertThat(bodyRuns).hasValue(2);
    assertThat(counterValue()).isEqualTo(1);
    assertThat(observer.replays).isZero();
  }

  @Test
  void commit_readOnlyBody_leavesNoMarker_andWritingBodyLeavesOne() {
    commits.commit(tx -> tx.get(counter));
    assertThat(markers()).isEmpty();

    incrementOnce(new AtomicInteger());
    assertThat(markers()).hasSize(1);
  }

  @Test
  void commit_stateWrite_handsTheObserverTheStampTheVersionKeyHolds() {
    StoredState stored = () -> JsonNodeFactory.instance.objectNode();

    commits.commit(
        tx -> {
          tx.setVersionstampedValue(keys.versionKey(), new byte[0]);
          return new StateStore.Written(stored);
        });

    assertThat(observer.stamps).hasSize(1);
    assertThat(observer.stamps.get(0)).isEqualTo(backend.run(tx -> tx.get(keys.versionKey())));
  }
}

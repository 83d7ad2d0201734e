package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static io.dgen.backend.memory.TestKeys.le;
import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.backend.KeyValue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Serializability under contention, with garbage collection running underneath. */
class ConcurrencyTest {

  private static final int ACCOUNTS = 16;
  private static final long INITIAL = 1_000;
  private static final int TRANSFERS = 1_000;

  /** Short backoff keeps contended runs fast; the backoff's shape is still FoundationDB's. */
  private static MemoryBackend contended() {
    return MemoryBackend.builder()
        .initialRetryDelay(Duration.ofNanos(50_000))
        .maxRetryDelay(Duration.ofMillis(2))
        .build();
  }

  private static byte[] account(int i) {
    return b(String.format("acct/%02d", i));
  }

  @ParameterizedTest
  @ValueSource(longs = {1L, 42L, 20240601L})
  void transfers_keepTheTotalAndReadersNeverSeeATornState(long seed) throws Exception {
    try (MemoryBackend backend = contended()) {
      backend.run(
          tx -> {
            for (int i = 0; i < ACCOUNTS; i++) {
              tx.set(account(i), MemoryTransaction.addLittleEndian(null, INITIAL));
            }
            return null;
          });
      AtomicBoolean stop = new AtomicBoolean();
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<Long>> writers = new ArrayList<>();
        for (int w = 0; w < 3; w++) {
          Random random = new Random(seed * 31 + w);
          writers.add(
              pool.submit(
                  () -> {
                    long done = 0;
                    for (int n = 0; n < TRANSFERS; n++) {
                      int from = random.nextInt(ACCOUNTS);
                      int to = random.nextInt(ACCOUNTS);
                      long amount = random.nextInt(10);
                      backend.run(
                          tx -> {
                            long a = le(tx.get(account(from)));
                            tx.set(
                                account(from), MemoryTransaction.addLittleEndian(null, a - amount));
                            long c = le(tx.get(account(to)));
                            tx.set(
                                account(to), MemoryTransaction.addLittleEndian(null, c + amount));
                            return null;
                          });
                      done++;
                    }
                    return done;
                  }));
        }
        Future<Long> reader =
            pool.submit(
                () -> {
                  long reads = 0;
                  while (!stop.get()) {
                    List<KeyValue> rows = backend.run(tx -> tx.getRange(b("acct/"), b("acct0")));
                    assertThat(rows).hasSize(ACCOUNTS);
                    assertThat(rows.stream().mapToLong(kv -> le(kv.value())).sum())
                        .isEqualTo(ACCOUNTS * INITIAL);
                    reads++;
                  }
                  return reads;
                });
        for (Future<Long> w : writers) {
          assertThat(w.get(60, TimeUnit.SECONDS)).isEqualTo(TRANSFERS);
        }
        stop.set(true);
        assertThat(reader.get(60, TimeUnit.SECONDS)).isPositive();
      } finally {
        pool.shutdownNow();
      }
      List<KeyValue> rows = backend.run(tx -> tx.getRange(b("acct/"), b("acct0")));
      assertThat(rows.stream().mapToLong(kv -> le(kv.value())).sum()).isEqualTo(ACCOUNTS * INITIAL);
      assertThat(backend.counters().transactionsCommitted()).isEqualTo(1 + 3 * TRANSFERS);
      // garbage collection is driven by commits: a few more finish the backlog
      for (int i = 0; i < 10; i++) {
        TestKeys.put(backend, b("other"), b("v" + i));
      }
      assertThat(backend.store().versionCount()).isLessThanOrEqualTo(2L * ACCOUNTS + 2);
    }
  }

  private static byte[] slot(int i) {
    return b(String.format("slot/%02d", i));
  }

  /**
   * One token moves between slots: each move deletes the key that holds it and creates another, so
   * keys keep losing their versions to garbage collection (their chains leave the map) and coming
   * back. Readers, by range and by key in one transaction, always see exactly one token.
   */
  @ParameterizedTest
  @ValueSource(longs = {7L, 20261202L})
  void keysDeletedAndCreatedAgain_readersAlwaysSeeOneToken(long seed) throws Exception {
    try (MemoryBackend backend = contended()) {
      TestKeys.put(backend, slot(0), b("token"));
      AtomicBoolean stop = new AtomicBoolean();
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<Long>> movers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
          Random random = new Random(seed * 17 + w);
          movers.add(
              pool.submit(
                  () -> {
                    long moves = 0;
                    for (int n = 0; n < TRANSFERS; n++) {
                      int to = random.nextInt(ACCOUNTS);
                      backend.run(
                          tx -> {
                            List<KeyValue> held = tx.getRange(b("slot/"), b("slot0"));
                            assertThat(held).hasSize(1);
                            tx.clear(held.get(0).key());
                            tx.set(slot(to), b("token"));
                            return null;
                          });
                      moves++;
                    }
                    return moves;
                  }));
        }
        List<Future<Long>> readers = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
          readers.add(
              pool.submit(
                  () -> {
                    long reads = 0;
                    while (!stop.get()) {
                      backend.run(
                          tx -> {
                            List<KeyValue> held = tx.getRange(b("slot/"), b("slot0"));
                            assertThat(held).hasSize(1);
                            int present = 0;
                            for (int i = 0; i < ACCOUNTS; i++) {
                              present += tx.get(slot(i)) == null ? 0 : 1;
                            }
                            assertThat(present).isEqualTo(1);
                            return null;
                          });
                      reads++;
                    }
                    return reads;
                  }));
        }
        for (Future<Long> m : movers) {
          assertThat(m.get(60, TimeUnit.SECONDS)).isEqualTo(TRANSFERS);
        }
        stop.set(true);
        for (Future<Long> r : readers) {
          assertThat(r.get(60, TimeUnit.SECONDS)).isPositive();
        }
      } finally {
        pool.shutdownNow();
      }
      List<KeyValue> last = backend.run(tx -> tx.getRange(b("slot/"), b("slot0")));
      assertThat(last).hasSize(1);
      for (int i = 0; i < 10; i++) {
        TestKeys.put(backend, b("other"), b("v" + i));
      }
      // the deleted slots' chains are gone, not kept as tombstones
      assertThat(backend.store().data.subMap(b("slot/"), b("slot0"))).hasSize(1);
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 4})
  void readModifyWrite_onOneKeyEndsWithTheExactTotal(int threads) throws Exception {
    try (MemoryBackend backend = contended()) {
      byte[] k = b("counter");
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          futures.add(
              pool.submit(
                  () -> {
                    for (int n = 0; n < 2_000; n++) {
                      backend.run(
                          tx -> {
                            byte[] v = tx.get(k);
                            tx.set(k, MemoryTransaction.addLittleEndian(v, 1));
                            return null;
                          });
                    }
                  }));
        }
        for (Future<?> f : futures) {
          f.get(60, TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }
      assertThat(le(backend.run(tx -> tx.get(k)))).isEqualTo(threads * 2_000L);
      MemoryBackend.Counters c = backend.counters();
      assertThat(c.transactionsStarted() - c.transactionsRetried()).isEqualTo(threads * 2_000L + 1);
    }
  }
}

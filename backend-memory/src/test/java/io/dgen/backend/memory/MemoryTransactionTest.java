package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static io.dgen.backend.memory.TestKeys.get;
import static io.dgen.backend.memory.TestKeys.le;
import static io.dgen.backend.memory.TestKeys.put;
import static io.dgen.backend.memory.TestKeys.range;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.backend.BackendException;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.Futures;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Semantics that depend on this implementation's internals (write map, conflict ranges). */
class MemoryTransactionTest {

  private final MemoryBackend backend = MemoryBackend.builder().retryLimit(0).build();

  @AfterEach
  void close() {
    backend.close();
  }

  private static void assertCode(ThrowingCallable call, int code) {
    Consumer<BackendException> hasCode = e -> assertThat(e.code()).isEqualTo(code);
    assertThatThrownBy(call).isInstanceOfSatisfying(BackendException.class, hasCode);
  }

  /**
   * Runs {@code reads} in T1, then commits {@code write} in T2, then commits T1 with a write
   * outside the ranges the tests read.
   */
  private void race(Consumer<Transaction> reads, Consumer<Transaction> write) {
    backend.run(
        tx -> {
          reads.accept(tx);
          backend.run(
              t2 -> {
                write.accept(t2);
                return null;
              });
          tx.set(b("~unrelated"), b("x"));
          return null;
        });
  }

  private static Consumer<Transaction> setKey(String k) {
    return t -> t.set(b(k), b("new"));
  }

  private void fiveKeys() {
    backend.run(
        tx -> {
          for (String k : List.of("b", "c", "d", "e", "f")) {
            tx.set(b(k), b(k));
          }
          return null;
        });
  }

  @Test
  void rangeWithLimitReached_conflictsOnlyOnThePartRead() {
    fiveKeys();
    race(t -> t.getRange(b("a"), b("z"), 2, false), setKey("c1"));
    race(t -> t.getRange(b("a"), b("z"), 2, false), setKey("zz"));
    assertCode(() -> race(t -> t.getRange(b("a"), b("z"), 2, false), setKey("c")), 1020);
    assertCode(() -> race(t -> t.getRange(b("a"), b("z"), 2, false), setKey("a")), 1020);
  }

  @Test
  void reverseRangeWithLimitReached_conflictsFromTheSmallestKeyRead() {
    fiveKeys();
    race(t -> t.getRange(b("a"), b("z"), 2, true), setKey("d"));
    assertCode(() -> race(t -> t.getRange(b("a"), b("z"), 2, true), setKey("e")), 1020);
    assertCode(() -> race(t -> t.getRange(b("a"), b("z"), 2, true), setKey("y")), 1020);
  }

  @Test
  void emptyOrInvertedRange_addsNoConflict() {
    race(t -> t.getRange(b("m"), b("m")), setKey("m"));
    race(t -> t.getRange(b("n"), b("m")), setKey("m"));
    assertCode(() -> race(t -> t.getRange(b("m"), b("n")), setKey("m5")), 1020);
  }

  @Test
  void writeThenRead_addsNoConflictButReadThenWriteDoes() {
    race(
        t -> {
          t.set(b("k"), b("mine"));
          t.get(b("k"));
          t.getRange(b("k"), b("l"));
          t.addReadConflictKey(b("k"));
        },
        setKey("k"));
    assertCode(
        () ->
            race(
                t -> {
                  t.get(b("k"));
                  t.set(b("k"), b("mine"));
                },
                setKey("k")),
        1020);
  }

  @Test
  void clearRangeThenRangeRead_excludesTheClearedPart() {
    race(
        t -> {
          t.clearRange(b("b"), b("d"));
          t.getRange(b("a"), b("z"));
        },
        setKey("c"));
    assertCode(
        () ->
            race(
                t -> {
                  t.clearRange(b("b"), b("d"));
                  t.getRange(b("a"), b("z"));
                },
                setKey("e")),
        1020);
  }

  @Test
  void pendingAtomicAdd_readBackConflictsButSnapshotAndAddAloneDoNot() {
    race(t -> t.add(b("n"), 1), setKey("n"));
    race(
        t -> {
          t.add(b("n"), 1);
          t.snapshot().get(b("n"));
        },
        setKey("n"));
    assertCode(
        () ->
            race(
                t -> {
                  t.add(b("n"), 1);
                  t.get(b("n"));
                },
                setKey("n")),
        1020);
    race(
        t -> {
          t.clear(b("n"));
          t.add(b("n"), 1);
          t.get(b("n"));
        },
        setKey("n"));
  }

  @Test
  void writeConflictOnly_isNotReadOnlyAndFailsConcurrentReaders() {
    assertCode(() -> race(t -> t.get(b("k")), t -> t.addWriteConflictKey(b("k"))), 1020);
    assertCode(() -> race(t -> t.get(b("k")), t -> t.addWriteConflictRange(b("a"), b("z"))), 1020);
    assertThat(backend.counters().transactionsCommitted()).isGreaterThanOrEqualTo(2);
  }

  @Test
  void add_followsFoundationDbRules() {
    backend.run(
        tx -> {
          tx.set(b("short"), new byte[] {5});
          tx.set(b("long"), new byte[] {1, 0, 0, 0, 0, 0, 0, 0, 9, 9});
          tx.set(b("empty"), new byte[0]);
          tx.set(b("max"), new byte[] {-1, -1, -1, -1, -1, -1, -1, -1});
          return null;
        });
    backend.run(
        tx -> {
          for (String k : List.of("absent", "short", "long", "empty", "max")) {
            tx.add(b(k), 1);
          }
          return null;
        });
    backend.run(
        tx -> {
          assertThat(tx.get(b("absent"))).isEqualTo(new byte[] {1, 0, 0, 0, 0, 0, 0, 0});
          assertThat(tx.get(b("short"))).isEqualTo(new byte[] {6, 0, 0, 0, 0, 0, 0, 0});
          assertThat(tx.get(b("long"))).isEqualTo(new byte[] {2, 0, 0, 0, 0, 0, 0, 0});
          assertThat(tx.get(b("empty"))).isEqualTo(new byte[] {1, 0, 0, 0, 0, 0, 0, 0});
          assertThat(tx.get(b("max"))).isEqualTo(new byte[8]);
          return null;
        });
  }

  @Test
  void readYourWrites_mergesIntoRangesWithLimitAndReverse() {
    fiveKeys();
    List<KeyValue> rows =
        backend.run(
            tx -> {
              tx.clear(b("c"));
              tx.clearRange(b("e"), b("f"));
              tx.set(b("a"), b("A"));
              tx.set(b("d"), b("D"));
              tx.add(b("f"), 1);
              return List.of(
                      tx.getRange(b("a"), b("z")),
                      tx.getRange(b("a"), b("z"), 3, false),
                      tx.getRange(b("a"), b("z"), 2, true))
                  .stream()
                  .map(l -> l.stream().map(kv -> TestKeys.s(kv.key())).toList().toString())
                  .map(s -> new KeyValue(b(s), new byte[0]))
                  .toList();
            });
    assertThat(rows)
        .extracting(kv -> TestKeys.s(kv.key()))
        .containsExactly("[a, b, d, f]", "[a, b, d]", "[f, d]");
    byte[] f = get(backend, b("f"));
    assertThat(f).hasSize(8);
    assertThat(le(f)).isEqualTo(le(b("f")) + 1);
  }

  @Test
  void versionstampedKey_isWrittenAtTheCommitStampAndOrderedByCommit() {
    byte[] prefix = b("p");
    CompletableFuture<byte[]> s1 =
        backend.run(
            tx -> {
              tx.setVersionstampedKey(
                  prefix, Tuple.from("q", Versionstamp.incomplete(7), "tail"), b("one"));
              tx.setVersionstampedValue(b("v"), b("pre"));
              return tx.getVersionstamp();
            });
    CompletableFuture<byte[]> s2 =
        backend.run(
            tx -> {
              tx.setVersionstampedKey(
                  prefix, Tuple.from(Tuple.from("nested", Versionstamp.incomplete(1))), b("two"));
              return tx.getVersionstamp();
            });
    byte[] stamp1 = s1.join();
    byte[] stamp2 = s2.join();
    assertThat(stamp1).hasSize(10);
    assertThat(ByteKeys.compare(stamp1, stamp2)).isNegative();

    List<KeyValue> rows = range(backend, prefix, ByteKeys.strinc(prefix));
    assertThat(rows).hasSize(2);
    Tuple first = Tuple.fromBytes(rows.get(0).key(), 1, rows.get(0).key().length - 1);
    assertThat(first.getVersionstamp(1)).isEqualTo(Versionstamp.complete(stamp1, 7));
    assertThat(first.getString(2)).isEqualTo("tail");
    Tuple second = Tuple.fromBytes(rows.get(1).key(), 1, rows.get(1).key().length - 1);
    assertThat(second.getNestedTuple(0).getVersionstamp(1))
        .isEqualTo(Versionstamp.complete(stamp2, 1));
    assertThat(get(backend, b("v"))).isEqualTo(ByteKeys.concat(b("pre"), stamp1));
  }

  @Test
  void versionstampedWrites_areUnreadableInTheirAttempt() {
    byte[] prefix = b("p");
    assertCode(
        () ->
            backend.run(
                tx -> {
                  tx.setVersionstampedKey(
                      prefix, Tuple.from("q", Versionstamp.incomplete(0)), b("v"));
                  return tx.snapshot().getRange(prefix, ByteKeys.strinc(prefix));
                }),
        1036);
    assertCode(
        () ->
            backend.run(
                tx -> {
                  tx.setVersionstampedValue(b("k"), b(""));
                  tx.set(b("k"), b("plain"));
                  return tx.get(b("k"));
                }),
        1036);
    // a range that stops before the stamped keys is readable
    put(backend, b("a"), b("1"));
    List<KeyValue> rows =
        backend.run(
            tx -> {
              tx.setVersionstampedKey(prefix, Tuple.from("q", Versionstamp.incomplete(0)), b("v"));
              return tx.getRange(b("a"), b("z"), 1, false);
            });
    assertThat(rows).hasSize(1);
  }

  @Test
  void versionstampedKey_requiresExactlyOneIncompleteStamp() {
    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      tx.setVersionstampedKey(b("p"), Tuple.from("no stamp"), b("v"));
                      return null;
                    }))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () ->
                backend.run(
                    tx -> {
                      tx.setVersionstampedKey(
                          b("p"),
                          Tuple.from(Versionstamp.incomplete(1), Versionstamp.incomplete(2)),
                          b("v"));
                      return null;
                    }))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void getVersionstamp_ofReadOnlyCommitFails2021AndAfterCommitFails2017() {
    CompletableFuture<byte[]> f = backend.run(Transaction::getVersionstamp);
    assertCode(() -> Futures.join(f), 2021);
    Transaction[] leaked = new Transaction[1];
    backend.run(
        tx -> {
          leaked[0] = tx;
          return null;
        });
    assertCode(() -> Futures.join(leaked[0].getVersionstamp()), 2017);
    assertCode(() -> leaked[0].get(b("k")), 2017);
    assertCode(() -> leaked[0].set(b("k"), b("v")), 2017);
  }

  @Test
  void limits_raiseFoundationDbCodes() {
    assertCode(
        () ->
            backend.run(
                tx -> {
                  tx.set(new byte[10_001], b("v"));
                  return null;
                }),
        2102);
    assertCode(
        () ->
            backend.run(
                tx -> {
                  tx.set(b("k"), new byte[100_001]);
                  return null;
                }),
        2103);
    assertCode(
        () ->
            backend.run(
                tx -> {
                  tx.set(new byte[] {(byte) 0xff}, b("v"));
                  return null;
                }),
        2004);
    assertCode(() -> get(backend, new byte[] {(byte) 0xff, 1}), 2004);
    assertCode(
        () ->
            backend.run(
                tx -> {
                  tx.clearRange(b("b"), b("a"));
                  return null;
                }),
        2005);
    assertCode(
        () ->
            backend.run(
                tx -> {
                  tx.addReadConflictRange(b("b"), b("a"));
                  return null;
                }),
        2005);
    assertThat(get(backend, new byte[20_000])).isNull();
    assertThat(range(backend, b("a"), new byte[] {(byte) 0xff})).isEmpty();
  }

  @Test
  void transactionTooLarge_failsAtCommitWithoutRetry() {
    AtomicInteger executions = new AtomicInteger();
    try (MemoryBackend retrying = MemoryBackend.create()) {
      assertCode(
          () ->
              retrying.run(
                  tx -> {
                    executions.incrementAndGet();
                    for (int i = 0; i < 101; i++) {
                      tx.set(b("k" + i), new byte[100_000]);
                    }
                    assertThat(tx.getApproximateSize()).isGreaterThan(10_000_000);
                    return null;
                  }),
          2101);
      assertThat(executions).hasValue(1);
      // repeated sets of one key count once
      retrying.run(
          tx -> {
            for (int i = 0; i < 200; i++) {
              tx.set(b("same"), new byte[100_000]);
            }
            return null;
          });
    }
  }

  @Test
  void snapshotReadsSeeOwnWritesAndTheReadVersion() {
    put(backend, b("k"), b("old"));
    byte[][] seen =
        backend.run(
            tx -> {
              tx.getReadVersion();
              put(backend, b("k"), b("new"));
              byte[] before = tx.snapshot().get(b("k"));
              tx.set(b("j"), b("mine"));
              return new byte[][] {before, tx.snapshot().get(b("j"))};
            });
    assertThat(seen[0]).isEqualTo(b("old"));
    assertThat(seen[1]).isEqualTo(b("mine"));
  }

  @Test
  void returnedArrays_belongToTheCaller() {
    put(backend, b("k"), b("value"));
    byte[] v = get(backend, b("k"));
    v[0] = 'X';
    List<KeyValue> rows = range(backend, b("a"), b("z"));
    rows.get(0).value()[0] = 'Y';
    rows.get(0).key()[0] = 'Z';
    assertThat(get(backend, b("k"))).isEqualTo(b("value"));
  }
}

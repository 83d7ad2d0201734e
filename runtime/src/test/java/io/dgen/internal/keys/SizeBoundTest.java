package io.dgen.internal.keys;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.backend.Backend;
import io.dgen.backend.ByteKeys;
import io.dgen.backend.fdb.FdbTestEnvironment;
import io.dgen.backend.memory.MemoryBackend;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link TrackingTransaction#sizeBound()} is never below the backend's own {@code
 * getApproximateSize()}, after any mix of the operations the runtime and callbacks make: the state
 * budget trusts it in place of asking the client.
 */
class SizeBoundTest {

  abstract static class Suite {
    private final List<Backend> opened = new ArrayList<>();

    abstract Backend open();

    @AfterEach
    void close() {
      opened.forEach(Backend::close);
    }

    @Test
    void theBound_isNeverBelowTheBackendsApproximateSize_forEachOperationAndAnyMix() {
      Backend backend = open();
      opened.add(backend);
      byte[] root = backend.directory("size-bound").getKey();
      SplittableRandom random = new SplittableRandom(2026_12_02);
      List<String> violations = new ArrayList<>();
      // One kind of operation per transaction (an undercount of it cannot hide behind the others'
      // margins), then mixes.
      for (int kind = 0; kind <= OPERATIONS; kind++) {
        int only = kind;
        violations.addAll(
            backend.run(
                raw -> {
                  TrackingTransaction tx = new TrackingTransaction(raw);
                  List<String> bad = new ArrayList<>();
                  for (int i = 0; i < 40; i++) {
                    int op = only < OPERATIONS ? only : random.nextInt(OPERATIONS);
                    int bytes = apply(tx, op, root, random);
                    // Without the slack for what goes around the tracker (nothing does here).
                    long bound = tx.sizeBound() - TrackingTransaction.UNTRACKED;
                    long actual = raw.getApproximateSize();
                    if (bound >= 0 && bound < actual) {
                      bad.add(
                          "operation "
                              + op
                              + " ("
                              + bytes
                              + " value bytes): bound "
                              + bound
                              + " < approximate size "
                              + actual);
                    }
                  }
                  return bad;
                }));
      }
      assertThat(violations).isEmpty();
    }

    @Test
    void aStampThatIsNotTheLastElement_makesTheBoundUnknown() {
      Backend backend = open();
      opened.add(backend);
      byte[] root = backend.directory("size-bound-stamps").getKey();
      long[] bounds =
          backend.run(
              raw -> {
                TrackingTransaction tx = new TrackingTransaction(raw);
                tx.setVersionstampedKey(root, Tuple.from(Versionstamp.incomplete(0)), new byte[10]);
                long lone = tx.sizeBound();
                tx.setVersionstampedKey(
                    root, Tuple.from("log", Versionstamp.incomplete(1)), new byte[10]);
                long trailing = tx.sizeBound();
                tx.setVersionstampedKey(
                    root, Tuple.from(Versionstamp.incomplete(2), "tail"), new byte[10]);
                return new long[] {lone, trailing, tx.sizeBound()};
              });
      assertThat(bounds[0]).isPositive();
      assertThat(bounds[1]).isGreaterThan(bounds[0]);
      assertThat(bounds[2]).isEqualTo(-1);
    }
  }

  private static final int OPERATIONS = 12;

  /** Operation {@code op} in {@code tx} on random keys; returns its value's length. */
  private static int apply(TrackingTransaction tx, int op, byte[] root, SplittableRandom random) {
    byte[] key = ByteKeys.concat(root, Tuple.from("k", random.nextInt(50)).pack());
    byte[] other = ByteKeys.concat(root, Tuple.from("k", 50 + random.nextInt(50)).pack());
    byte[] value = new byte[random.nextInt(100)];
    switch (op) {
      case 0 -> tx.set(key, value);
      case 1 -> tx.clear(key);
      case 2 -> tx.clearRange(key, other);
      case 3 -> tx.add(key, random.nextLong());
      case 4 ->
          tx.setVersionstampedKey(
              root,
              random.nextBoolean()
                  ? Tuple.from(Versionstamp.incomplete(random.nextInt(100)))
                  : Tuple.from(
                      "w", random.nextInt(1_000), Versionstamp.incomplete(random.nextInt(100))),
              value);
      case 5 -> // never read: reading a key stamped in this transaction fails with 1036
          tx.setVersionstampedValue(
              ByteKeys.concat(root, Tuple.from("v", random.nextInt(50)).pack()), value);
      case 6 -> tx.getAsync(key).join();
      case 7 -> tx.getRangeAsync(key, other, random.nextInt(3), random.nextBoolean()).join();
      case 8 -> tx.addReadConflictKey(key);
      case 9 -> tx.addReadConflictRange(key, other);
      case 10 -> tx.addWriteConflictKey(key);
      default -> tx.addWriteConflictRange(key, other);
    }
    return value.length;
  }

  @Nested
  class OnTheMemoryBackend extends Suite {
    @Override
    Backend open() {
      return MemoryBackend.create();
    }
  }

  @Nested
  @ExtendWith(FdbTestEnvironment.class)
  class OnFoundationDb extends Suite {
    @Override
    Backend open() {
      return FdbTestEnvironment.openBackend();
    }
  }
}

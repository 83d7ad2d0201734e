package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.backend.ByteKeys;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The conflict index answers as the log of whole commits it replaced: a commit conflicts if a
 * commit above its read version wrote a range intersecting one of its read ranges, with commits at
 * or below the oldest live read version forgotten.
 */
class ConflictIndexTest {

  /** The log the index replaced: every commit's write ranges, checked newest first. */
  private static final class ReferenceLog {
    private record Commit(long version, KeyRanges writes) {}

    private final ArrayDeque<Commit> log = new ArrayDeque<>();

    void add(long version, KeyRanges writes) {
      log.addLast(new Commit(version, writes));
    }

    void trim(long m) {
      while (!log.isEmpty() && log.peekFirst().version() <= m) {
        log.pollFirst();
      }
    }

    boolean conflicts(long readVersion, KeyRanges reads) {
      Iterator<Commit> it = log.descendingIterator();
      while (it.hasNext()) {
        Commit c = it.next();
        if (c.version() <= readVersion) {
          return false;
        }
        if (reads.intersects(c.writes())) {
          return true;
        }
      }
      return false;
    }
  }

  private static KeyRanges keys(String... keys) {
    KeyRanges.Builder b = new KeyRanges.Builder();
    for (String k : keys) {
      b.addKey(b(k));
    }
    return b.build();
  }

  private static KeyRanges range(String begin, String end) {
    return new KeyRanges.Builder().add(b(begin), b(end)).build();
  }

  @Test
  void aKeyWrittenAfterTheReadVersion_conflictsWithAPointOrRangeReadOfIt() {
    ConflictIndex index = new ConflictIndex();
    index.add(5, keys("b"));

    assertThat(index.conflicts(4, keys("b"))).isTrue();
    assertThat(index.conflicts(4, range("a", "c"))).isTrue();
    assertThat(index.conflicts(5, keys("b"))).isFalse(); // written at the read version: seen
    assertThat(index.conflicts(4, keys("a", "c"))).isFalse();
    assertThat(index.conflicts(4, range("b\0", "c"))).isFalse(); // the range starts after b
    assertThat(index.conflicts(4, range("a", "b"))).isFalse(); // and this one ends at b
  }

  @Test
  void aRangeWrite_conflictsWithReadsInsideIt_evenWhereNoKeyExists() {
    ConflictIndex index = new ConflictIndex();
    index.add(7, range("m", "p"));

    assertThat(index.conflicts(6, keys("n"))).isTrue();
    assertThat(index.conflicts(6, range("a", "m\0"))).isTrue();
    assertThat(index.conflicts(6, keys("p"))).isFalse();
    assertThat(index.conflicts(7, keys("n"))).isFalse();
  }

  @Test
  void trimming_forgetsOnlyWhatNoLiveReaderCanConflictWith_andEmptiesTheIndex() {
    ConflictIndex index = new ConflictIndex();
    index.add(1, keys("k"));
    index.add(2, keys("k", "x"));
    index.add(3, range("a", "c"));

    index.trim(1);
    assertThat(index.conflicts(1, keys("k"))).isTrue(); // version 2 wrote it again
    index.trim(2);
    assertThat(index.conflicts(2, keys("k", "x"))).isFalse();
    assertThat(index.conflicts(2, keys("b"))).isTrue();
    index.trim(3);
    assertThat(index.keys()).isZero();
    assertThat(index.size()).isZero();
  }

  @Test
  void randomCommitsAndReads_getTheReferenceLogsAnswer() {
    SplittableRandom random = new SplittableRandom(20261202);
    for (int round = 0; round < 50; round++) {
      ConflictIndex index = new ConflictIndex();
      ReferenceLog reference = new ReferenceLog();
      long m = 0;
      for (long version = 1; version <= 400; version++) {
        KeyRanges writes = randomRanges(random);
        long readVersion = m + random.nextLong(version - m);
        KeyRanges reads = randomRanges(random);
        assertThat(index.conflicts(readVersion, reads))
            .as("round %d, version %d, read at %d: %s", round, version, readVersion, index)
            .isEqualTo(reference.conflicts(readVersion, reads));
        index.add(version, writes);
        reference.add(version, writes);
        if (random.nextInt(4) == 0) {
          m = Math.min(version, m + random.nextInt(6));
          index.trim(m);
          reference.trim(m);
        }
      }
      index.trim(400);
      assertThat(index.keys()).isZero();
    }
  }

  /** A few single keys and the odd range, over a small alphabet so that they collide often. */
  private static KeyRanges randomRanges(SplittableRandom random) {
    KeyRanges.Builder b = new KeyRanges.Builder();
    int n = 1 + random.nextInt(5);
    for (int i = 0; i < n; i++) {
      byte[] key = randomKey(random);
      switch (random.nextInt(8)) {
        case 0 -> b.add(key, randomKey(random)); // inverted or empty ones are ignored
        case 1 -> b.add(key, ByteKeys.keyAfter(ByteKeys.keyAfter(key))); // two keys: not a point
        default -> b.addKey(key);
      }
    }
    return b.build();
  }

  private static byte[] randomKey(SplittableRandom random) {
    byte[] key = new byte[1 + random.nextInt(3)];
    for (int i = 0; i < key.length; i++) {
      key[i] = (byte) ('a' + random.nextInt(4));
    }
    return key;
  }
}

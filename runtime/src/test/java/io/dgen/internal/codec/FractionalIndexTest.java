package io.dgen.internal.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.tuple.Tuple;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.function.IntUnaryOperator;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class FractionalIndexTest {

  private static final int KEY_LIMIT = 10_000;

  @Test
  void between_openBounds_givesTheMiddle() {
    byte[] mid = FractionalIndex.between(null, null);
    assertThat(mid).containsExactly((byte) 128);
    assertThat(FractionalIndex.isValid(mid)).isTrue();
  }

  @Test
  void between_appendsAndPrependsStepByOne() {
    byte[] mid = FractionalIndex.between(null, null);
    assertThat(FractionalIndex.between(mid, null)).containsExactly((byte) 129);
    assertThat(FractionalIndex.between(null, mid)).containsExactly((byte) 127);
  }

  @Test
  void between_consecutiveDigits_goesOneLevelDeeper() {
    byte[] lo = {10};
    byte[] hi = {11};
    byte[] x = FractionalIndex.between(lo, hi);
    assertThat(x).hasSize(2).startsWith((byte) 10);
    assertSorted(List.of(lo, x, hi));
  }

  @Test
  void between_rejectsUnorderedOrInvalidBounds() {
    assertThatThrownBy(() -> FractionalIndex.between(new byte[] {5}, new byte[] {5}))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> FractionalIndex.between(new byte[] {6}, new byte[] {5}))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> FractionalIndex.between(new byte[] {5, 1}, null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> FractionalIndex.between(new byte[] {0}, null))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void spread_isSortedShortAndValid() {
    for (int n : new int[] {0, 1, 2, 100, 254, 255, 1_000, 100_000}) {
      List<byte[]> keys = FractionalIndex.spread(n);
      assertThat(keys).hasSize(n);
      assertSorted(keys);
      keys.forEach(k -> assertThat(FractionalIndex.isValid(k)).isTrue());
      int longest = keys.stream().mapToInt(k -> k.length).max().orElse(0);
      assertThat(longest).isLessThanOrEqualTo(n <= 254 ? 1 : n <= 65_000 ? 2 : 3);
    }
  }

  @Test
  void betweenMany_fitsEvenlyBetweenNeighbours() {
    byte[] lo = {10};
    byte[] hi = {11};
    List<byte[]> keys = FractionalIndex.between(lo, hi, 1_000);
    List<byte[]> all = new ArrayList<>();
    all.add(lo);
    all.addAll(keys);
    all.add(hi);
    assertSorted(all);
    assertThat(keys.stream().mapToInt(k -> k.length).max().orElseThrow()).isLessThanOrEqualTo(3);
  }

  /** Where each of 10,000 insertions lands, given the current size. */
  static List<Object[]> patterns() {
    Random random = new Random(42);
    return List.of(
        new Object[] {"front", (IntUnaryOperator) size -> 0},
        new Object[] {"back", (IntUnaryOperator) size -> size},
        new Object[] {"second", (IntUnaryOperator) size -> Math.min(1, size)},
        new Object[] {"beforeLast", (IntUnaryOperator) size -> Math.max(0, size - 1)},
        new Object[] {"middle", (IntUnaryOperator) size -> size / 2},
        new Object[] {"random", (IntUnaryOperator) size -> random.nextInt(size + 1)});
  }

  @Test
  void tenThousandInserts_atOnePosition_stayFarBelowTheKeyLimit_withoutRebalancing() {
    for (Object[] p : patterns()) {
      List<byte[]> keys = insertAll((IntUnaryOperator) p[1], 10_000, Integer.MAX_VALUE);
      assertSorted(keys);
      int longest = keys.stream().mapToInt(k -> k.length).max().orElseThrow();
      System.out.printf("pattern=%s longest index without rebalancing=%d%n", p[0], longest);
      // Even with no rebalancing at all, the worst pattern (a gap halved by every insertion, about
      // eight insertions per byte) stays well below the key limit; the codec never lets an index
      // grow past MAX_LENGTH.
      assertThat(longest).as((String) p[0]).isLessThan(KEY_LIMIT / 5);
    }
  }

  @Test
  void tenThousandInserts_withTheCodecsRebalanceBound_stayWithinMaxLength() {
    for (Object[] p : patterns()) {
      int[] rebalances = new int[1];
      List<byte[]> keys =
          insertAll((IntUnaryOperator) p[1], 10_000, FractionalIndex.MAX_LENGTH, rebalances);
      assertSorted(keys);
      System.out.printf("pattern=%s rebalances=%d%n", p[0], rebalances[0]);
      assertThat(keys.stream().mapToInt(k -> k.length).max().orElseThrow())
          .as((String) p[0])
          .isLessThanOrEqualTo(FractionalIndex.MAX_LENGTH);
      // Appending or prepending one by one never needs a rebalance at this size.
      if (p[0].equals("front") || p[0].equals("back") || p[0].equals("random")) {
        assertThat(rebalances[0]).as((String) p[0]).isZero();
      }
    }
  }

  @Test
  void indexesSortInsideTuplesAsBytes() {
    List<byte[]> keys = insertAll(size -> size / 2, 2_000, FractionalIndex.MAX_LENGTH);
    List<byte[]> packed = new ArrayList<>();
    for (byte[] k : keys) {
      packed.add(Tuple.from("l", k, "id").pack());
    }
    assertSorted(packed);
  }

  @Property(seed = "4711", tries = 500)
  void between_isStrictlyBetweenAndValid(@ForAll("ordered") byte[][] bounds) {
    byte[] lo = bounds[0];
    byte[] hi = bounds[1];
    byte[] x = FractionalIndex.between(lo, hi);
    assertThat(FractionalIndex.isValid(x)).isTrue();
    if (lo != null) {
      assertThat(FractionalIndex.compare(lo, x)).isNegative();
    }
    if (hi != null) {
      assertThat(FractionalIndex.compare(x, hi)).isNegative();
    }
    List<byte[]> many = FractionalIndex.between(lo, hi, 17);
    List<byte[]> all = new ArrayList<>();
    if (lo != null) {
      all.add(lo);
    }
    all.addAll(many);
    if (hi != null) {
      all.add(hi);
    }
    assertSorted(all);
    many.forEach(k -> assertThat(FractionalIndex.isValid(k)).isTrue());
  }

  @Provide
  Arbitrary<byte[][]> ordered() {
    Arbitrary<byte[]> index =
        Arbitraries.bytes()
            .between((byte) 1, (byte) 255)
            .array(byte[].class)
            .ofMinSize(1)
            .ofMaxSize(6)
            .map(FractionalIndexTest::validate);
    Arbitrary<byte[]> maybe = index.injectNull(0.2);
    return maybe
        .list()
        .ofSize(2)
        .filter(l -> l.get(0) == null || l.get(1) == null || !equal(l.get(0), l.get(1)))
        .map(
            l -> {
              byte[] a = l.get(0);
              byte[] b = l.get(1);
              if (a != null && b != null && FractionalIndex.compare(a, b) > 0) {
                return new byte[][] {b, a};
              }
              return new byte[][] {a, b};
            });
  }

  private static boolean equal(byte[] a, byte[] b) {
    return FractionalIndex.compare(a, b) == 0;
  }

  private static byte[] validate(byte[] b) {
    byte[] out = b.clone();
    for (int i = 0; i < out.length; i++) {
      if (out[i] == 0) {
        out[i] = 2;
      }
    }
    if (out[out.length - 1] == 1) {
      out[out.length - 1] = 2;
    }
    return out;
  }

  private static List<byte[]> insertAll(IntUnaryOperator position, int count, int bound) {
    return insertAll(position, count, bound, new int[1]);
  }

  /** Inserts one by one as the codec does, rebalancing past {@code bound}. */
  private static List<byte[]> insertAll(
      IntUnaryOperator position, int count, int bound, int[] rebalances) {
    List<byte[]> keys = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      int at = position.applyAsInt(keys.size());
      byte[] lo = at == 0 ? null : keys.get(at - 1);
      byte[] hi = at == keys.size() ? null : keys.get(at);
      byte[] x = FractionalIndex.between(lo, hi);
      keys.add(at, x);
      if (x.length > bound) {
        rebalances[0]++;
        List<byte[]> even = FractionalIndex.spread(keys.size());
        keys.clear();
        keys.addAll(even);
      }
    }
    return keys;
  }

  private static void assertSorted(List<byte[]> keys) {
    for (int i = 1; i < keys.size(); i++) {
      assertThat(FractionalIndex.compare(keys.get(i - 1), keys.get(i)))
          .as("key %d sorts after key %d", i, i - 1)
          .isNegative();
    }
    assertThat(keys).isSortedAccordingTo(Comparator.comparing(k -> k, FractionalIndex::compare));
  }
}

package io.dgen.backend.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.backend.ByteKeys;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The stamp packer never touches fdb-java's native-backed code and places the stamp exactly. */
class StampsTest {

  private static final byte[] PREFIX = {0x15, 0x33};
  private static final byte[] STAMP = Stamps.transactionStamp(0x0102030405060708L, 0x090a);

  private static void assertPlacesStamp(Tuple incomplete, Tuple expected) {
    int[] at = new int[1];
    byte[] key = Stamps.packWithMaxStamp(PREFIX, incomplete, at);
    System.arraycopy(STAMP, 0, key, at[0], 10);
    assertThat(key).isEqualTo(ByteKeys.concat(PREFIX, expected.pack()));
  }

  @Test
  void transactionStamp_isBigEndianVersionThenOrder() {
    assertThat(STAMP).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
  }

  @Test
  void packWithMaxStamp_placesTopLevelNestedAndListStamps() {
    Versionstamp done = Versionstamp.complete(STAMP, 7);
    assertPlacesStamp(
        Tuple.from("q", 0, Versionstamp.incomplete(7), "tail"), Tuple.from("q", 0, done, "tail"));
    assertPlacesStamp(
        Tuple.from("a", Tuple.from("n", Versionstamp.incomplete(7), null)),
        Tuple.from("a", Tuple.from("n", done, null)));
    assertPlacesStamp(
        Tuple.from("a", List.of(1L, Versionstamp.incomplete(7))),
        Tuple.from("a", List.of(1L, done)));
  }

  @Test
  void packWithMaxStamp_aLoneStamp_isPackedAsTheTupleWouldBe() {
    for (int userVersion : new int[] {0, 1, 0x0102, 0xffff}) {
      assertPlacesStamp(
          Tuple.from(Versionstamp.incomplete(userVersion)),
          Tuple.from(Versionstamp.complete(STAMP, userVersion)));
    }
  }

  @Test
  void packWithMaxStamp_findsTheStampWhenAnotherElementContainsItsEncoding() {
    byte[] lookalike = new byte[12];
    Arrays.fill(lookalike, (byte) 0xff);
    lookalike[0] = 0x33;
    assertPlacesStamp(
        Tuple.from(lookalike, Versionstamp.incomplete(3), lookalike),
        Tuple.from(lookalike, Versionstamp.complete(STAMP, 3), lookalike));
  }

  @Test
  void completeSingle_requiresExactlyOneIncompleteStamp() {
    assertThatThrownBy(() -> Stamps.completeSingle(Tuple.from("x"), STAMP))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("found 0");
    assertThatThrownBy(
            () ->
                Stamps.completeSingle(
                    Tuple.from(Versionstamp.incomplete(), Tuple.from(Versionstamp.incomplete())),
                    STAMP))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("found 2");
    Tuple complete = Tuple.from(Versionstamp.complete(STAMP, 1), Versionstamp.incomplete(2));
    assertThat(Stamps.completeSingle(complete, STAMP).getVersionstamp(1))
        .isEqualTo(Versionstamp.complete(STAMP, 2));
  }
}

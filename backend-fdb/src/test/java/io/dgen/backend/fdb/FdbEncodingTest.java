package io.dgen.backend.fdb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.backend.BackendException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FdbEncodingTest {

  @Test
  void addOperand_isEightBytesLittleEndian() {
    assertThat(FdbEncoding.addOperand(1)).containsExactly(1, 0, 0, 0, 0, 0, 0, 0);
    assertThat(FdbEncoding.addOperand(0x0102030405060708L)).containsExactly(8, 7, 6, 5, 4, 3, 2, 1);
  }

  @Test
  void addOperand_negativeDeltaIsTwosComplement() {
    assertThat(FdbEncoding.addOperand(-1)).containsOnly(0xff).hasSize(8);
    assertThat(FdbEncoding.addOperand(Long.MIN_VALUE)).containsExactly(0, 0, 0, 0, 0, 0, 0, 0x80);
  }

  @ParameterizedTest
  @ValueSource(longs = {1L, 42L, 20260229L})
  void addOperand_roundTripsForRandomDeltas(long seed) {
    Random random = new Random(seed);
    for (int i = 0; i < 1_000; i++) {
      long delta = random.nextLong();
      byte[] operand = FdbEncoding.addOperand(delta);
      assertThat(ByteBuffer.wrap(operand).order(ByteOrder.LITTLE_ENDIAN).getLong())
          .isEqualTo(delta);
    }
  }

  @Test
  void versionstampedValueParam_isPrefixPlaceholderAndLittleEndianOffset() {
    byte[] param = FdbEncoding.versionstampedValueParam(new byte[] {'a', 'b', 'c'});

    assertThat(param).hasSize(3 + 10 + 4);
    assertThat(Arrays.copyOfRange(param, 0, 3)).containsExactly('a', 'b', 'c');
    assertThat(Arrays.copyOfRange(param, 3, 13)).containsOnly(0xff);
    assertThat(Arrays.copyOfRange(param, 13, 17)).containsExactly(3, 0, 0, 0);
  }

  @Test
  void versionstampedValueParam_emptyPrefixPutsTheStampAtZero() {
    byte[] param = FdbEncoding.versionstampedValueParam(new byte[0]);

    assertThat(param).hasSize(14);
    assertThat(Arrays.copyOfRange(param, 10, 14)).containsExactly(0, 0, 0, 0);
  }

  @Test
  void versionstampedValueParam_offsetAboveOneByteIsLittleEndian() {
    byte[] param = FdbEncoding.versionstampedValueParam(new byte[0x0102]);

    assertThat(Arrays.copyOfRange(param, param.length - 4, param.length))
        .containsExactly(0x02, 0x01, 0, 0);
  }

  @Test
  void checkKey_acceptsTheLimitAndRejectsOneMoreWith2102() {
    FdbEncoding.checkKey(new byte[10_000]);

    assertThatThrownBy(() -> FdbEncoding.checkKey(new byte[10_001]))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2102))
        .hasMessageContaining("key_length=10001");
  }

  @Test
  void checkValue_acceptsTheLimitAndRejectsOneMoreWith2103() {
    FdbEncoding.checkValue(new byte[100_000]);

    assertThatThrownBy(() -> FdbEncoding.checkValue(new byte[100_001]))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2103))
        .hasMessageContaining("value_length=100001");
  }

  @Test
  void checkVersionstampedKeyParam_measuresTheKeyWithoutTheOffsetSuffix() {
    FdbEncoding.checkVersionstampedKeyParam(new byte[10_004]);

    assertThatThrownBy(() -> FdbEncoding.checkVersionstampedKeyParam(new byte[10_005]))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2102));
  }

  @Test
  void checkVersionstampedValuePrefix_countsTheTenStampBytes() {
    FdbEncoding.checkVersionstampedValuePrefix(new byte[99_990]);

    assertThatThrownBy(() -> FdbEncoding.checkVersionstampedValuePrefix(new byte[99_991]))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2103));
  }

  @Test
  void checkRange_rejectsInvertedRangesWith2005() {
    FdbEncoding.checkRange(new byte[] {1}, new byte[] {1});
    FdbEncoding.checkRange(new byte[] {1}, new byte[] {(byte) 0x80});

    assertThatThrownBy(() -> FdbEncoding.checkRange(new byte[] {(byte) 0x80}, new byte[] {1}))
        .isInstanceOfSatisfying(BackendException.class, e -> assertThat(e.code()).isEqualTo(2005));
  }

  @Test
  void directoryPath_rejectsEmptyPathsAndElements() {
    assertThat(FdbEncoding.directoryPath("a", "b")).containsExactly("a", "b");
    assertThatThrownBy(() -> FdbEncoding.directoryPath())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> FdbEncoding.directoryPath("a", ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("element 1");
  }

  @Test
  void abbreviate_keepsFortyPrintableBytes() {
    assertThat(FdbEncoding.abbreviate(new byte[] {'k', 0})).isEqualTo("k\\x00");
    assertThat(FdbEncoding.abbreviate(new byte[50])).endsWith("...").hasSize(40 * 4 + 3);
  }
}

package io.dgen.backend;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ByteKeysTest {

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aRangeHoldsOneKey_onlyWhenItsEndIsTheKeyAfterItsBegin() {
    assertThat(ByteKeys.isOneKey(b("ab"), ByteKeys.keyAfter(b("ab")))).isTrue();
    assertThat(ByteKeys.isOneKey(b(""), new byte[] {0})).isTrue();
    assertThat(ByteKeys.isOneKey(b("ab"), b("ac"))).isFalse();
    assertThat(ByteKeys.isOneKey(b("ab"), b("ab\u0001"))).isFalse();
    assertThat(ByteKeys.isOneKey(b("ab"), new byte[] {'a', 'c', 0})).isFalse();
    assertThat(ByteKeys.isOneKey(b("ab"), ByteKeys.keyAfter(ByteKeys.keyAfter(b("ab"))))).isFalse();
  }

  @Test
  void aClearedRange_countsItsBounds_orItsKeyWhenItHoldsOne() {
    assertThat(ByteKeys.clearedBytes(b("abc"), ByteKeys.keyAfter(b("abc")))).isEqualTo(3);
    assertThat(ByteKeys.clearedBytes(b("abc"), b("abd"))).isEqualTo(6);
  }
}

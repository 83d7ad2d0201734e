package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class KeyRangesTest {

  private static List<String> render(KeyRanges r) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < r.size(); i++) {
      out.add(TestKeys.s(r.begin(i)) + ".." + TestKeys.s(r.end(i)));
    }
    return out;
  }

  @Test
  void build_sortsAndCoalescesOverlappingAndTouchingRanges() {
    KeyRanges r =
        new KeyRanges.Builder()
            .add(b("m"), b("p"))
            .add(b("a"), b("c"))
            .add(b("c"), b("d"))
            .add(b("b"), b("bb"))
            .add(b("o"), b("q"))
            .add(b("x"), b("x"))
            .add(b("z"), b("y"))
            .build();
    assertThat(render(r)).containsExactly("a..d", "m..q");
    assertThat(r.byteSize()).isEqualTo(4);
  }

  @Test
  void intersects_isFalseForTouchingRangesAndTrueForOverlap() {
    KeyRanges reads = new KeyRanges.Builder().add(b("b"), b("d")).addKey(b("k")).build();
    assertThat(reads.intersects(new KeyRanges.Builder().add(b("d"), b("k")).build())).isFalse();
    assertThat(reads.intersects(new KeyRanges.Builder().add(b("a"), b("b")).build())).isFalse();
    assertThat(reads.intersects(new KeyRanges.Builder().addKey(b("k\0")).build())).isFalse();
    assertThat(reads.intersects(new KeyRanges.Builder().addKey(b("k")).build())).isTrue();
    assertThat(reads.intersects(new KeyRanges.Builder().add(b("c"), b("c\0")).build())).isTrue();
    assertThat(reads.intersects(KeyRanges.EMPTY)).isFalse();
  }
}

package io.dgen.internal.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.DeserializationContext;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.deser.ValueInstantiator;
import tools.jackson.databind.deser.bean.BeanDeserializerBase;
import tools.jackson.databind.deser.std.StdValueInstantiator;
import tools.jackson.databind.exc.ValueInstantiationException;
import tools.jackson.dataformat.smile.SmileMapper;

/** The default mapper's creators: what Jackson's own instantiator makes, and fails with. */
class FastCreatorsTest {

  private final ObjectMapper fast = Serde.defaultMapper();
  private final ObjectMapper plain = SmileMapper.builder().build();

  record Point(int x, long y, String label, List<Integer> tags) {}

  private record Hidden(double weight, Map<String, Point> points) {}

  record Checked(int n) {
    Checked {
      if (n < 0) {
        throw new IllegalArgumentException("n must not be negative: " + n);
      }
    }
  }

  static final class Creator {
    final String name;
    final int size;

    @JsonCreator
    Creator(@JsonProperty("name") String name, @JsonProperty("size") int size) {
      this.name = name;
      this.size = size;
    }

    @JsonProperty
    String name() {
      return name;
    }

    @JsonProperty
    int size() {
      return size;
    }
  }

  @Test
  void theDefaultMapper_constructsRecordsThroughAPreparedHandle() {
    ValueInstantiator ours = instantiator(fast, Point.class);

    assertThat(ours.getClass().getName()).isEqualTo(FastCreators.class.getName() + "$Spreading");
    assertThat(instantiator(plain, Point.class)).isExactlyInstanceOf(StdValueInstantiator.class);
  }

  private static ValueInstantiator instantiator(ObjectMapper mapper, Class<?> type) {
    DeserializationContext ctxt = mapper._deserializationContext();
    return ((BeanDeserializerBase) ctxt.findRootValueDeserializer(ctxt.constructType(type)))
        .getValueInstantiator();
  }

  @Test
  void records_publicAndPrivate_decodeAsJacksonDecodesThem() {
    Point p = new Point(3, 1L << 40, "a", List.of(1, 2));
    Hidden h = new Hidden(0.5, Map.of("k", p));

    assertThat(fast.readValue(fast.writeValueAsBytes(p), Point.class))
        .isEqualTo(plain.readValue(plain.writeValueAsBytes(p), Point.class))
        .isEqualTo(p);
    assertThat(fast.readValue(fast.writeValueAsBytes(h), Hidden.class)).isEqualTo(h);
  }

  @Test
  void aJsonCreatorConstructor_getsTheSameArguments() {
    Creator c = fast.readValue(fast.writeValueAsBytes(new Creator("n", 7)), Creator.class);

    assertThat(c.name).isEqualTo("n");
    assertThat(c.size).isEqualTo(7);
  }

  @Test
  void missingPrimitiveArguments_getJacksonsDefaults() {
    byte[] empty = plain.writeValueAsBytes(Map.of());

    assertThat(fast.readValue(empty, Point.class))
        .isEqualTo(plain.readValue(empty, Point.class))
        .isEqualTo(new Point(0, 0L, null, null));
  }

  @Test
  void aThrowingConstructor_failsAsWithJacksonsInstantiator() {
    byte[] bad = plain.writeValueAsBytes(Map.of("n", -1));

    Throwable ours = catchThrowable(() -> fast.readValue(bad, Checked.class));
    Throwable theirs = catchThrowable(() -> plain.readValue(bad, Checked.class));

    assertThat(ours)
        .isInstanceOf(ValueInstantiationException.class)
        .hasRootCauseInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("n must not be negative: -1");
    assertThat(ours.getClass()).isEqualTo(theirs.getClass());
    assertThat(ours.getMessage()).isEqualTo(theirs.getMessage());
    assertThat(fast.readValue(plain.writeValueAsBytes(Map.of("n", 2)), Checked.class))
        .isEqualTo(new Checked(2));
  }
}

package io.dgen.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code dgen.state-encoding} reaches the runtime: with {@code structured} (the default) a change
 * to one field of a wide state writes about that field, with {@code term} the whole state.
 */
class StateEncodingPropertyTest {

  private static final int FIELDS = 40;
  private static final int FIELD_CHARS = 250;
  private static final long STATE_BYTES = (long) FIELDS * FIELD_CHARS;

  /** A state of {@link #FIELDS} fields; each call sets one of them and replies when committed. */
  public static class Wide implements DGenServer<Map<String, String>, Wide.Put> {

    /** Sets field {@code name} to {@code value}. */
    public record Put(String name, String value) implements Call<Boolean> {}

    @Override
    public InitResult<Map<String, String>> init(@Nullable Object arg) {
      Map<String, String> fields = new LinkedHashMap<>();
      for (int i = 0; i < FIELDS; i++) {
        fields.put("field" + i, String.valueOf((char) ('a' + i % 26)).repeat(FIELD_CHARS));
      }
      return InitResult.ok(fields);
    }

    @Override
    public Result<Map<String, String>> handleCall(Put put, From from, Map<String, String> state) {
      Map<String, String> next = new LinkedHashMap<>(state);
      next.put(put.name(), put.value());
      return Result.reply(put, true, next);
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Hosted {
    @Bean
    @DGenHosted(kind = "wide", tenant = "test/encoding")
    Wide wide() {
      return new Wide();
    }
  }

  /**
   * The bytes written while one call changes one field of a server created beforehand (its state is
   * about {@link #STATE_BYTES} bytes).
   */
  private static long bytesOfAOneFieldChange(String... properties) {
    long[] bytes = new long[1];
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DGenAutoConfiguration.class))
        .withUserConfiguration(Hosted.class)
        .withPropertyValues("dgen.backend=memory", "dgen.buckets=4")
        .withPropertyValues(properties)
        .run(
            ctx -> {
              DGen dgen = ctx.getBean(DGen.class);
              MemoryBackend backend = (MemoryBackend) ctx.getBean(Backend.class);
              ServerRef<Wide.Put> wide =
                  dgen.ref(dgen.tenant("test", "encoding"), "wide", Tuple.from(1));
              Duration timeout = Duration.ofSeconds(20);
              assertThat(wide.call(new Wide.Put("field0", "x"), timeout)).isTrue();
              long before = backend.counters().bytesWritten();
              assertThat(wide.call(new Wide.Put("field1", "y"), timeout)).isTrue();
              bytes[0] = backend.counters().bytesWritten() - before;
            });
    return bytes[0];
  }

  @Test
  void structured_isTheDefault_andWritesAboutTheChangedField() {
    assertThat(bytesOfAOneFieldChange()).isLessThan(STATE_BYTES / 4);
    assertThat(bytesOfAOneFieldChange("dgen.state-encoding=structured"))
        .isLessThan(STATE_BYTES / 4);
  }

  @Test
  void term_rewritesTheWholeState() {
    // the whole state, but for the two short fields the calls set
    assertThat(bytesOfAOneFieldChange("dgen.state-encoding=term"))
        .isGreaterThan(STATE_BYTES * 3 / 4);
  }
}

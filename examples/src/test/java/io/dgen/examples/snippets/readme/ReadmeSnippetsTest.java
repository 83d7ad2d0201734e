package io.dgen.examples.snippets.readme;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.DGen;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import org.junit.jupiter.api.Test;

/** The README's code, compiled and run; {@code DocSnippetsTest} keeps the README equal to it. */
class ReadmeSnippetsTest {

  @Test
  void theServerInThirtyLines_countsWhatWasCast() {
    // snippet: readme-start
    try (Backend backend = MemoryBackend.create();
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("demo", "counter");
      ServerRef<Counter.Msg> counter =
          dgen.start(new Counter(), null, StartOptions.builder(tenant).build());
      counter.cast(new Counter.Increment(5)); // durably queued, applied by a consumer
      long value = counter.call(new Counter.Get()); // 5
      assertThat(value).isEqualTo(5); // hidden from the docs
    }
    // end snippet
  }
}

package io.dgen.examples.snippets.readme;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.DGen;
import io.dgen.HostOptions;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import org.junit.jupiter.api.Test;

/** The README's code, compiled and run; {@code DocSnippetsTest} keeps the README equal to it. */
class ReadmeSnippetsTest {

  @Test
  void theServerInThirtyLines_countsWhatWasCast() {
    // snippet: readme-start
    try (Backend backend = MemoryBackend.create(); // or RocksDbBackend.open(dir), FdbBackend.open()
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("demo");
      dgen.host(Counter.KIND, Counter::new, HostOptions.builder(tenant).build()); // every replica
      ServerRef<Counter.Msg> hits = dgen.ref(tenant, Counter.KIND, "home"); // anywhere, by id
      hits.cast(new Counter.Increment(5)); // durably queued; the first message creates "home"
      long value = hits.call(new Counter.Get()); // 5: a Get is answered with a Long
      assertThat(value).isEqualTo(5); // hidden from the docs
    }
    // end snippet
  }
}

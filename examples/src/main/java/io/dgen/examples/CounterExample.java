package io.dgen.examples;

import io.dgen.DGen;
import io.dgen.HostOptions;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.backend.Backend;
import java.util.List;

/**
 * The README's first command: host the counter kind, reach the counter {@code "clicks"} through a
 * ref, print the value it found, increment it, close the runtime, then in a new runtime over the
 * same store increment it again and print the value that survived. By default its data lives in the
 * embedded RocksDB backend under {@code examples/target/counter-data}, so running the command again
 * continues the count: the same id names the same server.
 */
public final class CounterExample {

  private CounterExample() {}

  /**
   * Runs the example on the embedded RocksDB backend (data in {@code target/counter-data}, or
   * {@code --data-dir DIR}), on the memory backend ({@code --memory}), or on FoundationDB when a
   * cluster file is given ({@code --cluster-file PATH} or {@code FDB_CLUSTER_FILE}).
   *
   * @param args optional {@code --data-dir DIR}, {@code --memory} or {@code --cluster-file PATH}
   */
  public static void main(String[] args) {
    try (Backend backend = Backends.open(args, "counter-data")) {
      try (DGen dgen = DGen.builder(backend).build()) {
        Tenant tenant = dgen.tenant("examples", "counter");
        // Every replica of a service hosts the kind; any of them may then run its servers.
        dgen.host(Counter.KIND, Counter::new, HostOptions.builder(tenant).build());
        // A ref names a server by kind and id, from any runtime; its first message creates it.
        ServerRef<Counter.Msg> clicks = dgen.ref(tenant, Counter.KIND, "clicks");

        long found = clicks.call(new Counter.Get());
        System.out.println("found on start:                   " + found);
        clicks.cast(new Counter.Increment(1));
        clicks.castAll(List.of(new Counter.Increment(2), new Counter.Increment(3)));
        long before = clicks.call(new Counter.Get());
        System.out.println("counter after 1 + 2 + 3:          " + before);
      }
      System.out.println("runtime closed; the counter's state stays in the store");

      // A new runtime: the same id names the same server, whose state comes from the store.
      try (DGen dgen = DGen.builder(backend).build()) {
        Tenant tenant = dgen.tenant("examples", "counter");
        dgen.host(Counter.KIND, Counter::new, HostOptions.builder(tenant).build());
        ServerRef<Counter.Msg> clicks = dgen.ref(tenant, Counter.KIND, "clicks");
        clicks.cast(new Counter.Increment(10));
        long after = clicks.call(new Counter.Get());
        System.out.println("restarted; persisted value + 10:  " + after);
      }
    }
  }
}

package io.dgen.examples;

import io.dgen.DGen;
import io.dgen.ProcessRef;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.backend.Backend;
import java.util.List;

/**
 * The README's first command: start a durable counter, print the value it found, increment it, stop
 * its process, start it again, and print the value that survived. By default its data lives in the
 * embedded RocksDB backend under {@code examples/target/counter-data}, so running the command again
 * continues the count.
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
    try (Backend backend = Backends.open(args, "counter-data");
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("examples", "counter");
      StartOptions options = StartOptions.builder(tenant).name("counter").build();

      ProcessRef<Counter.Msg> counter = dgen.start(new Counter(), null, options);
      long found = counter.call(new Counter.Get());
      System.out.println("found on start:                   " + found);
      counter.cast(new Counter.Increment(1));
      counter.castAll(List.of(new Counter.Increment(2), new Counter.Increment(3)));
      long before = counter.call(new Counter.Get());
      System.out.println("counter after 1 + 2 + 3:          " + before);

      counter.stop();
      System.out.println("process stopped; alive=" + counter.isAlive());

      // A new process of the same server: the state comes from the store, not from init().
      ServerRef<Counter.Msg> again =
          dgen.start(new Counter(), null, StartOptions.builder(tenant).build());
      again.cast(new Counter.Increment(10));
      long after = again.call(new Counter.Get());
      System.out.println("restarted; persisted value + 10:  " + after);
    }
  }
}

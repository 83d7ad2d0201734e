package io.dgen.backend;

import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A {@link Backend} decorator that counts the committed mutations of every key, and of every range
 * that versionstamped keys append to: what shows a hot key. FoundationDB cannot split one key, and
 * keys appended at the end of a range all land on the range's last shard, so a key or an appended
 * range that every message of a tenant touches caps the tenant's throughput at one storage team,
 * whatever the cluster's size.
 *
 * <p>Counted, for the attempt that committed (a retried attempt counts nothing): each {@code set},
 * {@code clear}, atomic {@code add} and versionstamped value under its key; a clear of a range
 * under its begin key; a versionstamped key under the range it appends to (the prefix and the
 * tuple's elements before the versionstamp).
 *
 * <pre>{@code
 * KeyHeatBackend heat = KeyHeatBackend.wrap(MemoryBackend.create());
 * ... run the workload through heat ...
 * KeyHeatBackend.Hot hottest = heat.hottest(1).get(0);  // its key, and how many mutations
 * }</pre>
 *
 * <p>Threading: thread-safe. For measurements; it adds a map update per mutation.
 */
public final class KeyHeatBackend extends ForwardingBackend {

  /**
   * A key or appended range and the mutations it took.
   *
   * @param key the key, or the prefix an appended range shares
   * @param appended whether it is a range that versionstamped keys append to
   * @param mutations committed mutations
   */
  public record Hot(byte[] key, boolean appended, long mutations) {
    @Override
    public String toString() {
      return (appended ? "appended " : "key ") + ByteArrayUtil.printable(key) + ": " + mutations;
    }
  }

  private record Target(ByteBuffer key, boolean appended) {}

  private final Map<Target, LongAdder> heat = new ConcurrentHashMap<>();

  private KeyHeatBackend(Backend delegate) {
    super(delegate);
  }

  /** Wraps {@code backend}. */
  public static KeyHeatBackend wrap(Backend backend) {
    return new KeyHeatBackend(backend);
  }

  /** The {@code n} hottest keys and appended ranges, hottest first. */
  public List<Hot> hottest(int n) {
    List<Hot> all = new ArrayList<>(heat.size());
    heat.forEach((t, c) -> all.add(new Hot(t.key().array(), t.appended(), c.sum())));
    all.sort(Comparator.comparingLong(Hot::mutations).reversed());
    return all.subList(0, Math.min(n, all.size()));
  }

  /**
   * The hottest key or appended range outside {@code except} (keys written at a steady rate
   * whatever the load, such as heartbeats), or empty if nothing else was written.
   */
  public Optional<Hot> hottestOutside(byte[] except) {
    @Nullable Hot hottest = null;
    for (Map.Entry<Target, LongAdder> e : heat.entrySet()) {
      byte[] key = e.getKey().key().array();
      long mutations = e.getValue().sum();
      if (!ByteArrayUtil.startsWith(key, except)
          && (hottest == null || mutations > hottest.mutations())) {
        hottest = new Hot(key, e.getKey().appended(), mutations);
      }
    }
    return Optional.ofNullable(hottest);
  }

  /** Forgets what was counted. */
  public void reset() {
    heat.clear();
  }

  /** {@inheritDoc} <b>The body may execute more than once.</b> */
  @Override
  public <T> T run(Function<? super Transaction, ? extends T> body) {
    Objects.requireNonNull(body, "body");
    Run run = new Run();
    T result = delegate().run(tx -> body.apply(run.begin(tx)));
    run.committed();
    return result;
  }

  /** {@inheritDoc} <b>The body may execute more than once.</b> */
  @Override
  public <T> CompletableFuture<T> runAsync(
      Function<? super Transaction, ? extends CompletableFuture<? extends T>> body) {
    Objects.requireNonNull(body, "body");
    Run run = new Run();
    return delegate()
        .<T>runAsync(tx -> body.apply(run.begin(tx)))
        .thenApply(
            value -> {
              run.committed();
              return value;
            });
  }

  /** One call of {@code run}: its last attempt's mutations count once it committed. */
  private final class Run {
    private @Nullable Attempt last;

    synchronized Attempt begin(Transaction tx) {
      Attempt a = new Attempt(tx);
      last = a;
      return a;
    }

    synchronized void committed() {
      Attempt a = last;
      if (a != null) {
        for (Target t : a.touched) {
          heat.computeIfAbsent(t, k -> new LongAdder()).increment();
        }
      }
    }
  }

  /** One attempt, noting what it mutates. */
  private static final class Attempt extends ForwardingTransaction {
    final List<Target> touched = new ArrayList<>();

    Attempt(Transaction delegate) {
      super(delegate);
    }

    @Override
    void wrote(long bytes) {
      // counted by key in the overrides below
    }

    private synchronized void note(byte[] key, boolean appended) {
      touched.add(new Target(ByteBuffer.wrap(key.clone()), appended));
    }

    @Override
    public void set(byte[] key, byte[] value) {
      note(key, false);
      super.set(key, value);
    }

    @Override
    public void clear(byte[] key) {
      note(key, false);
      super.clear(key);
    }

    @Override
    public void clearRange(byte[] begin, byte[] end) {
      note(begin, false);
      super.clearRange(begin, end);
    }

    @Override
    public void add(byte[] key, long delta) {
      note(key, false);
      super.add(key, delta);
    }

    @Override
    public void setVersionstampedKey(byte[] prefix, Tuple key, byte[] value) {
      List<Object> before = new ArrayList<>();
      for (Object item : key.getItems()) {
        if (item instanceof Versionstamp) {
          break;
        }
        before.add(item);
      }
      note(ByteArrayUtil.join(prefix, Tuple.fromList(before).pack()), true);
      super.setVersionstampedKey(prefix, key, value);
    }

    @Override
    public void setVersionstampedValue(byte[] key, byte[] valuePrefix) {
      note(key, false);
      super.setVersionstampedValue(key, valuePrefix);
    }
  }
}

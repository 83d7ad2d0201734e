package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.ServerControl;
import io.dgen.backend.CountingBackend;
import io.dgen.backend.KeyValue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The state encodings through the runtime: what a cast to a server with a large state writes,
 * measured with the backend's cost counters, and the size limit.
 */
class StateEncodingTest extends RuntimeTestBase {

  // ---------------------------------------------------------------- a wide state: a 1,000-entry
  // map

  record Wide(Map<String, String> fields, @Nullable Map<String, String> blobs) {}

  sealed interface WideMsg {}

  record Put(String key, String value) implements WideMsg {}

  record Get(String key) implements WideMsg, Call<String> {}

  /** Adds {@code count} blobs of {@code size} characters each. */
  record AddBlobs(int count, int size) implements WideMsg, Call<Integer> {}

  record Size() implements WideMsg, Call<Integer> {}

  static final class WideServer implements DGenServer<Wide, WideMsg> {
    @Override
    public InitResult<Wide> init(@Nullable Object arg) {
      Map<String, String> fields = new LinkedHashMap<>();
      for (int i = 0; i < 1_000; i++) {
        fields.put(String.format("field%04d", i), "value of field " + i);
      }
      return InitResult.ok(new Wide(fields, null));
    }

    @Override
    public Result<Wide> handleCast(WideMsg message, Wide state) {
      if (message instanceof Put p) {
        Map<String, String> fields = new LinkedHashMap<>(state.fields());
        fields.put(p.key(), p.value());
        return Result.noReply(new Wide(fields, state.blobs()));
      }
      return Result.noReply(state);
    }

    @Override
    public Result<Wide> handleCall(WideMsg request, From from, Wide state) {
      if (request instanceof Get g) {
        return Result.reply(state.fields().get(g.key()), state);
      }
      if (request instanceof AddBlobs a) {
        Map<String, String> blobs = new LinkedHashMap<>();
        if (state.blobs() != null) {
          blobs.putAll(state.blobs());
        }
        for (int i = 0; i < a.count(); i++) {
          blobs.put("blob" + blobs.size(), "x".repeat(a.size()));
        }
        return Result.reply(blobs.size(), new Wide(state.fields(), blobs));
      }
      if (request instanceof Size) {
        return Result.reply(state.blobs() == null ? 0 : state.blobs().size(), state);
      }
      return Result.reply(null, state);
    }
  }

  // ---------------------------------------------------------------- a list of 1,000 items with ids

  record Item(String id, String name, int qty) {}

  record Inventory(List<Item> items) {}

  sealed interface InventoryMsg {}

  record SetQty(String id, int qty) implements InventoryMsg {}

  record Move(String id, int to) implements InventoryMsg {}

  record Order() implements InventoryMsg, Call<List<String>> {}

  static final class InventoryServer implements DGenServer<Inventory, InventoryMsg> {
    @Override
    public InitResult<Inventory> init(@Nullable Object arg) {
      List<Item> items = new ArrayList<>();
      for (int i = 0; i < 1_000; i++) {
        items.add(new Item(String.format("sku-%04d", i), "the item number " + i, i));
      }
      return InitResult.ok(new Inventory(items));
    }

    @Override
    public Result<Inventory> handleCast(InventoryMsg message, Inventory state) {
      List<Item> items = new ArrayList<>(state.items());
      if (message instanceof SetQty s) {
        items.replaceAll(i -> i.id().equals(s.id()) ? new Item(i.id(), i.name(), s.qty()) : i);
      } else if (message instanceof Move m) {
        Item item = items.stream().filter(i -> i.id().equals(m.id())).findFirst().orElseThrow();
        items.remove(item);
        items.add(m.to(), item);
      }
      return Result.noReply(new Inventory(items));
    }

    @Override
    public Result<Inventory> handleCall(InventoryMsg request, From from, Inventory state) {
      List<String> ids = new ArrayList<>();
      state.items().forEach(i -> ids.add(i.id()));
      return Result.reply(ids, state);
    }
  }

  // ---------------------------------------------------------------- tests

  @ParameterizedTest(name = "cache={0}")
  @ValueSource(booleans = {true, false})
  void castChangingOneEntryOfA1000EntryMap_writesUnderOnePercentOfTheState(boolean cache) {
    long[] whole = new long[1];
    ServerRef<WideMsg> ref = measure(whole, () -> startWide(dgen, tenant, cache));
    long cast = castAndMeasure(ref, new Put("field0500", "changed"));
    System.out.printf(
        "wide map, structured, cache=%s: whole state=%d bytes, one-entry cast=%d bytes (%.3f%%)%n",
        cache, whole[0], cast, 100.0 * cast / whole[0]);
    assertThat(cast).isPositive().isLessThan(whole[0] / 100);
    assertThat(ref.<String>call(new Get("field0500"))).isEqualTo("changed");
  }

  @Test
  void termEncoding_rewritesTheWholeStateOnEveryCast() {
    try (DGen term =
        DGen.builder(backend)
            .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
            .stateEncoding(StateEncoding.TERM)
            .build()) {
      Tenant t = term.tenant("test", UUID.randomUUID().toString());
      long[] whole = new long[1];
      ServerRef<WideMsg> ref = measure(whole, () -> startWide(term, t, true));
      long cast = castAndMeasure(ref, new Put("field0500", "changed"));
      System.out.printf(
          "wide map, term: whole state=%d bytes, one-entry cast=%d bytes (%.1f%%)%n",
          whole[0], cast, 100.0 * cast / whole[0]);
      assertThat(stateKeys(t, ref))
          .extracting(k -> k.get(0))
          .containsOnly("t", "v"); // chunks and the version key
      assertThat(cast).isGreaterThan(whole[0] / 2);
      assertThat(ref.<String>call(new Get("field0500"))).isEqualTo("changed");
    }
  }

  @ParameterizedTest(name = "cache={0}")
  @ValueSource(booleans = {true, false})
  void castMovingOrEditingOneOf1000Items_writesUnderTwoPercentOfTheList(boolean cache) {
    long[] whole = new long[1];
    ServerRef<InventoryMsg> ref =
        measure(
            whole,
            () ->
                dgen.start(
                    new InventoryServer(),
                    null,
                    StartOptions.builder(tenant).cache(cache).build()));
    long edit = castAndMeasure(ref, new SetQty("sku-0700", -1));
    long move = castAndMeasure(ref, new Move("sku-0500", 10));
    System.out.printf(
        "1000 items, cache=%s: whole=%d bytes, edit cast=%d (%.3f%%), move cast=%d (%.3f%%)%n",
        cache, whole[0], edit, 100.0 * edit / whole[0], move, 100.0 * move / whole[0]);
    assertThat(edit).isPositive().isLessThan(whole[0] / 50);
    assertThat(move).isPositive().isLessThan(whole[0] / 50);
    List<String> ids = ref.call(new Order());
    assertThat(ids).hasSize(1_000);
    assertThat(ids.get(10)).isEqualTo("sku-0500");
  }

  @Test
  void aStateRestartedFromTheStore_stillWritesSmallDiffs() {
    ProcessRef<InventoryMsg> first =
        dgen.start(new InventoryServer(), null, StartOptions.builder(tenant).build());
    castAndMeasure(first, new Move("sku-0999", 0));
    first.stop();
    try (DGen other = newDGen()) {
      Tenant same = other.tenant(tenant.path().toArray(new String[0]));
      ServerRef<InventoryMsg> second =
          other.start(new InventoryServer(), null, StartOptions.builder(same).build());
      long move = castAndMeasure(second, new Move("sku-0001", 500));
      assertThat(move).isLessThan(2_000);
      List<String> ids = second.call(new Order());
      assertThat(ids.get(0)).isEqualTo("sku-0999");
      assertThat(ids.get(500)).isEqualTo("sku-0001");
    }
  }

  @Test
  void aStateTooLargeForOneTransaction_failsClearly_andTheStateIsUnchanged() {
    ServerRef<WideMsg> ref = startWide(dgen, tenant, true);
    assertThat(ref.<Integer>priorityCall(new AddBlobs(2, 1_000_000))).isEqualTo(2);
    List<KeyValue> before = dump(tenant, ref);

    assertThatThrownBy(() -> ref.priorityCall(new AddBlobs(10, 1_000_000)))
        .isInstanceOf(StateTooLargeException.class)
        .hasMessageContaining("budget")
        .hasMessageContaining("nothing was written");

    assertThat(dump(tenant, ref)).isEqualTo(before);
    assertThat(ref.<Integer>priorityCall(new Size())).isEqualTo(2);
    assertThat(ref.<Integer>call(new AddBlobs(1, 10))).isEqualTo(3); // still works
  }

  record Packed(Map<String, Integer> open, @StoreAsTerm Map<String, Integer> packed) {}

  static final class PackedServer implements DGenServer<Packed, String> {
    @Override
    public InitResult<Packed> init(@Nullable Object arg) {
      return InitResult.ok(new Packed(Map.of("a", 1, "b", 2), Map.of("a", 1, "b", 2)));
    }
  }

  @Test
  void storeAsTerm_keepsTheAnnotatedFieldOneTerm() {
    ServerRef<String> ref =
        dgen.start(new PackedServer(), null, StartOptions.builder(tenant).build());
    assertThat(stateKeys(tenant, ref))
        .contains(Tuple.from("m", "open", "m", "a", "t", 0L), Tuple.from("m", "packed", "t", 0L))
        .doesNotContain(Tuple.from("m", "packed", "m"));
  }

  // ---------------------------------------------------------------- helpers

  private static ProcessRef<WideMsg> startWide(DGen d, Tenant t, boolean cache) {
    return d.start(new WideServer(), null, StartOptions.builder(t).cache(cache).build());
  }

  /** Runs {@code start} and stores the bytes it wrote (the initial state) in {@code whole[0]}. */
  private <M> ServerRef<M> measure(long[] whole, java.util.function.Supplier<ServerRef<M>> start) {
    CountingBackend.Counters before = counters();
    ServerRef<M> ref = start.get();
    whole[0] = counters().minus(before).bytesWritten();
    return ref;
  }

  /**
   * Bytes written by one cast: its push and the consumer transaction that applied it. The queue is
   * empty as soon as that transaction commits, a moment before the counting backend's completion
   * stage counts it (on a loaded machine, a long moment): the count is taken once it stopped
   * changing over two polls.
   */
  private <M> long castAndMeasure(ServerRef<M> ref, M message) {
    await().atMost(Duration.ofSeconds(30)).until(() -> ServerControl.of(ref).queueLength() == 0);
    CountingBackend.Counters before = counters();
    ref.cast(message);
    long[] last = {-1};
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(200))
        .until(
            () -> {
              long written = counters().minus(before).bytesWritten();
              boolean settled = written == last[0];
              last[0] = written;
              return ServerControl.of(ref).queueLength() == 0 && settled;
            });
    return last[0];
  }

  private static Subspace stateSpace(Tenant t, ServerRef<?> ref) {
    return t.subspace().subspace(ref.tuid()).subspace(Tuple.from("s", 0));
  }

  private List<KeyValue> dump(Tenant t, ServerRef<?> ref) {
    Subspace s = stateSpace(t, ref);
    return backend.run(tx -> tx.getRange(s.range().begin, s.range().end));
  }

  private List<Tuple> stateKeys(Tenant t, ServerRef<?> ref) {
    Subspace s = stateSpace(t, ref);
    List<Tuple> out = new ArrayList<>();
    for (KeyValue kv : dump(t, ref)) {
      out.add(s.unpack(kv.key()));
    }
    return out;
  }
}

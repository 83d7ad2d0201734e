package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dgen.admin.ServerControl;
import io.dgen.backend.KeyValue;
import io.dgen.internal.codec.Envelope;
import io.dgen.internal.codec.Serde;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Queued messages name their class by an index into the server's durable type table: short tags,
 * resolvable to a class name from stored data alone, never renumbered, and checked against the
 * allow-list like a name.
 */
class TypeTableTest extends RuntimeTestBase {

  /** A class that must never be loaded by decoding: its initializer would record it. */
  static final class Forbidden {
    static {
      System.setProperty("dgen.test.typetable.forbidden.loaded", "true");
    }
  }

  record Ping(String text) {}

  private final Serde serde = new Serde(Serde.defaultMapper());

  private ServerKeys keys(ServerRef<?> ref) {
    return new ServerKeys(tenant.subspace(), Buckets.of(tenant.bucketCount()), ref.tuid());
  }

  private Map<Integer, String> table(ServerRef<?> ref) {
    ServerKeys keys = keys(ref);
    List<KeyValue> rows =
        backend.run(tx -> tx.getRange(keys.types().range().begin, keys.types().range().end));
    Map<Integer, String> out = new TreeMap<>();
    for (KeyValue kv : rows) {
      out.put(
          (int) keys.types().unpack(kv.key()).getLong(0),
          new String(kv.value(), StandardCharsets.UTF_8));
    }
    return out;
  }

  private List<KeyValue> items(ServerRef<?> ref) {
    ServerKeys keys = keys(ref);
    return backend.run(tx -> tx.getRange(keys.items().range().begin, keys.items().range().end));
  }

  @Test
  void queuedMessages_nameTheirClassByATableIndex_whichTheTableResolves() {
    ServerRef<TestServer.Msg> ref = start(b -> b.consume(false));
    ref.cast(new TestServer.Add(5));
    byte[] item = items(ref).get(0).value();
    String raw = new String(item, StandardCharsets.ISO_8859_1);
    assertThat(raw).doesNotContain("TestServer");
    assertThat(table(ref).values())
        .contains(TestServer.Add.class.getName(), TestServer.Get.class.getName());
    Envelope env = Envelope.decode(item, serde);
    assertThat(table(ref).get(env.typeIndex())).isEqualTo(TestServer.Add.class.getName());
  }

  @Test
  void theTypeTable_keepsItsIndexes_andGrowsAtTheEnd() {
    ProcessRef<Object> first =
        dgen.start(
            new SerializationTest.LooseServer(),
            null,
            StartOptions.builder(tenant).consume(false).build());
    Map<Integer, String> before = table(first);
    assertThat(before).isNotEmpty();
    first.stop();
    ProcessRef<Object> second =
        dgen.start(
            new SerializationTest.LooseServer(),
            null,
            StartOptions.builder(tenant).consume(false).allowTypes(Ping.class).build());
    Map<Integer, String> after = table(second);
    assertThat(after).containsAllEntriesOf(before).hasSize(before.size() + 1);
    assertThat(after.get(before.size())).isEqualTo(Ping.class.getName());
    // Starting again changes nothing.
    second.stop();
    dgen.start(
        new SerializationTest.LooseServer(),
        null,
        StartOptions.builder(tenant).consume(false).allowTypes(Ping.class).build());
    assertThat(table(second)).isEqualTo(after);
  }

  @Test
  void anItemNamingATableEntryThisServerDoesNotAllow_isDeadLettered_andNeverLoaded() {
    ProcessRef<TestServer.Msg> publisher = start(b -> b.consume(false));
    ServerKeys keys = keys(publisher);
    int index = 1_000;
    byte[] item = Envelope.encode(serde, Envelope.CAST, index, 0, null, null, Map.of());
    backend.run(
        tx -> {
          tx.set(keys.typeKey(index), Forbidden.class.getName().getBytes(StandardCharsets.UTF_8));
          tx.setVersionstampedKey(
              keys.lanePrefix(ServerKeys.LANE_NORMAL), ServerKeys.newItemKey(0), item);
          tx.add(keys.pushCounter(), 1);
          return null;
        });
    publisher.cast(new TestServer.Add(5));
    publisher.stop();

    ServerRef<TestServer.Msg> consumer = start();
    awaitTotal(consumer, 5);
    assertThat(System.getProperty("dgen.test.typetable.forbidden.loaded")).isNull();
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> ServerControl.of(consumer).deadLetters().size() == 1);
    assertThat(ServerControl.of(consumer).deadLetters().get(0).lastError())
        .contains(Forbidden.class.getName());
    assertThat(table(consumer)).containsEntry(index, Forbidden.class.getName());
  }
}

package io.dgen.internal.codec;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.KeyValue;
import io.dgen.backend.memory.MemoryBackend;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;

/**
 * A state subspace in a fresh memory-backend tenant, with a codec, as the runtime uses them: the
 * state at {@code (tuid.., "s", 0)} next to a version key the codec must leave alone.
 */
final class CodecFixture implements AutoCloseable {

  static final byte[] VERSION_VALUE = {42};

  final MemoryBackend backend = MemoryBackend.create();
  final Serde serde = new Serde(Serde.defaultMapper());
  final Subspace space;
  final byte[] versionKey;
  StateCodec codec;

  CodecFixture() {
    this(false);
  }

  CodecFixture(boolean term) {
    Subspace tenant = backend.directory("codec-test", UUID.randomUUID().toString());
    this.space = tenant.subspace(Tuple.from("dgen_server", "Example", "s", 0));
    this.versionKey = space.pack(Tuple.from("v"));
    this.codec = term ? new TermStateCodec(serde) : new StructuredStateCodec(serde);
    backend.run(
        tx -> {
          tx.set(versionKey, VERSION_VALUE);
          return null;
        });
  }

  StoredState write(@Nullable StoredState old, JsonNode tree) {
    return backend.run(tx -> codec.write(tx, space, old, tree));
  }

  StoredState write(@Nullable StoredState old, JsonNode tree, JavaType type) {
    return backend.run(tx -> codec.write(tx, space, old, tree, type));
  }

  /** Writes a state object, as the runtime does. */
  StoredState writeObject(@Nullable StoredState old, @Nullable Object state, Class<?> type) {
    JavaType t = serde.type(type);
    return backend.run(tx -> codec.write(tx, space, old, state, t));
  }

  /** Every row of the state subspace, the version key included. */
  List<KeyValue> dump() {
    return backend.run(tx -> tx.getRange(space.range().begin, space.range().end));
  }

  /** Decodes as the runtime does: one range read, the version key's row removed. */
  @Nullable StoredState read() {
    List<KeyValue> rows = new ArrayList<>(dump());
    rows.removeIf(kv -> Arrays.equals(kv.key(), versionKey));
    return codec.decode(space, rows);
  }

  /** The version key's value, which no codec write may change. */
  byte @Nullable [] version() {
    return backend.run(tx -> tx.get(versionKey));
  }

  /** Bytes written by {@code body}, per the backend's counters. */
  long bytesWritten(Runnable body) {
    MemoryBackend.Counters before = backend.counters();
    body.run();
    return backend.counters().minus(before).bytesWritten();
  }

  /** The rows as readable lines: the key as a tuple relative to the state subspace, and value. */
  List<String> keyLines() {
    List<String> out = new ArrayList<>();
    for (KeyValue kv : dump()) {
      Tuple t = space.unpack(kv.key());
      out.add(
          "(.., "
              + describe(t)
              + ") = "
              + (kv.value().length <= 24
                  ? ByteArrayUtil.printable(kv.value())
                  : kv.value().length + " bytes"));
    }
    return out;
  }

  private static String describe(Tuple t) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < t.size(); i++) {
      Object o = t.get(i);
      if (i > 0) {
        b.append(", ");
      }
      if (o instanceof String s) {
        b.append('"').append(s).append('"');
      } else if (o instanceof byte[] bytes) {
        b.append("b'").append(ByteArrayUtil.printable(bytes)).append('\'');
      } else {
        b.append(o);
      }
    }
    return b.toString();
  }

  @Override
  public void close() {
    backend.close();
  }
}

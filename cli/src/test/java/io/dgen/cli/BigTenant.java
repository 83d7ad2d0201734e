package io.dgen.cli;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import com.apple.foundationdb.tuple.Versionstamp;
import io.dgen.backend.Backend;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import io.dgen.internal.keys.TenantKeys;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A tenant of many servers written directly in the runtime's key layout (starting 100,000 servers
 * through a runtime would take minutes): each has its server index entry and counters; every tenth
 * has queued items (a head item with a versionstamp of its own).
 */
final class BigTenant {

  private BigTenant() {}

  static Subspace fill(Backend backend, int servers, int perTransaction, String... tenant) {
    Subspace space = backend.directory(tenant);
    TenantKeys keys = new TenantKeys(space, Buckets.of(Buckets.DEFAULT_COUNT));
    byte[] behaviour = "io.dgen.bench.Big".getBytes(StandardCharsets.UTF_8);
    for (int from = 0; from < servers; from += perTransaction) {
      int start = from;
      int end = Math.min(servers, from + perTransaction);
      backend.run(
          tx -> {
            for (int i = start; i < end; i++) {
              Tuple tuid = Tuple.from("srv", (long) i);
              tx.set(keys.serverKey(tuid), behaviour);
              if (i % 10 == 0) {
                ServerKeys server = new ServerKeys(space, keys.buckets(), tuid);
                long queued = 1 + i % 97;
                tx.set(server.pushCounter(), counter(queued));
                byte[] stamp =
                    ByteBuffer.allocate(10).putLong(1_000L + i).putShort((short) 0).array();
                tx.set(
                    server
                        .items()
                        .pack(Tuple.from(ServerKeys.LANE_NORMAL, Versionstamp.complete(stamp, 0))),
                    new byte[] {1, 2, 1, 0});
              }
            }
            return null;
          });
    }
    return space;
  }

  private static byte[] counter(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
  }
}

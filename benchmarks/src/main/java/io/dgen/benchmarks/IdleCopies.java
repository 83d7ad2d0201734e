package io.dgen.benchmarks;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.ByteArrayUtil;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.backend.Backend;
import io.dgen.backend.KeyValue;
import io.dgen.internal.keys.TenantKeys;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongFunction;

/**
 * Copies of idle hosted servers that the runtime made, for the {@code idle-hosted} row: a million
 * servers made through the runtime would take hours (each is activated, loaded, applies a message
 * and is evicted), while their keys are a few hundred bytes each.
 *
 * <p>{@link #read} reads every key of the tenant after the runtime made a few servers (the
 * templates) and evicted them, and sorts them by what they name (docs/key-layout.md):
 *
 * <ul>
 *   <li>a template's own keys {@code (tuid..)}: state, queue counters, commit marker slots;
 *   <li>its server index entry {@code FF (2, tuid..)} (hosted, idle);
 *   <li>tenant-level keys that name no server: the placement, member records, leases, bells, the
 *       kind's type table; and the buckets' wake logs {@code FF (6, b, VS)}, whose activating
 *       entries carry a tuid but are ring history that a watcher trims 30 s after reading it: a
 *       copy has none, as a server made long ago has none.
 * </ul>
 *
 * A template of a kind with an expiry ({@code expireAfter}) also has its expiry index entry {@code
 * FF (13, kind, bucket, expiresAt, tuid..)}, and its idle entry carries {@code expiresAt}: each
 * copy gets the template's time, indexed under its own bucket. Anything else (a ready index entry,
 * a timer, a key outside these) fails the copy: it would name a template in a way the copy does not
 * rewrite. {@link #write} then writes, for each further tuid, one template's keys with the
 * template's tuid replaced by it: the key bytes after the tenant prefix are the packed tuid
 * followed by the key's own suffix, so the replacement is exact, and nothing a server keeps depends
 * on its bucket (the ready index, the only per-bucket key naming a hosted server, is empty for an
 * idle one). Values are copied as they are; none holds its tuid ({@link #read} checks).
 */
final class IdleCopies {

  /** A hosted server's idle entry in the server index (hosted marker 0, state 0 idle). */
  private static final byte[] IDLE_ENTRY = {0, 0};

  /** What a template without an expiry index entry has as its expiry time. */
  private static final long NO_EXPIRY = Long.MIN_VALUE;

  private static final int BYTES_PER_TRANSACTION = 400_000;

  /** One template server: its entry's value and its keys' suffixes after its packed tuid. */
  private record Template(
      Tuple tuid, byte[] entry, List<KeyValue> suffixes, int bytes, long expiresAt) {}

  private final Subspace tenant;
  private final TenantKeys keys;
  private final List<Template> templates;
  private final String description;

  private IdleCopies(
      Subspace tenant, TenantKeys keys, List<Template> templates, String description) {
    this.tenant = tenant;
    this.keys = keys;
    this.templates = templates;
    this.description = description;
  }

  /**
   * Reads the keys of the idle hosted servers {@code tuids} of the tenant {@code tenant}.
   *
   * @throws IllegalStateException if a key of the tenant names a template in a way a copy would not
   *     rewrite, a template is not idle, or a template's value holds its tuid
   */
  static IdleCopies read(Backend backend, Subspace tenant, TenantKeys keys, List<Tuple> tuids) {
    byte[] prefix = tenant.getKey();
    byte[] begin = prefix;
    byte[] end = ByteArrayUtil.strinc(prefix);
    List<KeyValue> all = new ArrayList<>();
    while (true) {
      byte[] from = begin;
      List<KeyValue> page = backend.run(tx -> tx.snapshot().getRange(from, end, 5_000, false));
      all.addAll(page);
      if (page.size() < 5_000) {
        break;
      }
      begin = ByteArrayUtil.join(page.get(page.size() - 1).key(), new byte[] {0});
    }
    byte[][] roots = tuids.stream().map(t -> tenant.subspace(t).getKey()).toArray(byte[][]::new);
    byte[][] entries = tuids.stream().map(keys::serverKey).toArray(byte[][]::new);
    List<List<KeyValue>> suffixes = new ArrayList<>();
    byte[][] entryValues = new byte[tuids.size()][];
    long[] expiresAt = new long[tuids.size()];
    Arrays.fill(expiresAt, NO_EXPIRY);
    for (int i = 0; i < tuids.size(); i++) {
      suffixes.add(new ArrayList<>());
    }
    Subspace reserved = new Subspace(ByteArrayUtil.join(prefix, new byte[] {(byte) 0xFF}));
    int wakeLog = 0;
    int tenantLevel = 0;
    outer:
    for (KeyValue kv : all) {
      byte[] k = kv.key();
      for (int i = 0; i < roots.length; i++) {
        if (startsWith(k, roots[i])) {
          suffixes
              .get(i)
              .add(new KeyValue(Arrays.copyOfRange(k, roots[i].length, k.length), kv.value()));
          continue outer;
        }
        if (Arrays.equals(k, entries[i])) {
          entryValues[i] = kv.value();
          continue outer;
        }
      }
      if (!reserved.contains(k)) {
        throw new IllegalStateException(
            "a key of the tenant that is no template's: " + ByteArrayUtil.printable(k));
      }
      long what = reserved.unpack(k).getLong(0);
      if (what == 6) { // a bucket's wake log: ring history, trimmed; a copy has none
        wakeLog++;
      } else if (what == 13) { // an expiry index entry: (13, kind, bucket, expiresAt, tuid..)
        Tuple t = reserved.unpack(k);
        int i = tuids.indexOf(Tuple.fromList(t.getItems().subList(4, t.size())));
        if (i < 0) {
          throw new IllegalStateException("an expiry index entry of no template: " + t);
        }
        expiresAt[i] = t.getLong(3);
      } else if (what == 5 || what == 8 || what == 9 || what == 10 || what == 12) {
        tenantLevel++; // bells, placement, members, leases, the kind's type table: no server
      } else {
        throw new IllegalStateException(
            "a tenant-level key the copies would not rewrite: " + reserved.unpack(k));
      }
    }
    List<Template> templates = new ArrayList<>();
    int serverKeys = 0;
    for (int i = 0; i < tuids.size(); i++) {
      Tuple tuid = tuids.get(i);
      byte[] entry = entryValues[i];
      boolean idle =
          entry != null
              && entry.length >= IDLE_ENTRY.length
              && Arrays.equals(entry, 0, IDLE_ENTRY.length, IDLE_ENTRY, 0, IDLE_ENTRY.length);
      long entryAt =
          entry != null && entry.length == IDLE_ENTRY.length + Long.BYTES
              ? ByteBuffer.wrap(entry, IDLE_ENTRY.length, Long.BYTES).getLong()
              : NO_EXPIRY;
      if (!idle || entryAt != expiresAt[i]) { // the entry's time is the index entry's
        throw new IllegalStateException(
            "template " + tuid + " is not idle: entry " + ByteArrayUtil.printable(entryValues[i]));
      }
      byte[] packed = tuid.pack();
      int bytes = 0;
      for (KeyValue kv : suffixes.get(i)) {
        if (indexOf(kv.value(), packed) >= 0) {
          throw new IllegalStateException(
              "a value of " + tuid + " holds its tuid: " + ByteArrayUtil.printable(kv.key()));
        }
        bytes += roots[i].length + kv.key().length + kv.value().length;
      }
      if (suffixes.get(i).isEmpty()) {
        throw new IllegalStateException("template " + tuid + " has no keys");
      }
      byte[] stored = java.util.Objects.requireNonNull(entry);
      bytes += entries[i].length + stored.length;
      serverKeys += suffixes.get(i).size();
      templates.add(new Template(tuid, stored, List.copyOf(suffixes.get(i)), bytes, expiresAt[i]));
    }
    List<String> kinds = new ArrayList<>();
    for (KeyValue kv : suffixes.get(0)) {
      kinds.add(printableSuffix(kv.key()));
    }
    String description =
        String.format(
            "%d templates, %.1f keys each (%s) and a server index entry; not copied: %d wake log"
                + " entries, %d tenant-level keys that name no server",
            tuids.size(),
            (double) serverKeys / tuids.size(),
            String.join(" ", kinds),
            wakeLog,
            tenantLevel);
    return new IdleCopies(tenant, keys, templates, description);
  }

  /** What the templates hold, for the row's note. */
  String description() {
    return description;
  }

  /** The bytes (keys and values) of one server, as the first template has them. */
  int bytesPerServer() {
    return templates.get(0).bytes();
  }

  /**
   * Writes copies for the tuids {@code tuid(from)} … {@code tuid(to - 1)}, copy {@code i} of
   * template {@code i mod templates}, in blind transactions of a few hundred kilobytes on {@code
   * threads} threads.
   */
  void write(Backend backend, long from, long to, int threads, LongFunction<Tuple> tuid) {
    int max = 0;
    for (Template t : templates) {
      max = Math.max(max, t.bytes() + 32);
    }
    int perTransaction = Math.max(1, Math.min(5_000, BYTES_PER_TRANSACTION / max));
    long count = to - from;
    long chunks = (count + perTransaction - 1) / perTransaction;
    ScaleOutScenarios.parallel(
        threads,
        chunks,
        c -> {
          long first = from + c * perTransaction;
          long last = Math.min(to, first + perTransaction);
          backend.run(
              tx -> {
                for (long i = first; i < last; i++) {
                  Template t = templates.get((int) (i % templates.size()));
                  Tuple id = tuid.apply(i);
                  byte[] root = tenant.subspace(id).getKey();
                  for (KeyValue kv : t.suffixes()) {
                    tx.set(ByteArrayUtil.join(root, kv.key()), kv.value());
                  }
                  tx.set(keys.serverKey(id), t.entry());
                  if (t.expiresAt() != NO_EXPIRY) {
                    tx.set(keys.expiringKey(keys.buckets().of(id), t.expiresAt(), id), new byte[0]);
                  }
                }
                return null;
              });
        });
  }

  /** A key's suffix as its first elements, with run ids and versionstamps left out. */
  private static String printableSuffix(byte[] suffix) {
    try {
      Tuple t = Tuple.fromBytes(suffix);
      List<String> parts = new ArrayList<>();
      for (int i = 0; i < Math.min(3, t.size()); i++) {
        Object e = t.get(i);
        parts.add(
            e instanceof String str
                ? str
                : e instanceof Long l && Math.abs(l) < 1_000 ? l.toString() : "…");
      }
      return String.join("/", parts);
    } catch (RuntimeException notATuple) {
      return ByteArrayUtil.printable(suffix);
    }
  }

  private static boolean startsWith(byte[] key, byte[] prefix) {
    return key.length >= prefix.length
        && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}

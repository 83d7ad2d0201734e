package io.dgen.internal.limits;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * The keys of rate and concurrency limits, declared once. They live in one directory of the
 * backend, {@link #DIRECTORY}, shared by every runtime and every tenant, since a limit is named
 * across them:
 *
 * <pre>
 * ("$dgen", "limits")
 * ("r", name)            rate limit: (permitsPerSecond as double, burst) packed
 * ("r", name, "m", id)   runtime id's heartbeat: (beat, hungry, weight, perSecond, wallMillis)
 *                        packed; written by that runtime only, about once a second
 * ("r", name, "s", id)   runtime id's share: (permitsPerSecond as double) packed; written by that
 *                        runtime only, when its share changes
 * ("r", name, "b", id)   runtime id's bucket: (tokens as double, atMillis) packed; refilled at
 *                        its share, read-modify-written by that runtime only
 * ("c", name)            concurrency limit: (limit) packed
 * ("c", name, "s", i)    permit slot i: (token, acquiredAtMillis, expiresAtMillis, holder) packed
 * ("c", name, "v")       release counter: ADD 1 per release; watched by runtimes with waiters
 * </pre>
 *
 * <p>Public for the admin tools ({@code io.dgen.admin}); not an API.
 */
public final class LimitKeys {

  /** The top-level directory name DGen reserves: no tenant's path may start with it. */
  public static final String RESERVED = "$dgen";

  /** The largest concurrency limit: its permits are that many keys, read by each taker. */
  public static final int MAX_CONCURRENCY = 10_000;

  /** The directory of the limits. */
  private static final String[] DIRECTORY = {RESERVED, "limits"};

  private static final String RATE = "r";
  private static final String CONCURRENCY = "c";
  private static final String BUCKET = "b";
  private static final String MEMBER = "m";
  private static final String SHARE = "s";
  private static final String SLOT = "s";
  private static final String RELEASES = "v";

  private final Subspace dir;

  /** The keys in the limits directory {@code dir}. */
  public LimitKeys(Subspace dir) {
    this.dir = dir;
  }

  /** The path of the limits' directory. */
  public static String[] directory() {
    return DIRECTORY.clone();
  }

  /** Where rate limits' configurations start and end (for listing them). */
  public byte[][] rateRange() {
    return range(RATE);
  }

  /** Where concurrency limits' configurations start and end (for listing them). */
  public byte[][] concurrencyRange() {
    return range(CONCURRENCY);
  }

  private byte[][] range(String type) {
    com.apple.foundationdb.Range r = dir.range(Tuple.from(type));
    return new byte[][] {r.begin, r.end};
  }

  /** The rate limit {@code name}'s configuration. */
  public byte[] rateConfig(String name) {
    return dir.pack(Tuple.from(RATE, name));
  }

  /** Runtime {@code member}'s bucket of the rate limit {@code name}. */
  public byte[] rateBucket(String name, UUID member) {
    return dir.pack(Tuple.from(RATE, name, BUCKET, member));
  }

  /** The range of the rate limit {@code name}'s buckets, one per runtime. */
  public byte[][] rateBuckets(String name) {
    com.apple.foundationdb.Range r = dir.range(Tuple.from(RATE, name, BUCKET));
    return new byte[][] {r.begin, r.end};
  }

  /** Runtime {@code member}'s share of the rate limit {@code name}. */
  public byte[] rateShare(String name, UUID member) {
    return dir.pack(Tuple.from(RATE, name, SHARE, member));
  }

  /** The range of the rate limit {@code name}'s shares, one per runtime. */
  public byte[][] rateShares(String name) {
    com.apple.foundationdb.Range r = dir.range(Tuple.from(RATE, name, SHARE));
    return new byte[][] {r.begin, r.end};
  }

  /** A stored share (permits/s). */
  public static byte[] encodeShare(double share) {
    return Tuple.from(share).pack();
  }

  /** A stored share (permits/s). */
  public static double decodeShare(byte[] v) {
    return Tuple.fromBytes(v).getDouble(0);
  }

  /** Runtime {@code member}'s heartbeat in the rate limit {@code name}. */
  public byte[] rateMember(String name, UUID member) {
    return dir.pack(Tuple.from(RATE, name, MEMBER, member));
  }

  /** The range of the rate limit {@code name}'s heartbeats. */
  public byte[][] rateMembers(String name) {
    com.apple.foundationdb.Range r = dir.range(Tuple.from(RATE, name, MEMBER));
    return new byte[][] {r.begin, r.end};
  }

  /** The concurrency limit {@code name}'s configuration. */
  public byte[] concurrencyConfig(String name) {
    return dir.pack(Tuple.from(CONCURRENCY, name));
  }

  /** Permit slot {@code i} of the concurrency limit {@code name}. */
  public byte[] slot(String name, long i) {
    return dir.pack(Tuple.from(CONCURRENCY, name, SLOT, i));
  }

  /** The range of the concurrency limit {@code name}'s slots. */
  public byte[][] slots(String name) {
    com.apple.foundationdb.Range r = dir.range(Tuple.from(CONCURRENCY, name, SLOT));
    return new byte[][] {r.begin, r.end};
  }

  /** The concurrency limit {@code name}'s release counter. */
  public byte[] releases(String name) {
    return dir.pack(Tuple.from(CONCURRENCY, name, RELEASES));
  }

  /** The key's tuple inside the directory. */
  public Tuple unpack(byte[] key) {
    return dir.unpack(key);
  }

  /** A stored rate limit configuration. */
  public record RateConfig(double permitsPerSecond, int burst) {
    public byte[] encode() {
      return Tuple.from(permitsPerSecond, (long) burst).pack();
    }

    public static @Nullable RateConfig decode(byte @Nullable [] v) {
      if (v == null) {
        return null;
      }
      Tuple t = Tuple.fromBytes(v);
      return new RateConfig(t.getDouble(0), (int) t.getLong(1));
    }

    @Override
    public String toString() {
      return permitsPerSecond + "/s burst " + burst;
    }
  }

  /**
   * A runtime's heartbeat in a rate limit: its counter {@code beat} (liveness is a change of it,
   * observed on the reader's clock), whether it is {@code hungry} (its servers waited for permits)
   * and with how many servers waiting ({@code weight}), the permits/s it took lately ({@code
   * perSecond}), and its wall clock at the write (for people; never compared with another clock).
   */
  public record Member(long beat, boolean hungry, int weight, double perSecond, long wallMillis) {
    public byte[] encode() {
      return Tuple.from(beat, hungry, (long) weight, perSecond, wallMillis).pack();
    }

    public static Member decode(byte[] v) {
      Tuple t = Tuple.fromBytes(v);
      return new Member(
          t.getLong(0), t.getBoolean(1), (int) t.getLong(2), t.getDouble(3), t.getLong(4));
    }
  }

  /**
   * A runtime's bucket of a rate limit: {@code tokens} (negative: reserved ahead) as of {@code
   * atMillis}.
   */
  public record Bucket(double tokens, long atMillis) {
    public byte[] encode() {
      return Tuple.from(tokens, atMillis).pack();
    }

    public static @Nullable Bucket decode(byte @Nullable [] v) {
      if (v == null) {
        return null;
      }
      Tuple t = Tuple.fromBytes(v);
      return new Bucket(t.getDouble(0), t.getLong(1));
    }

    /** The tokens at {@code nowMillis}: refilled at {@code rate}/s, capped at {@code burst}. */
    public double tokensAt(long nowMillis, double rate, double burst) {
      double elapsed = Math.max(0, nowMillis - atMillis) / 1000.0;
      return Math.min(burst, tokens + elapsed * rate);
    }
  }

  /** A stored concurrency limit configuration. */
  public static byte[] encodeLimit(int limit) {
    return Tuple.from((long) limit).pack();
  }

  /** A stored concurrency limit, or null. */
  public static @Nullable Integer decodeLimit(byte @Nullable [] v) {
    return v == null ? null : (int) Tuple.fromBytes(v).getLong(0);
  }

  /**
   * A concurrency permit's holder: the lock token it was taken with, when, until when, and which
   * server (tenant path and tuid, for the admin view).
   */
  public record Permit(String token, long acquiredAtMillis, long expiresAtMillis, String holder) {
    public byte[] encode() {
      return Tuple.from(token, acquiredAtMillis, expiresAtMillis, holder).pack();
    }

    public static Permit decode(byte[] v) {
      Tuple t = Tuple.fromBytes(v);
      return new Permit(t.getString(0), t.getLong(1), t.getLong(2), t.getString(3));
    }

    /** Whether the permit is free for another holder at {@code nowMillis}. */
    public boolean expired(long nowMillis) {
      return nowMillis >= expiresAtMillis;
    }
  }
}

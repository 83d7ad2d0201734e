package io.dgen.admin;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * A rate or concurrency limit as stored: its configuration and its state, read in one snapshot.
 *
 * @param type {@code "rate"} or {@code "concurrency"}
 * @param name the limit's name
 * @param permitsPerSecond a rate limit's rate (0 for a concurrency limit)
 * @param burst a rate limit's burst (0 for a concurrency limit)
 * @param tokens a rate limit's tokens now, over the runtimes' buckets: each refilled at its share
 *     to the read's time, negative while runtimes have reserved permits ahead; the burst while no
 *     runtime enforces the limit (0 for a concurrency limit)
 * @param limit a concurrency limit's size (0 for a rate limit)
 * @param holders a concurrency limit's permits held now (expired ones included, marked)
 * @param shares a rate limit's shares: one per runtime enforcing it, as that runtime last wrote it
 *     (empty for a concurrency limit)
 */
public record LimitView(
    String type,
    String name,
    double permitsPerSecond,
    int burst,
    double tokens,
    int limit,
    List<Holder> holders,
    List<Share> shares) {

  /**
   * A runtime's share of a rate limit, from its heartbeat, share and bucket keys.
   *
   * @param runtime the runtime's id
   * @param permitsPerSecond its share of the rate
   * @param burst its share of the burst
   * @param tokens its bucket's tokens, refilled at its share to the read's time
   * @param hungry whether its servers waited for permits (it asks for a bigger share)
   * @param tookPerSecond the permits per second its servers took lately
   * @param heartbeatAt when it last wrote its record, on its own clock (for people: liveness is
   *     judged by runtimes on their own clocks, never by comparing this with another clock)
   */
  public record Share(
      UUID runtime,
      double permitsPerSecond,
      double burst,
      double tokens,
      boolean hungry,
      double tookPerSecond,
      Instant heartbeatAt) {}

  /**
   * A held concurrency permit.
   *
   * @param slot the permit's slot
   * @param holder the server holding it (tenant path and tuid)
   * @param token the lock token it was taken with
   * @param acquiredAt when it was taken
   * @param expiresAt when it expires (it is free for another holder from then on)
   * @param expired whether it had expired at the read
   */
  public record Holder(
      int slot,
      String holder,
      String token,
      Instant acquiredAt,
      Instant expiresAt,
      boolean expired) {}

  /** The configuration in a few words: {@code "50.0/s burst 10"} or {@code "2"}. */
  public String describe() {
    return type.equals("rate") ? permitsPerSecond + "/s burst " + burst : Integer.toString(limit);
  }
}

package io.dgen;

import com.apple.foundationdb.subspace.Subspace;
import java.util.List;

/**
 * A tenant: a directory of the backend in which servers live. Servers with the same tenant and
 * identity tuple are the same durable server.
 *
 * <p>{@link #subspace()} is the directory's key prefix, for keys of your own next to your servers'
 * (for example written by {@code handle*Tx} callbacks or in transactions that also use an {@link
 * Outbox}). The runtime owns every key under {@code subspace().subspace(tuid)} of each server.
 *
 * <p>Obtain tenants from {@link DGen#tenant} or {@link DGen#existingTenant}; a tenant belongs to
 * the {@link DGen} that made it.
 */
public final class Tenant {

  private final List<String> path;
  private final Subspace subspace;
  private final int bucketCount;
  private final Object owner;

  Tenant(List<String> path, Subspace subspace, int bucketCount, Object owner) {
    this.path = List.copyOf(path);
    this.subspace = subspace;
    this.bucketCount = bucketCount;
    this.owner = owner;
  }

  /** The directory path, e.g. {@code ["demo", "counter"]}. */
  public List<String> path() {
    return path;
  }

  /** The directory's subspace: the key prefix of everything in this tenant. */
  public Subspace subspace() {
    return subspace;
  }

  /**
   * How many buckets the tenant's servers hash into: stored when the tenant was first opened
   * ({@link DGen.Builder#buckets}) and never changed. See {@code docs/scale-out.md}.
   */
  public int bucketCount() {
    return bucketCount;
  }

  boolean belongsTo(Object dgen) {
    return owner == dgen;
  }

  @Override
  public String toString() {
    return "Tenant" + path;
  }
}

package io.dgen.internal.doorbell;

import com.apple.foundationdb.tuple.Tuple;

/** The lease holder of a bucket: hears the servers that became ready there. */
public interface Activations {
  /** A push that committed at {@code version} made hosted server {@code tuid} ready. */
  void activate(Tuple tuid, long version);

  /** Activations may have been missed: look at the bucket's ready index. */
  void rescan();
}

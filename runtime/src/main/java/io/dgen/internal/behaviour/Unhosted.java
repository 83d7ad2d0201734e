package io.dgen.internal.behaviour;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGenServer;
import io.dgen.InitResult;

/**
 * The behaviour of a ref whose kind this runtime does not host: its code is not here, so nothing
 * that would run it may run here. Never called by the runtime's own paths (a ref never consumes;
 * its priority messages go to the holder); a call that reaches it is a bug, reported as such.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public final class Unhosted<S, M> implements DGenServer<S, M> {

  private final Tuple tuid;

  private Unhosted(Tuple tuid) {
    this.tuid = tuid;
  }

  public static <S, M> Unhosted<S, M> of(Tuple tuid) {
    return new Unhosted<>(tuid);
  }

  @Override
  public InitResult<S> init(Object arg) {
    throw new IllegalStateException(
        "the behaviour of server " + tuid + " is not in this runtime: host its kind to run it");
  }
}

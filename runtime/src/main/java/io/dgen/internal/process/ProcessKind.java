package io.dgen.internal.process;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGenServer;
import io.dgen.HostOptions;
import io.dgen.internal.commit.Fence;
import io.dgen.internal.lock.LockCoordinator;
import io.dgen.internal.queue.KindTypes;
import java.lang.reflect.Type;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;

/**
 * What the process of a hosted server, or a ref of one, needs of its kind as this runtime hosts it:
 * the behaviour, options and types, the fence and lock holders of its bucket, and the kind's loaded
 * processes. The hosting layer implements it; a process never sees the hosting itself.
 *
 * @param <S> the state type
 * @param <M> the message type
 */
public interface ProcessKind<S, M> {

  /** A fresh behaviour instance, for one server. */
  DGenServer<S, M> newBehaviour();

  /** The kind's options. */
  HostOptions options();

  /** The kind's stored type table. */
  KindTypes types();

  /** The state type of the behaviour. */
  JavaType stateType();

  /** The message type of the kind. */
  JavaType messageType();

  /** A server's id, as its {@code init} and {@code TxContext.id()} get it. */
  Object idOf(Tuple tuid);

  /** The fence of a batch of a server in {@code bucket}: the lease at the epoch held now. */
  Fence fence(int bucket);

  /** Who may hold a lock of the kind's servers: the tenant's placement members. */
  LockCoordinator.Holders lockHolders();

  /** Tells the holder here, if this runtime holds the server's bucket, that a push landed. */
  void activateAfterPush(Tuple tuid);

  /** The process loaded here for server {@code tuid}, if this runtime runs it now. */
  @Nullable Loaded<M> loadedProcess(Tuple tuid);

  /** The test kit's drain of server {@code tuid} in the caller's thread; see its ServerProcess. */
  int drainInCaller(Tuple tuid, int maxFailures);

  /** A process this runtime has loaded for one of the kind's servers: calls may run in it. */
  interface Loaded<M> {
    /**
     * Runs a call in this process, inline if its queue is empty, if the process is alive; null
     * (nothing done) if it is not.
     */
    <R> @Nullable CompletableFuture<R> callIfAlive(
        M request, @Nullable Type replyType, Duration timeout);
  }
}

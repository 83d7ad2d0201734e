package io.dgen.internal.behaviour;

import com.google.common.reflect.TypeToken;
import io.dgen.DGenException;
import io.dgen.DGenServer;
import io.dgen.InitResult;
import io.dgen.ServerOptions;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import org.jspecify.annotations.Nullable;

/**
 * What a start needs before it touches the store: the behaviour's type arguments and the outcome of
 * its {@code init}. Never reads or writes keys.
 */
public final class Init {

  private Init() {}

  /**
   * Runs {@code init} and returns its result if it is a success.
   *
   * @throws DGenException if {@code init} throws, returns null or refuses
   */
  public static <S, M> InitResult<S> run(
      DGenServer<S, M> server, @Nullable Object arg, ServerOptions options) {
    InitResult<S> init;
    try {
      init = server.init(arg);
    } catch (Exception e) {
      throw new DGenException(
          "init failed: server=" + server.getClass().getName() + " tenant=" + options.tenant(), e);
    }
    if (init == null) {
      throw new DGenException(
          "init returned null: server="
              + server.getClass().getName()
              + "; return InitResult.ok(state) or InitResult.error(reason)");
    }
    if (init.isError()) {
      throw new DGenException(
          "init refused to start: server="
              + server.getClass().getName()
              + " reason="
              + init.error());
    }
    return init;
  }

  /** The state ({@code index} 0) or message (1) type the behaviour's class binds. */
  public static Type typeArgument(DGenServer<?, ?> server, int index) {
    Type resolved = resolvedTypeArgument(server, index);
    if (resolved == null) {
      throw new IllegalArgumentException(
          "cannot resolve the "
              + (index == 0 ? "state" : "message")
              + " type of "
              + server.getClass().getName()
              + ": implement DGenServer<S, M> with concrete type arguments");
    }
    return resolved;
  }

  /**
   * The state ({@code index} 0) or message (1) type the behaviour's class binds, or null if it
   * binds none (a type variable, or a raw type).
   */
  public static @Nullable Type resolvedTypeArgument(DGenServer<?, ?> server, int index) {
    TypeVariable<?> variable = DGenServer.class.getTypeParameters()[index];
    Type resolved = TypeToken.of(server.getClass()).resolveType(variable).getType();
    return resolved instanceof TypeVariable<?> ? null : resolved;
  }
}

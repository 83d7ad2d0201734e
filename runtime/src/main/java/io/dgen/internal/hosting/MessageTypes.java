package io.dgen.internal.hosting;

import io.dgen.DGenServer;
import io.dgen.internal.behaviour.Init;
import io.dgen.internal.codec.Serde;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;

/**
 * The message type of a hosted kind, resolved once when the kind is hosted, from the type the kind
 * declares and the one its behaviour accepts. Stateless.
 */
public final class MessageTypes {

  private MessageTypes() {}

  /**
   * The message type of a kind: {@code declared} for one hosted by {@code io.dgen.Kind} (the
   * behaviour's own, with its type arguments, if it is that class), else the behaviour's.
   *
   * @throws IllegalArgumentException if the behaviour's message type does not accept {@code
   *     declared}, or there is neither
   */
  public static JavaType of(
      Serde serde, String kind, DGenServer<?, ?> sample, @Nullable Class<?> declared) {
    if (declared == null) {
      return serde.type(Init.typeArgument(sample, 1));
    }
    java.lang.reflect.Type own = Init.resolvedTypeArgument(sample, 1);
    if (own == null) {
      return serde.type(declared); // a behaviour generic in its message type takes the kind's
    }
    JavaType behaviours = serde.type(own);
    Class<?> raw = behaviours.getRawClass();
    if (raw == declared) {
      return behaviours;
    }
    if (!raw.isAssignableFrom(declared)) {
      throw new IllegalArgumentException(
          "kind "
              + kind
              + " has message type "
              + declared.getName()
              + ", which its behaviour "
              + sample.getClass().getName()
              + " does not accept (its message type is "
              + behaviours
              + ")");
    }
    return serde.type(declared);
  }
}

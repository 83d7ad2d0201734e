package io.dgen.internal.codec;

import com.google.common.reflect.TypeToken;
import io.dgen.Call;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The reply type a {@link Call} request's class names: {@code R} of its {@code Call<R>}, resolved
 * once per class.
 */
public final class ReplyTypes {

  private static final TypeVariable<?> R = Call.class.getTypeParameters()[0];

  private static final ClassValue<Optional<Type>> BY_CLASS =
      new ClassValue<>() {
        @Override
        protected Optional<Type> computeValue(Class<?> c) {
          if (!Call.class.isAssignableFrom(c)) {
            return Optional.empty();
          }
          Type r = TypeToken.of(c).resolveType(R).getType();
          return r instanceof TypeVariable<?> ? Optional.empty() : Optional.of(r);
        }
      };

  private ReplyTypes() {}

  /**
   * The reply type {@code requestClass} fixes, or null if it is not a {@link Call} or leaves its
   * reply type open (a type variable).
   */
  public static @Nullable Type of(Class<?> requestClass) {
    return BY_CLASS.get(requestClass).orElse(null);
  }

  /** The class of {@code type}'s values: itself, or the raw class of a parameterized type. */
  public static Class<?> raw(Type type) {
    return TypeToken.of(type).getRawType();
  }

  /**
   * Checks a handler's reply to {@code request} against the reply type its class names.
   *
   * @throws IllegalArgumentException if the reply is not null and not of that type
   */
  public static void check(Object request, @Nullable Object reply) {
    Type expected = reply == null ? null : of(request.getClass());
    if (expected != null && !raw(expected).isInstance(reply)) {
      throw new IllegalArgumentException(
          "the handler replied a "
              + reply.getClass().getName()
              + " to a "
              + request.getClass().getName()
              + ", which is a Call<"
              + expected.getTypeName()
              + ">: nothing was committed");
    }
  }

  /**
   * The classes a reply of {@code type} is made of: its raw class and, for a parameterized type,
   * those of its type arguments, recursively (a {@code Call<List<Item>>} names {@code Item}).
   */
  static List<Class<?>> classesOf(Type type) {
    List<Class<?>> out = new ArrayList<>();
    out.add(raw(type));
    if (type instanceof ParameterizedType p) {
      for (Type arg : p.getActualTypeArguments()) {
        if (!(arg instanceof TypeVariable<?>)) {
          out.addAll(classesOf(arg));
        }
      }
    }
    return out;
  }
}

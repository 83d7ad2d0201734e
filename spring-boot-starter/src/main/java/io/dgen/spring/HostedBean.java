package io.dgen.spring;

import io.dgen.HostOptions;
import io.dgen.Kind;
import io.dgen.Tenant;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.env.PropertyResolver;
import org.springframework.util.ClassUtils;

/**
 * One {@link DGenHosted} bean, its attributes resolved: placeholders replaced, the tenant path
 * split, the durations parsed. A bad attribute fails with the bean's name and the attribute's.
 *
 * @param beanName the bean
 * @param kind the kind, not blank
 * @param tenant the tenant's path, each element non-empty
 * @param annotation the annotation, for the options
 * @param resolver resolves placeholders in the string attributes
 */
record HostedBean(
    String beanName,
    String kind,
    List<String> tenant,
    DGenHosted annotation,
    PropertyResolver resolver) {

  static HostedBean resolve(String beanName, DGenHosted annotation, PropertyResolver resolver) {
    String kind = resolver.resolveRequiredPlaceholders(annotation.kind()).strip();
    if (kind.isEmpty()) {
      throw refused(beanName, "kind", annotation.kind(), "a kind must not be blank");
    }
    String path = resolver.resolveRequiredPlaceholders(annotation.tenant()).strip();
    List<String> tenant = Arrays.stream(path.split("/", -1)).map(String::strip).toList();
    if (path.isEmpty() || tenant.stream().anyMatch(String::isEmpty)) {
      throw refused(
          beanName,
          "tenant",
          annotation.tenant(),
          "a tenant path is one or more non-empty elements separated by '/', e.g. \"acme/bank\"");
    }
    return new HostedBean(beanName, kind, tenant, annotation, resolver);
  }

  /**
   * The {@link Kind} the bean's class declares for this kind: a {@code public static final Kind}
   * constant (of the class, a superclass or an interface) whose name is the annotation's kind. The
   * starter hosts the kind by it, so that its servers' {@code init} gets a plain id ({@code String}
   * or {@code Long}) and messages are checked against its message type; without one, the kind is
   * hosted by name.
   *
   * @param beanType the bean's type, if the bean factory knows it
   * @return the kind, or null if the class declares none of this name
   * @throws IllegalStateException if it declares two different ones of this name
   */
  @Nullable Kind<?> declaredKind(@Nullable Class<?> beanType) {
    if (beanType == null) {
      return null;
    }
    Kind<?> found = null;
    for (Field f : ClassUtils.getUserClass(beanType).getFields()) {
      int m = f.getModifiers();
      if (!Modifier.isStatic(m) || !Modifier.isFinal(m) || !Kind.class.equals(f.getType())) {
        continue;
      }
      Object value;
      try {
        f.trySetAccessible(); // a public constant of a class that is not public
        value = f.get(null);
      } catch (IllegalAccessException | RuntimeException e) {
        continue;
      }
      if (value instanceof Kind<?> k && k.name().equals(kind)) {
        if (found != null && !found.equals(k)) {
          throw refused(
              beanName,
              "kind",
              kind,
              "the bean's class declares two Kind constants of that name, "
                  + found
                  + " and "
                  + k
                  + "; keep one");
        }
        found = k;
      }
    }
    return found;
  }

  /** The tenant path as {@code DGen.tenant} takes it. */
  String[] tenantPath() {
    return tenant.toArray(String[]::new);
  }

  /** The options the annotation's attributes give, in {@code tenant}. */
  HostOptions options(Tenant tenant) {
    DGenHosted a = annotation;
    HostOptions.Builder b =
        HostOptions.builder(tenant).cache(a.cache()).holdBuckets(a.holdBuckets());
    set("consumeK", a.consumeK(), b::consumeK);
    if (a.deadLetterThreshold() != 0) {
      set("deadLetterThreshold", a.deadLetterThreshold(), b::deadLetterThreshold);
    }
    duration("lockTimeout", a.lockTimeout(), b::lockTimeout);
    duration("idleTimeout", a.idleTimeout(), b::idleTimeout);
    duration("expireAfter", a.expireAfter(), b::expireAfter);
    duration("callTimeout", a.callTimeout(), b::callTimeout);
    duration("idempotencyRetention", a.idempotencyRetention(), b::idempotencyRetention);
    if (a.allowTypes().length > 0) {
      b.allowTypes(a.allowTypes());
    }
    return b.build();
  }

  @Override
  public String toString() {
    return "bean '" + beanName + "' (@DGenHosted kind=" + kind + ", tenant=" + tenant + ")";
  }

  private void duration(String attribute, String text, Consumer<Duration> setter) {
    String resolved = resolver.resolveRequiredPlaceholders(text).strip();
    if (resolved.isEmpty()) {
      return;
    }
    Duration d;
    try {
      d = DurationStyle.detectAndParse(resolved);
    } catch (IllegalArgumentException e) {
      throw refused(
          beanName,
          attribute,
          text,
          "not a duration; write e.g. \"500ms\", \"30s\", \"10m\" or \"PT30S\"");
    }
    set(attribute, d, setter);
  }

  private <T> void set(String attribute, T value, Consumer<T> setter) {
    try {
      setter.accept(value);
    } catch (IllegalArgumentException e) {
      throw refused(beanName, attribute, value, e.getMessage());
    }
  }

  private static IllegalStateException refused(
      String beanName, String attribute, Object value, String why) {
    return new IllegalStateException(
        "bean '"
            + beanName
            + "': @DGenHosted("
            + attribute
            + " = "
            + (value instanceof String ? "\"" + value + "\"" : value)
            + ") is refused: "
            + why);
  }
}

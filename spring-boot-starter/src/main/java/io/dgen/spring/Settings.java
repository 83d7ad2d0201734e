package io.dgen.spring;

import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * Applies a configured value to a DGen builder, naming the property when the builder refuses it:
 * the builders validate (and their messages name their own parameters), this says which {@code
 * dgen.*} property was wrong, so that Spring Boot's failure analysis points at its source.
 */
final class Settings {

  private Settings() {}

  /**
   * Passes {@code value} to {@code setter}.
   *
   * @throws InvalidConfigurationPropertyValueException if the setter refuses the value
   */
  static <T> void apply(String property, T value, Consumer<? super T> setter) {
    try {
      setter.accept(value);
    } catch (IllegalArgumentException e) {
      throw invalid(property, value, e.getMessage());
    }
  }

  static InvalidConfigurationPropertyValueException invalid(
      String property, @Nullable Object value, @Nullable String reason) {
    return new InvalidConfigurationPropertyValueException(
        property, value, reason != null ? reason : "refused");
  }
}

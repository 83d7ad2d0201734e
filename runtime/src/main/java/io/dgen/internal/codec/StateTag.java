package io.dgen.internal.codec;

import io.dgen.UndecodableDataException;
import java.util.List;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * The type tag of a server's state: the tag its declared state type is stored under now (only if
 * the type is annotated with {@link io.dgen.TypeName}; an unannotated state type stores none), and
 * the migration of a state stored under an older tag. No tag stored means version 1 of the declared
 * type. Immutable and thread-safe.
 */
public final class StateTag {

  private final Class<?> type;
  private final @Nullable String current;
  private final List<String> names;
  private final Migrations migrations;

  /**
   * The tag of {@code type}.
   *
   * @throws IllegalArgumentException if the annotation is invalid or a migration step is missing
   */
  public StateTag(Class<?> type, Migrations migrations) {
    this.type = type;
    this.migrations = migrations;
    this.current = TypeNames.annotation(type) == null ? null : TypeNames.tag(type);
    this.names = TypeNames.names(type);
    migrations.require(TypeNames.name(type), TypeNames.version(type), type.getName());
  }

  /** The tag to store with the state, or null if the state type is not annotated. */
  public @Nullable String current() {
    return current;
  }

  /** Whether a state stored under {@code stored} must have its tag rewritten. */
  public boolean stale(@Nullable String stored) {
    return current != null && !current.equals(stored);
  }

  /** Whether a state stored under {@code stored} is read through migration steps. */
  public boolean migrates(@Nullable String stored) {
    return (stored == null ? 1 : TypeNames.parse(stored).version()) != TypeNames.version(type);
  }

  /**
   * The stored tree, migrated to the declared type's version.
   *
   * @param stored the stored tag, or null (version 1)
   * @throws UndecodableDataException if the tag names another type, a newer version, or a step
   *     fails
   */
  public JsonNode upcast(@Nullable String stored, JsonNode tree) {
    TypeNames.Tag tag =
        stored == null ? new TypeNames.Tag(TypeNames.name(type), 1) : TypeNames.parse(stored);
    if (!names.contains(tag.name())) {
      throw new UndecodableDataException(
          "the stored state is of type '"
              + tag.name()
              + "', which is not a name of the declared state type "
              + type.getName()
              + " "
              + names
              + ": list it in @TypeName(aliases = ...) if the type was renamed",
          tag.name(),
          tag.version(),
          null);
    }
    return TypeRegistry.upcast(migrations, tag, type, tree);
  }
}

package io.dgen.internal.codec;

import io.dgen.StoreAsTerm;
import java.lang.reflect.AnnotatedElement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.BeanDescription;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.SerializationConfig;
import tools.jackson.databind.introspect.AnnotatedMember;
import tools.jackson.databind.introspect.BeanPropertyDefinition;
import tools.jackson.databind.introspect.ClassIntrospector;

/**
 * Where a state type's tree must stay a term: the JSON paths of properties and types annotated
 * {@link StoreAsTerm}, found by introspecting the declared type with the runtime's Jackson mapper
 * (so property names follow the mapper's naming). A node of a graph that follows the tree: a
 * property's node by its JSON name, a map's values, a collection's or array's elements. Recursive
 * types give a cyclic graph, which is fine because the codec walks it along a finite tree.
 * Immutable once built.
 */
final class TermSchema {

  /** Nothing below is forced. */
  static final TermSchema NONE = new TermSchema(false);

  /** The node and everything below it is one term. */
  static final TermSchema TERM = new TermSchema(true);

  private final boolean term;
  private final Map<String, TermSchema> properties = new HashMap<>();
  // Null means NONE: NONE and TERM are built before NONE exists.
  private @Nullable TermSchema values;
  private @Nullable TermSchema elements;
  private final List<TermSchema> variants = new ArrayList<>();

  private TermSchema(boolean term) {
    this.term = term;
  }

  /** True if the node must be stored as one term. */
  boolean term() {
    if (term) {
      return true;
    }
    for (TermSchema v : variants) {
      if (v.term()) {
        return true;
      }
    }
    return false;
  }

  /** The node of an object's field. */
  TermSchema field(String name) {
    if (this == NONE) {
      return NONE;
    }
    TermSchema own = properties.get(name);
    if (own == null) {
      own = values == null ? NONE : values;
    }
    if (variants.isEmpty()) {
      return own;
    }
    List<TermSchema> found = new ArrayList<>(2);
    if (own != NONE) {
      found.add(own);
    }
    for (TermSchema v : variants) {
      TermSchema f = v.field(name);
      if (f != NONE) {
        found.add(f);
      }
    }
    return union(found);
  }

  /** The node of an array's elements. */
  TermSchema element() {
    TermSchema own = elements == null ? NONE : elements;
    if (variants.isEmpty()) {
      return own;
    }
    List<TermSchema> found = new ArrayList<>(2);
    if (own != NONE) {
      found.add(own);
    }
    for (TermSchema v : variants) {
      TermSchema e = v.element();
      if (e != NONE) {
        found.add(e);
      }
    }
    return union(found);
  }

  private static TermSchema union(List<TermSchema> found) {
    if (found.isEmpty()) {
      return NONE;
    }
    if (found.size() == 1) {
      return found.get(0);
    }
    TermSchema u = new TermSchema(false);
    u.variants.addAll(found);
    return u;
  }

  /**
   * Builds the schema of {@code type}.
   *
   * @param mapper the mapper whose introspection (naming, visibility, mix-ins) applies
   * @param type the declared state type
   * @return the schema; {@link #NONE} if nothing is annotated
   */
  static TermSchema of(ObjectMapper mapper, JavaType type) {
    return new Builder(mapper).build(type);
  }

  private static final class Builder {
    private final ObjectMapper mapper;
    private final SerializationConfig config;
    private final Map<JavaType, TermSchema> seen = new HashMap<>();

    Builder(ObjectMapper mapper) {
      this.mapper = mapper;
      this.config = mapper.serializationConfig();
    }

    TermSchema build(JavaType type) {
      TermSchema done = seen.get(type);
      if (done != null) {
        return done;
      }
      Class<?> raw = type.getRawClass();
      if (raw.isAnnotationPresent(StoreAsTerm.class)) {
        return TERM;
      }
      if (type.isReferenceType()) {
        return build(type.getReferencedType());
      }
      if (type.isContainerType()) {
        JavaType content = type.getContentType();
        if (content == null) {
          return NONE;
        }
        TermSchema node = new TermSchema(false);
        seen.put(type, node);
        if (type.isMapLikeType()) {
          node.values = build(content);
        } else {
          node.elements = build(content);
        }
        return node;
      }
      if (isOpaque(raw)) {
        return NONE;
      }
      TermSchema node = new TermSchema(false);
      seen.put(type, node);
      if (raw.isSealed()) {
        for (Class<?> sub : raw.getPermittedSubclasses()) {
          node.variants.add(build(mapper.getTypeFactory().constructSpecializedType(type, sub)));
        }
        return node;
      }
      if (raw.isInterface() || java.lang.reflect.Modifier.isAbstract(raw.getModifiers())) {
        return node;
      }
      ClassIntrospector introspector = config.classIntrospectorInstance();
      BeanDescription bean =
          introspector.introspectForSerialization(
              type, introspector.introspectClassAnnotations(type));
      for (BeanPropertyDefinition p : bean.findProperties()) {
        if (!p.couldSerialize()) {
          continue;
        }
        node.properties.put(p.getName(), annotated(p) ? TERM : build(p.getPrimaryType()));
      }
      return node;
    }

    private static boolean isOpaque(Class<?> raw) {
      String name = raw.getName();
      return raw.isPrimitive()
          || raw.isEnum()
          || name.startsWith("java.")
          || name.startsWith("javax.")
          || JsonNode.class.isAssignableFrom(raw);
    }

    private static boolean annotated(BeanPropertyDefinition p) {
      return annotated(p.getField())
          || annotated(p.getGetter())
          || annotated(p.getConstructorParameter());
    }

    private static boolean annotated(@Nullable AnnotatedMember m) {
      if (m == null) {
        return false;
      }
      if (m.hasAnnotation(StoreAsTerm.class)) {
        return true;
      }
      AnnotatedElement e = m.getAnnotated();
      return e != null && e.isAnnotationPresent(StoreAsTerm.class);
    }
  }
}

package io.dgen.internal.codec;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.google.common.collect.ImmutableCollection;
import com.google.common.collect.ImmutableMap;
import java.lang.annotation.Annotation;
import java.lang.reflect.Field;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.MapperFeature;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.SerializationConfig;
import tools.jackson.databind.SerializationContext;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.ValueSerializer;
import tools.jackson.databind.cfg.EnumFeature;
import tools.jackson.databind.cfg.JsonNodeFeature;
import tools.jackson.databind.node.POJONode;
import tools.jackson.databind.ser.BeanPropertyWriter;
import tools.jackson.databind.ser.BeanSerializer;
import tools.jackson.databind.ser.PropertyWriter;
import tools.jackson.databind.ser.UnrolledBeanSerializer;
import tools.jackson.databind.ser.bean.BeanSerializerBase;
import tools.jackson.databind.ser.jdk.CollectionSerializer;
import tools.jackson.databind.ser.jdk.EnumSerializer;
import tools.jackson.databind.ser.jdk.IndexedListSerializer;
import tools.jackson.databind.ser.jdk.IndexedStringListSerializer;
import tools.jackson.databind.ser.jdk.MapSerializer;
import tools.jackson.databind.ser.jdk.StringCollectionSerializer;

/**
 * Decides how the codec walks each class of value, from the mapper's own serializers, so that the
 * walk reads the tree Jackson would write. One per codec (per mapper); plans are cached.
 *
 * <h2>What is walked</h2>
 *
 * A record or POJO whose serializer is Jackson's plain bean serializer with plain property writers
 * (no type ids, filters, views, unwrapping, any-getters, custom serializers, and no inclusion rule
 * beyond {@code NON_NULL}); a {@code Map} with string keys and a {@code Collection} written by
 * Jackson's own serializers; a {@code JsonNode}; and JDK values (strings, numbers, booleans, enums,
 * {@code java.time}, {@code UUID}, arrays of primitives). Any other value is "foreign": Jackson
 * serializes it to a tree, which is then diffed. A place where type ids are written (a
 * {@code @JsonTypeInfo} type, default typing) makes the whole state unwalkable: it is then
 * serialized to a tree as a whole, as before the walk existed. So is every state when the mapper
 * has features that change the shape of the output (see {@link #walkable}).
 *
 * <h2>What is immutable</h2>
 *
 * A value is deeply immutable, and may be shared between callbacks and compared by identity, if it
 * is null, an immutable JDK value ({@code String}, boxed primitives, {@code BigInteger}, {@code
 * BigDecimal}, {@code UUID}, {@code java.time} values, enums whose {@code toString} is not
 * overridden), a record whose properties are all deeply immutable, or a list, set or map of a class
 * that cannot be modified by anyone ({@code List.of}/{@code copyOf}, {@code Set.of}, {@code
 * Map.of}/{@code copyOf}, {@code Stream.toList()}, {@code Collections.empty*}/{@code singleton*},
 * Guava's {@code Immutable*}) whose elements are deeply immutable. Unmodifiable views ({@code
 * Collections.unmodifiable*}) are not: whoever holds the collection behind one can still change it.
 * POJOs, arrays and {@code JsonNode}s never are.
 */
final class Plans {

  private static final Logger log = LoggerFactory.getLogger(Plans.class);

  /** The null value: written as null, immutable. */
  static final Plan NULL = new Plan.Leaf(true, null);

  /** A value the walk cannot read faithfully: the whole state is serialized instead. */
  static final Plan UNWALKABLE = new Plan(Plan.Kind.FOREIGN, false) {};

  private static final Set<Class<?>> IMMUTABLE_LEAVES =
      Set.of(
          String.class,
          Integer.class,
          Long.class,
          Short.class,
          Byte.class,
          Boolean.class,
          Character.class,
          Double.class,
          Float.class,
          BigInteger.class,
          BigDecimal.class,
          UUID.class,
          java.time.Instant.class,
          java.time.LocalDate.class,
          java.time.LocalTime.class,
          java.time.LocalDateTime.class,
          java.time.OffsetDateTime.class,
          java.time.OffsetTime.class,
          java.time.ZonedDateTime.class,
          java.time.Duration.class,
          java.time.Period.class,
          java.time.Year.class,
          java.time.YearMonth.class,
          java.time.MonthDay.class,
          java.time.ZoneOffset.class);

  private static final Set<Class<?>> MUTABLE_LEAVES =
      Set.of(
          byte[].class,
          char[].class,
          short[].class,
          int[].class,
          long[].class,
          float[].class,
          double[].class,
          boolean[].class,
          String[].class);

  private static final Set<Class<?>> LIST_SERIALIZERS =
      Set.of(
          IndexedListSerializer.class,
          CollectionSerializer.class,
          IndexedStringListSerializer.class,
          StringCollectionSerializer.class);

  /** Annotations on a property that do not change how Jackson writes its value. */
  private static final Set<String> NEUTRAL_ANNOTATIONS =
      Set.of(
          "JsonProperty",
          "JsonGetter",
          "JsonIgnore",
          "JsonInclude",
          "JsonCreator",
          "JsonAlias",
          "JsonSetter",
          "JsonDeserialize",
          "JsonPropertyDescription",
          "JsonPropertyOrder",
          "JsonMerge");

  private static final @Nullable Field SUPPRESSABLE = field("_suppressableValue");

  private record Key(JavaType declared, Class<?> type, boolean root) {}

  private final Serde serde;
  private final ObjectMapper mapper;
  private final boolean walkable;
  final boolean plainScalars;
  private final boolean enumsByToString;
  private final Map<Key, Plan> plans = new ConcurrentHashMap<>();
  private final Map<JavaType, Slot> roots = new ConcurrentHashMap<>();
  private final Plan foreign = new Plan.Foreign(this);

  Plans(Serde serde) {
    this.serde = serde;
    this.mapper = serde.mapper();
    SerializationConfig config = mapper.serializationConfig();
    this.walkable = walkable(config);
    this.plainScalars = sameSerializers(mapper, Serde.defaultMapper());
    this.enumsByToString = config.isEnabled(EnumFeature.WRITE_ENUMS_USING_TO_STRING);
  }

  /**
   * Whether the mapper writes what the walk reads: no features that wrap, sort, unwrap or drop
   * values, no static typing, no active view, and no inclusion rule beyond {@code NON_NULL}.
   */
  private static boolean walkable(SerializationConfig config) {
    JsonInclude.Value incl = config.getDefaultPropertyInclusion();
    return !config.isEnabled(SerializationFeature.WRAP_ROOT_VALUE)
        && !config.isEnabled(SerializationFeature.WRITE_SINGLE_ELEM_ARRAYS_UNWRAPPED)
        && !config.isEnabled(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
        && !config.isEnabled(SerializationFeature.ORDER_SET_ELEMENTS)
        && !config.isEnabled(SerializationFeature.APPLY_JSON_INCLUDE_FOR_CONTAINERS)
        && config.isEnabled(SerializationFeature.WRITE_EMPTY_JSON_ARRAYS)
        && !config.isEnabled(MapperFeature.USE_STATIC_TYPING)
        && config.isEnabled(JsonNodeFeature.WRITE_NULL_PROPERTIES)
        && !config.isEnabled(JsonNodeFeature.WRITE_PROPERTIES_SORTED)
        && config.getActiveView() == null
        && plainInclusion(incl.getValueInclusion(), true)
        && plainInclusion(incl.getContentInclusion(), false);
  }

  private static boolean plainInclusion(JsonInclude.Include i, boolean nonNullToo) {
    return i == JsonInclude.Include.ALWAYS
        || i == JsonInclude.Include.USE_DEFAULTS
        || (nonNullToo && i == JsonInclude.Include.NON_NULL);
  }

  /** Whether strings, ints, longs and booleans are written by Jackson's own serializers. */
  private static boolean sameSerializers(ObjectMapper mapper, ObjectMapper pristine) {
    SerializationContext ours = mapper._serializationContext();
    SerializationContext theirs = pristine._serializationContext();
    for (Class<?> c : List.of(String.class, Integer.class, Long.class, Boolean.class)) {
      if (ours.findValueSerializer(c).getClass() != theirs.findValueSerializer(c).getClass()) {
        return false;
      }
    }
    return ours.findKeySerializer(String.class, null).getClass()
        == theirs.findKeySerializer(String.class, null).getClass();
  }

  /** The slot of a state of declared type {@code type}. */
  Slot root(JavaType type) {
    return roots.computeIfAbsent(type, t -> new Slot(this, t, true));
  }

  /** A tree of a value Jackson serialized (a foreign value, a state that is not walkable). */
  JsonNode serialize(@Nullable Object value) {
    return serde.toTree(value);
  }

  /** The plan of {@code value}, of declared type {@code declared}, found in a slot. */
  Plan plan(JavaType declared, Object value, boolean root) {
    Key key = new Key(declared, Objects.requireNonNull(value).getClass(), root);
    Plan p = plans.get(key);
    if (p == null) {
      p = build(key, value);
      Plan raced = plans.putIfAbsent(key, p);
      p = raced != null ? raced : p;
    }
    return p;
  }

  private Plan build(Key key, Object sample) {
    Class<?> c = key.type;
    if (!walkable) {
      return UNWALKABLE;
    }
    SerializationContext ctx = mapper._serializationContext();
    JavaType type = specialize(ctx, key.declared, c);
    if (ctx.findTypeSerializer(type) != null || !typeInfoFree(ctx, key.declared, 0)) {
      return UNWALKABLE; // type ids: only Jackson writes them right, and only for the whole state
    }
    if (sample instanceof JsonNode node) {
      return node instanceof POJONode ? foreign(key.root) : Plan.TreePlan.of(node);
    }
    if (c.isArray() && !MUTABLE_LEAVES.contains(c)) {
      return foreign(key.root);
    }
    if (IMMUTABLE_LEAVES.contains(c) || MUTABLE_LEAVES.contains(c)) {
      return new Plan.Leaf(IMMUTABLE_LEAVES.contains(c), this);
    }
    ValueSerializer<Object> ser = ctx.findValueSerializer(type);
    if (Enum.class.isAssignableFrom(c)) {
      return new Plan.Leaf(ser.getClass() == EnumSerializer.class && byName(c), this);
    }
    if (ser.getClass() == BeanSerializer.class || ser.getClass() == UnrolledBeanSerializer.class) {
      Plan bean = bean((BeanSerializerBase) ser, c);
      return bean != null && verified(bean, sample) ? bean : foreign(key.root);
    }
    if (ser.getClass() == MapSerializer.class && sample instanceof Map<?, ?>) {
      JavaType values = type.getContentType();
      return new Plan.MapPlan(
          immutableMap(c), new Slot(this, values == null ? objectType() : values, false));
    }
    if (LIST_SERIALIZERS.contains(ser.getClass()) && sample instanceof Collection<?>) {
      JavaType elements = type.getContentType();
      return new Plan.ListPlan(
          immutableCollection(c),
          new Slot(this, elements == null ? objectType() : elements, false));
    }
    return foreign(key.root);
  }

  private static JavaType specialize(SerializationContext ctx, JavaType declared, Class<?> c) {
    if (declared.getRawClass() == c) {
      return declared;
    }
    try {
      return ctx.constructSpecializedType(declared, c);
    } catch (IllegalArgumentException notASubtype) {
      return ctx.constructType(c);
    }
  }

  /** No type ids for the type or any of its type arguments. */
  private static boolean typeInfoFree(SerializationContext ctx, JavaType type, int depth) {
    if (depth > 8 || ctx.findTypeSerializer(type) != null) {
      return false;
    }
    for (int i = 0; i < type.containedTypeCount(); i++) {
      JavaType t = type.containedType(i);
      if (t != null && !typeInfoFree(ctx, t, depth + 1)) {
        return false;
      }
    }
    return true;
  }

  /** Whether an enum is written by its name (its {@code toString} is {@code Enum}'s own). */
  private boolean byName(Class<?> c) {
    try {
      return !enumsByToString || c.getMethod("toString").getDeclaringClass() == Enum.class;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  private JavaType objectType() {
    return mapper.getTypeFactory().constructType(Object.class);
  }

  /**
   * A foreign value's plan: Jackson serializes it alone, which writes what it writes in place when
   * no type ids are involved (checked before). The state itself is never foreign: it is then
   * serialized whole.
   */
  Plan foreign(boolean root) {
    return root ? UNWALKABLE : foreign;
  }

  private @Nullable Plan bean(BeanSerializerBase ser, Class<?> c) {
    if (ser.usesObjectId() || ser.getFilterId() != null || SUPPRESSABLE == null) {
      return null;
    }
    List<BeanPropertyWriter> writers = new ArrayList<>();
    for (Iterator<PropertyWriter> it = ser.properties(); it.hasNext(); ) {
      PropertyWriter p = it.next();
      if (p.getClass() != BeanPropertyWriter.class) {
        return null; // unwrapping, virtual, any-getter, view-filtered
      }
      BeanPropertyWriter w = (BeanPropertyWriter) p;
      if (w.getTypeSerializer() != null
          || w.isUnwrapping()
          || w.getSerializationType() != null
          || suppressable(w) != null
          || !neutral(w)
          || !accessible(w)) {
        return null;
      }
      writers.add(w);
    }
    Slot[] slots = new Slot[writers.size()];
    for (int i = 0; i < slots.length; i++) {
      slots[i] = new Slot(this, writers.get(i).getType(), false);
    }
    return new Plan.Bean(c.isRecord(), writers.toArray(new BeanPropertyWriter[0]), slots);
  }

  private static boolean neutral(BeanPropertyWriter w) {
    if (w.getMember() == null) {
      return false;
    }
    return w.getMember()
        .annotations()
        .map(Annotation::annotationType)
        .filter(
            a ->
                a.getName().startsWith("com.fasterxml.jackson.")
                    || a.getName().startsWith("tools.jackson."))
        .allMatch(a -> NEUTRAL_ANNOTATIONS.contains(a.getSimpleName()));
  }

  /** Makes the property's member readable by reflection, as Jackson does for its own access. */
  private static boolean accessible(BeanPropertyWriter w) {
    try {
      w.getMember().fixAccess(false);
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  private static @Nullable Object suppressable(BeanPropertyWriter w) {
    try {
      return Objects.requireNonNull(SUPPRESSABLE).get(w);
    } catch (IllegalAccessException e) {
      return BeanPropertyWriter.MARKER_FOR_EMPTY;
    }
  }

  private static @Nullable Field field(String name) {
    try {
      Field f = BeanPropertyWriter.class.getDeclaredField(name);
      f.setAccessible(true);
      return f;
    } catch (ReflectiveOperationException | RuntimeException e) {
      log.debug(
          "the codec cannot inspect Jackson's property writers; states are diffed as trees", e);
      return null;
    }
  }

  /**
   * Checks a new bean plan once against Jackson on its first value: the walk and Jackson must
   * produce the same tree, or the class is serialized by Jackson from then on.
   */
  private boolean verified(Plan bean, Object sample) {
    JsonNode walked;
    try {
      walked = ValueTrees.tree(sample, bean);
    } catch (ValueTrees.Unwalkable e) {
      return true; // the state is serialized whole anyway
    }
    if (Trees.same(walked, serde.toTree(sample))) {
      return true;
    }
    log.debug(
        "{} is written differently by Jackson than the codec reads it; it is serialized instead",
        sample.getClass().getName());
    return false;
  }

  private static boolean immutableCollection(Class<?> c) {
    return ImmutableCollection.class.isAssignableFrom(c) || jdkImmutable(c);
  }

  private static boolean immutableMap(Class<?> c) {
    return ImmutableMap.class.isAssignableFrom(c) || jdkImmutable(c);
  }

  /** {@code List.of} and friends, {@code Collections.empty*} and {@code singleton*}. */
  private static boolean jdkImmutable(Class<?> c) {
    String name = c.getName();
    return name.startsWith("java.util.ImmutableCollections$")
        || name.equals("java.util.Collections$EmptyList")
        || name.equals("java.util.Collections$EmptySet")
        || name.equals("java.util.Collections$EmptyMap")
        || name.equals("java.util.Collections$SingletonList")
        || name.equals("java.util.Collections$SingletonSet")
        || name.equals("java.util.Collections$SingletonMap");
  }
}

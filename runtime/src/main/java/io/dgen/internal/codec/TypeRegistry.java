package io.dgen.internal.codec;

import io.dgen.UndecodableDataException;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectReader;

/**
 * The types stored data may name, for one server, and the tags that name them.
 *
 * <p>A stored message or reply carries a tag naming its concrete class only when the declared type
 * does not determine it: the class's logical name and version if it is annotated with {@link
 * io.dgen.TypeName} ({@link TypeNames}), else its class name. A tag's name is looked up in a map
 * built from the declared types (the message type and, if it is sealed, its permitted subtypes,
 * recursively; the state type; the types the start options allow; common JDK value types), under
 * each class's logical name, aliases and class name. A name outside the map is refused: the class
 * it names is never loaded, let alone instantiated. A tag of an older version than the class's is
 * read as a tree and passed through the runtime's {@link Migrations} first; a newer one is refused.
 *
 * <p>A queued message stores its tag as an index into the server's durable type table (tags in the
 * order they were first allowed, never renumbered: a new version of a class is a new entry), which
 * the runtime loads — and extends with the names it allows that are missing — when a process
 * starts; see {@link #learn}. An index resolves to the name, which must still be allowed.
 *
 * <p>The allowed types and the cached readers depend only on the declared types: the processes of
 * many servers of one behaviour share them ({@link #forServer}); the type table is one server's.
 */
public final class TypeRegistry {

  private static final String NULL_TAG = "~null";
  private static final String MAP_TAG = "~map";
  private static final String LIST_TAG = "~list";

  private static final List<Class<?>> JDK_VALUES =
      List.of(
          String.class,
          Integer.class,
          Long.class,
          Short.class,
          Byte.class,
          Double.class,
          Float.class,
          Boolean.class,
          Character.class,
          BigInteger.class,
          BigDecimal.class,
          UUID.class,
          byte[].class);

  private final Serde serde;
  private final JavaType messageType;
  private final boolean open;
  private final boolean messageTagged;
  // Every name a class may be stored under (logical name, aliases, class name) -> its type.
  private final Map<String, JavaType> byTag;
  private final Set<String> messageTags;
  private final Migrations migrations;
  private final Map<JavaType, ObjectReader> readers;
  // The server's durable type table as learned: index <-> tag. Replaced, never changed.
  private volatile Table table = new Table(Map.of(), Map.of());

  private record Table(Map<String, Integer> byName, Map<Integer, String> byIndex) {}

  /**
   * Builds the registry.
   *
   * @param serde the mapper
   * @param messageType the declared message type
   * @param stateType the declared state type
   * @param allowed extra allowed classes
   */
  public TypeRegistry(
      Serde serde, JavaType messageType, JavaType stateType, Collection<Class<?>> allowed) {
    this(serde, messageType, stateType, allowed, false);
  }

  /**
   * The registry of a runtime that addresses servers of a kind it does not host, so does not know
   * their declared types: every message is tagged with its class, whatever it is (the server's
   * holder refuses a class its behaviour does not accept, as it refuses any undecodable message); a
   * reply decodes only as a JDK value, a map or list, or the type a call names.
   */
  public static TypeRegistry open(Serde serde) {
    JavaType object = serde.type(Object.class);
    return new TypeRegistry(serde, object, object, List.of(), true);
  }

  private TypeRegistry(
      Serde serde,
      JavaType messageType,
      JavaType stateType,
      Collection<Class<?>> allowed,
      boolean open) {
    this.serde = serde;
    this.open = open;
    this.messageType = messageType;
    this.byTag = new HashMap<>();
    this.messageTags = new LinkedHashSet<>();
    this.readers = new ConcurrentHashMap<>();
    this.migrations = serde.migrations();
    Class<?> raw = messageType.getRawClass();
    // An annotated message type is always tagged, so that its items name their version.
    this.messageTagged = !isExact(raw) || TypeNames.annotation(raw) != null;
    for (Class<?> c : closure(raw)) {
      add(c);
      Type reply = ReplyTypes.of(c); // a reply type a Call names is allowed without allowTypes
      if (reply != null) {
        ReplyTypes.classesOf(reply).forEach(r -> closure(r).forEach(this::add));
      }
    }
    for (Class<?> c : allowed) {
      closure(c).forEach(this::add);
    }
    closure(stateType.getRawClass()).forEach(this::add);
    JDK_VALUES.forEach(this::add);
    // A message may be of any allowed class that is also a subtype of the declared message type.
    byTag.forEach(
        (tag, type) -> {
          if (raw.isAssignableFrom(type.getRawClass())) {
            messageTags.add(tag);
          }
        });
  }

  /** A registry of another server of the same declared types: the same types, its own table. */
  private TypeRegistry(TypeRegistry shared) {
    this.serde = shared.serde;
    this.open = shared.open;
    this.messageType = shared.messageType;
    this.messageTagged = shared.messageTagged;
    this.byTag = shared.byTag;
    this.messageTags = shared.messageTags;
    this.readers = shared.readers;
    this.migrations = shared.migrations;
  }

  /**
   * A registry for one server that shares this one's allowed types and cached readers (built once,
   * never changed afterwards) and has a type table of its own, empty until {@link #learn}.
   *
   * @return the server's registry
   */
  public TypeRegistry forServer() {
    return new TypeRegistry(this);
  }

  private void add(Class<?> c) {
    JavaType known = byTag.get(c.getName());
    if (!isExact(c) || (known != null && known.getRawClass() == c)) {
      return; // added already; a class whose name another class claims is refused below
    }
    JavaType type = serde.type(c);
    for (String name : TypeNames.names(c)) {
      JavaType other = byTag.putIfAbsent(name, type);
      if (other != null && other.getRawClass() != c) {
        throw new IllegalArgumentException(
            "type name '"
                + name
                + "' is claimed by both "
                + other.getRawClass().getName()
                + " and "
                + c.getName()
                + ": logical names and aliases must be unique among a server's types");
      }
    }
    migrations.require(TypeNames.name(c), TypeNames.version(c), c.getName());
  }

  /** A class whose instances are exactly that class: concrete and final (records, enums too). */
  private static boolean isExact(Class<?> c) {
    return c.isArray()
        || c.isPrimitive()
        || c.isEnum()
        || (Modifier.isFinal(c.getModifiers()) && !c.isInterface());
  }

  /** The class and, for sealed types, every permitted subtype, transitively. */
  private static Set<Class<?>> closure(Class<?> root) {
    Set<Class<?>> out = new LinkedHashSet<>();
    Deque<Class<?>> todo = new ArrayDeque<>(List.of(root));
    while (!todo.isEmpty()) {
      Class<?> c = todo.pop();
      if (!out.add(c)) {
        continue;
      }
      Class<?>[] permitted = c.getPermittedSubclasses();
      if (permitted != null) {
        todo.addAll(List.of(permitted));
      }
    }
    return out;
  }

  /**
   * The tag to store with {@code message}, or null when the declared type determines it.
   *
   * @throws IllegalArgumentException if the message's class is not allowed
   */
  public @Nullable String messageTag(Object message) {
    if (!messageTagged && message.getClass() == messageType.getRawClass()) {
      return null;
    }
    String tag = TypeNames.tag(message.getClass());
    if (open) {
      return tag;
    }
    String name = TypeNames.name(message.getClass());
    if (!messageTags.contains(name) || byTag.get(name).getRawClass() != message.getClass()) {
      throw new IllegalArgumentException(
          "message class "
              + message.getClass().getName()
              + " is not allowed for this server: declared message type="
              + messageType
              + "; make it a permitted subtype of a sealed message type, or allow it with"
              + " the options' allowTypes");
    }
    return tag;
  }

  /**
   * The message's entry in the server's type table, for a queue item.
   *
   * @param tag the message's tag, or null when the declared type determines it
   * @throws IllegalStateException if the table has not been loaded (see {@link #learn})
   */
  public int messageIndex(@Nullable String tag) {
    if (tag == null) {
      return Envelope.DECLARED;
    }
    Integer index = table.byName.get(tag);
    if (index == null) {
      throw new IllegalStateException("type " + tag + " is not in the server's type table");
    }
    return index;
  }

  /**
   * The tags of the classes a message may be of, as they are stored now, sorted: what the type
   * table must hold.
   */
  public List<String> messageTagNames() {
    return messageTags.stream()
        .map(byTag::get)
        .map(t -> t.getRawClass())
        .distinct()
        .map(TypeNames::tag)
        .sorted()
        .toList();
  }

  /** Whether this registry knows no declared types ({@link #open}). */
  public boolean isOpen() {
    return open;
  }

  /** Whether stored messages name their type: the declared message type does not determine it. */
  public boolean messagesTagged() {
    return messageTagged;
  }

  /**
   * Adds entries of the server's durable type table. Entries never change once written, so what was
   * learned stays true.
   */
  public void learn(Map<Integer, String> entries) {
    synchronized (this) {
      Table t = table;
      Map<String, Integer> byName = new HashMap<>(t.byName);
      Map<Integer, String> byIndex = new HashMap<>(t.byIndex);
      entries.forEach(
          (i, name) -> {
            byIndex.put(i, name);
            byName.putIfAbsent(name, i);
          });
      table = new Table(Map.copyOf(byName), Map.copyOf(byIndex));
    }
  }

  /** The index of {@code tag} in the type table as learned, or -1. */
  public int indexOf(String tag) {
    Integer i = table.byName.get(tag);
    return i == null ? -1 : i;
  }

  /** The type table as learned: class names by index. */
  public Map<Integer, String> table() {
    return table.byIndex;
  }

  /** Whether the type table entry {@code index} is known. */
  public boolean knows(int index) {
    return index == Envelope.DECLARED || table.byIndex.containsKey(index);
  }

  /**
   * Decodes the message of a queue item.
   *
   * @throws UndecodableDataException if its type is not allowed or not in the type table as
   *     learned, or the bytes do not fit
   */
  public Object decodeMessage(Envelope env) {
    String tag = env.typeName();
    if (env.typeIndex() != Envelope.DECLARED) {
      tag = table.byIndex.get(env.typeIndex());
      if (tag == null) {
        throw new UndecodableDataException(
            "stored message names type table entry "
                + env.typeIndex()
                + ", which this server's type table does not have",
            null);
      }
    }
    JavaType type;
    TypeNames.Tag stored;
    if (tag == null) {
      if (!isExact(messageType.getRawClass())) {
        throw new UndecodableDataException(
            "stored message has no type tag but the declared type " + messageType + " needs one",
            null);
      }
      // Written before the declared type was annotated: version 1.
      type = messageType;
      stored = new TypeNames.Tag(TypeNames.name(type.getRawClass()), 1);
    } else {
      stored = TypeNames.parse(tag);
      JavaType known = messageTags.contains(stored.name()) ? byTag.get(stored.name()) : null;
      if (known == null) {
        throw new UndecodableDataException(
            "stored message names type '"
                + stored.name()
                + "', which is not allowed for message type "
                + messageType
                + "; the class was not loaded",
            stored.name(),
            stored.version(),
            null);
      }
      type = known;
    }
    return read(env, type, stored, "message");
  }

  /**
   * Reads the message of {@code env} as {@code type}: straight from its bytes when stored at the
   * type's version, else as a tree migrated to it.
   */
  private Object read(Envelope env, JavaType type, TypeNames.Tag stored, String what) {
    Class<?> raw = type.getRawClass();
    int current = TypeNames.version(raw);
    try {
      if (stored.version() == current) {
        return reader(type).readValue(env.bytes(), env.messageOffset(), env.messageLength());
      }
      JsonNode tree =
          serde.mapper().readTree(env.bytes(), env.messageOffset(), env.messageLength());
      return serde.fromTree(upcast(stored, raw, tree), type);
    } catch (UndecodableDataException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new UndecodableDataException(
          "stored " + what + " does not decode as " + type + ": " + e.getMessage(),
          stored.name(),
          stored.version(),
          e);
    }
  }

  /**
   * Migrates a tree stored under {@code stored} to the current version of {@code target}.
   *
   * @throws UndecodableDataException if it was stored at a newer version than the class's, or a
   *     step fails
   */
  public JsonNode upcast(TypeNames.Tag stored, Class<?> target, JsonNode tree) {
    return upcast(migrations, stored, target, tree);
  }

  /** {@link #upcast(TypeNames.Tag, Class, JsonNode)} with the given steps. */
  static JsonNode upcast(
      Migrations migrations, TypeNames.Tag stored, Class<?> target, JsonNode tree) {
    int current = TypeNames.version(target);
    if (stored.version() > current) {
      throw new UndecodableDataException(
          "stored at version "
              + stored.version()
              + " of '"
              + stored.name()
              + "', newer than this code's "
              + target.getName()
              + " (version "
              + current
              + "): a newer release wrote it; decode it where that release runs (re-queue a dead"
              + " letter once it does)",
          stored.name(),
          stored.version(),
          null);
    }
    if (stored.version() == current) {
      return tree;
    }
    return migrations.migrate(TypeNames.name(target), stored.version(), current, tree);
  }

  /**
   * Decodes the info object of an item a ref sent as a priority info: of any class this registry
   * allows (the declared types, their permitted subtypes, the allowed types, JDK values).
   *
   * @throws UndecodableDataException if its type is not allowed or the bytes do not fit
   */
  public Object decodeInfo(Envelope env) {
    String tag = table.byIndex.get(env.typeIndex());
    TypeNames.Tag stored = tag == null ? null : TypeNames.parse(tag);
    JavaType type = stored == null ? null : byTag.get(stored.name());
    if (stored == null || type == null) {
      throw new UndecodableDataException(
          "stored info names type '" + tag + "', which is not allowed for this server", null);
    }
    return read(env, type, stored, "info");
  }

  private ObjectReader reader(JavaType type) {
    return readers.computeIfAbsent(type, t -> serde.mapper().readerFor(t));
  }

  /**
   * The tag to store with a reply: its class name (or a marker for null, maps and lists). Writing
   * never fails, so a reply the caller cannot decode never blocks the queue; the caller checks the
   * tag against the allow-list when it decodes ({@link #decodeReply}).
   */
  public String replyTag(@Nullable Object reply) {
    if (reply == null) {
      return NULL_TAG;
    }
    String name = reply.getClass().getName();
    if (byTag.containsKey(name) || TypeNames.annotation(reply.getClass()) != null) {
      return TypeNames.tag(reply.getClass());
    }
    if (reply instanceof Map<?, ?>) {
      return MAP_TAG;
    }
    if (reply instanceof Collection<?>) {
      return LIST_TAG;
    }
    return name;
  }

  /**
   * Checks that a reply obtained without storing it (an inline call) could be decoded by the
   * caller, so that inline and queued calls behave alike.
   *
   * @throws UndecodableDataException if the reply's tag is not allowed
   */
  public void checkReply(@Nullable Object reply) {
    String tag = replyTag(reply);
    if (!NULL_TAG.equals(tag) && !MAP_TAG.equals(tag) && !LIST_TAG.equals(tag)) {
      if (!byTag.containsKey(TypeNames.parse(tag).name())) {
        throw replyNotAllowed(tag);
      }
    }
  }

  private static UndecodableDataException replyNotAllowed(String tag) {
    return new UndecodableDataException(
        "the reply is of type '"
            + tag
            + "', which is not allowed for this server, so it was not decoded (the call did"
            + " execute): pass the reply type, call(request, Type.class, timeout), or allow it"
            + " with the options' allowTypes",
        null);
  }

  /**
   * Decodes a stored reply, as {@code expected} if given, else by its tag.
   *
   * @throws UndecodableDataException if the tag is not allowed or the tree does not fit
   */
  public @Nullable Object decodeReply(String tag, JsonNode tree, @Nullable Type expected) {
    if (NULL_TAG.equals(tag)) {
      return null;
    }
    TypeNames.Tag stored = TypeNames.parse(tag);
    if (expected != null) {
      // The tag names the expected class (under any of its names): migrate it first.
      Class<?> raw = ReplyTypes.raw(expected);
      boolean same = TypeNames.names(raw).contains(stored.name());
      return convert(same ? upcast(stored, raw, tree) : tree, serde.type(expected), stored);
    }
    JavaType type =
        switch (tag) {
          case MAP_TAG -> serde.type(Map.class);
          case LIST_TAG -> serde.type(List.class);
          default -> byTag.get(stored.name());
        };
    if (type == null) {
      throw replyNotAllowed(tag);
    }
    return convert(upcast(stored, type.getRawClass(), tree), type, stored);
  }

  private Object convert(JsonNode tree, JavaType type, TypeNames.Tag stored) {
    try {
      return serde.fromTree(tree, type);
    } catch (RuntimeException e) {
      throw new UndecodableDataException(
          "stored reply does not decode as " + type + ": " + e.getMessage(),
          stored.name(),
          stored.version(),
          e);
    }
  }
}

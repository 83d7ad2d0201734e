package io.dgen.internal.codec;

import java.io.OutputStream;
import java.lang.reflect.Type;
import java.util.Objects;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.dataformat.smile.SmileMapper;

/** The runtime's one {@link ObjectMapper} (Smile) and the conversions it is used for. */
public final class Serde {

  private final ObjectMapper mapper;
  private final Migrations migrations;

  /**
   * Wraps {@code mapper}, with no migrations.
   *
   * @param mapper a mapper writing Smile (or any binary-safe format)
   */
  public Serde(ObjectMapper mapper) {
    this(mapper, Migrations.NONE);
  }

  /**
   * Wraps {@code mapper}; stored trees of older versions go through {@code migrations}.
   *
   * @param mapper a mapper writing Smile (or any binary-safe format)
   * @param migrations the runtime's migration steps
   */
  public Serde(ObjectMapper mapper, Migrations migrations) {
    this.mapper = Objects.requireNonNull(mapper, "mapper must not be null");
    this.migrations = Objects.requireNonNull(migrations, "migrations must not be null");
  }

  /** The runtime's migration steps. */
  public Migrations migrations() {
    return migrations;
  }

  /**
   * The default mapper: Jackson 3 Smile with Jackson's defaults, and records (and other
   * property-based creators) constructed through a prepared handle ({@link FastCreators}).
   */
  public static ObjectMapper defaultMapper() {
    return SmileMapper.builder().addModule(FastCreators.module()).build();
  }

  /** The wrapped mapper. */
  public ObjectMapper mapper() {
    return mapper;
  }

  /** Resolves a reflective type. */
  public JavaType type(Type type) {
    return mapper.getTypeFactory().constructType(type);
  }

  /** Converts a value to a tree. */
  public JsonNode toTree(@org.jspecify.annotations.Nullable Object value) {
    return mapper.valueToTree(value);
  }

  /**
   * Converts a tree to a value of {@code type}.
   *
   * @throws JacksonException if the tree does not fit the type
   */
  public <T> T fromTree(JsonNode tree, JavaType type) {
    return mapper.treeToValue(tree, type);
  }

  /** Serializes a tree (or any value) to bytes. */
  public byte[] toBytes(Object value) {
    return mapper.writeValueAsBytes(value);
  }

  /** The number of bytes {@link #toBytes} makes of {@code value}, counted without keeping them. */
  public long sizeOf(Object value) {
    Counting out = new Counting();
    mapper.writeValue(out, value);
    return out.count;
  }

  private static final class Counting extends OutputStream {
    long count;

    @Override
    public void write(int b) {
      count++;
    }

    @Override
    public void write(byte[] b, int off, int len) {
      count += len;
    }
  }

  /**
   * Parses bytes into a tree.
   *
   * @throws JacksonException if the bytes are not valid
   */
  public JsonNode readTree(byte[] bytes) {
    return mapper.readTree(bytes);
  }

  /**
   * Parses bytes into a value of {@code type}.
   *
   * @throws JacksonException if the bytes do not fit the type
   */
  public <T> T read(byte[] bytes, Class<T> type) {
    return mapper.readValue(bytes, type);
  }
}

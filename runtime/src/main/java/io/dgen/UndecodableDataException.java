package io.dgen;

import org.jspecify.annotations.Nullable;

/**
 * Stored data (a queue item, a dead letter, a timer, a reply or the state) cannot be decoded into
 * the server's declared types: it names a class outside the allowed set (such a class is never
 * loaded or instantiated), a version newer than the code knows, or its fields do not fit the class
 * (an incompatible change without a migration, see {@link TypeName} and {@link
 * DGen.Builder#migration}). Undecodable data is never dropped: a queue item is moved to the dead
 * letters with its bytes, and a state stays as it is.
 *
 * <p>When known, the exception names the server ({@link #server()}), the type and version the data
 * was stored under ({@link #storedType()}, {@link #storedVersion()}) and the key that holds it
 * ({@link #key()}); its message carries them as {@code key=value} pairs.
 */
public final class UndecodableDataException extends DGenException {

  private static final long serialVersionUID = 1L;

  private final String what;
  private final @Nullable String server;
  private final @Nullable String storedType;
  private final int storedVersion;
  private final @Nullable String key;

  /**
   * Creates the exception.
   *
   * @param message what could not be decoded, with context
   * @param cause the decoder's failure, if any
   */
  public UndecodableDataException(String message, @Nullable Throwable cause) {
    this(message, null, null, 0, null, cause);
  }

  /**
   * Creates the exception for data stored under a known type.
   *
   * @param message what could not be decoded
   * @param storedType the tag the data was stored under (a logical name or class name), if known
   * @param storedVersion the version it was stored at, 0 if unknown
   * @param cause the decoder's failure, if any
   */
  public UndecodableDataException(
      String message, @Nullable String storedType, int storedVersion, @Nullable Throwable cause) {
    this(message, null, storedType, storedVersion, null, cause);
  }

  private UndecodableDataException(
      String what,
      @Nullable String server,
      @Nullable String storedType,
      int storedVersion,
      @Nullable String key,
      @Nullable Throwable cause) {
    super(describe(what, server, storedType, storedVersion, key), cause);
    this.what = what;
    this.server = server;
    this.storedType = storedType;
    this.storedVersion = storedVersion;
    this.key = key;
  }

  private static String describe(
      String what,
      @Nullable String server,
      @Nullable String storedType,
      int storedVersion,
      @Nullable String key) {
    StringBuilder b = new StringBuilder(what);
    if (storedType != null) {
      b.append(" storedType=").append(storedType);
    }
    if (storedVersion > 0) {
      b.append(" storedVersion=").append(storedVersion);
    }
    if (key != null) {
      b.append(" key=").append(key);
    }
    if (server != null) {
      b.append(' ').append(server);
    }
    return b.toString();
  }

  /**
   * This exception with where the data is: the server and the key. Keeps the cause and what was
   * known already; a where already known is kept.
   *
   * @param server the server, as {@code tenant=.. tuid=..}
   * @param key the key holding the data, printable
   * @return a new exception
   */
  public UndecodableDataException at(String server, @Nullable String key) {
    if (this.server != null && (this.key != null || key == null)) {
      return this;
    }
    UndecodableDataException e =
        new UndecodableDataException(
            what,
            this.server != null ? this.server : server,
            storedType,
            storedVersion,
            this.key != null ? this.key : key,
            getCause());
    e.setStackTrace(getStackTrace());
    return e;
  }

  /**
   * The server the data belongs to, as {@code tenant=.. tuid=..}, if known.
   *
   * @return the server, or null
   */
  public @Nullable String server() {
    return server;
  }

  /**
   * The type tag the data was stored under: a logical name ({@link TypeName}) or a class name, if
   * known.
   *
   * @return the stored type, or null
   */
  public @Nullable String storedType() {
    return storedType;
  }

  /**
   * The version the data was stored at; 0 if unknown.
   *
   * @return the stored version
   */
  public int storedVersion() {
    return storedVersion;
  }

  /**
   * The key that holds the data, printable, if known.
   *
   * @return the key, or null
   */
  public @Nullable String key() {
    return key;
  }
}

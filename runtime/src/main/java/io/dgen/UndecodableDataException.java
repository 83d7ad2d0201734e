package io.dgen;

/**
 * Stored data (a queue item, a reply or the state) cannot be decoded into the server's declared
 * types, for example because it names a class outside the allowed set. Such a class is never loaded
 * or instantiated.
 */
public final class UndecodableDataException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what could not be decoded, with context
   * @param cause the decoder's failure, if any
   */
  public UndecodableDataException(
      String message, @org.jspecify.annotations.Nullable Throwable cause) {
    super(message, cause);
  }
}

package io.dgen.backend.rocksdb;

import java.nio.file.Path;
import org.jspecify.annotations.Nullable;

/**
 * A data directory that {@link RocksDbBackend#open} refuses: not a DGen RocksDB directory, of
 * another format version, corrupted, or already open in another process. Nothing in the directory
 * is changed when this is thrown.
 */
public final class DataDirectoryException extends RuntimeException {

  private final Path directory;

  /**
   * Creates the exception.
   *
   * @param directory the refused directory
   * @param detail what is wrong and what to do
   * @param cause the underlying error; may be null
   */
  public DataDirectoryException(Path directory, String detail, @Nullable Throwable cause) {
    super(directory + ": " + detail, cause);
    this.directory = directory;
  }

  /**
   * The refused directory.
   *
   * @return the directory given to {@link RocksDbBackend#open}
   */
  public Path directory() {
    return directory;
  }
}

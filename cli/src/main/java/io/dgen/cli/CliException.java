package io.dgen.cli;

/** A failure {@code dgen} reports as one line on stderr, with its exit code. */
final class CliException extends RuntimeException {

  private final int exitCode;

  CliException(int exitCode, String message) {
    super(message, null, false, false);
    this.exitCode = exitCode;
  }

  int exitCode() {
    return exitCode;
  }
}

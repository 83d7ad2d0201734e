package io.dgen.internal.process;

/** How a server's process came to be, which decides what it owns and does. */
enum ProcessRole {
  /** {@code DGen.start}: consumes if its options say so, alongside any other process. */
  STARTED,
  /** Loaded by the holder of its bucket's lease: consumes alone, created by its first message. */
  HOSTED,
  /** {@code DGen.ref}: a handle that publishes, calls and administers; never consumes. */
  REF
}

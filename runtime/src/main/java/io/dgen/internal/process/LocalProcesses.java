package io.dgen.internal.process;

import io.dgen.ProcessRef;
import io.dgen.internal.keys.ServerEntry;
import io.dgen.internal.keys.ServerKeys;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The live started processes of one runtime, and their registered names: what {@code whereis}
 * finds, what a kill stops locally, and what the runtime stops when it closes.
 *
 * <p>Threading: thread-safe; concurrent maps (starting or stopping a process is O(1)).
 */
public final class LocalProcesses {

  /** A live started process, as the registry sees it. */
  public interface Member {
    /** The name it is registered under, if any. */
    Optional<String> name();

    /** Its server's keys. */
    ServerKeys keys();

    /** The incarnation of its server it belongs to (0 before its start committed). */
    long incarnation();

    /** Stops it; its durable state stays. */
    void stop();

    /** The process as its callers see it. */
    ProcessRef<?> ref();
  }

  private final Set<Member> processes = ConcurrentHashMap.newKeySet();
  private final Map<String, Member> names = new ConcurrentHashMap<>();

  /**
   * Registers {@code p}, under its name if it has one.
   *
   * @throws IllegalStateException if a live process is registered under that name already
   */
  void register(Member p) {
    String name = p.name().orElse(null);
    if (name != null && names.putIfAbsent(name, p) != null) {
      throw new IllegalStateException("a live process is already registered as name=" + name);
    }
    processes.add(p);
  }

  void unregister(Member p) {
    processes.remove(p);
    p.name().ifPresent(n -> names.remove(n, p));
  }

  /**
   * Stops every local process of the server {@code keys} names, in {@code incarnation} (after a
   * kill of it); processes of a server started again since are spared.
   */
  void stopLocal(ServerKeys keys, long incarnation) {
    for (Member p : processes) {
      if (Arrays.equals(p.keys().root().getKey(), keys.root().getKey())
          && (!ServerEntry.isIncarnation(incarnation)
              || p.incarnation() == 0
              || p.incarnation() == incarnation)) {
        p.stop();
      }
    }
  }

  /**
   * The live process registered under {@code name}.
   *
   * @param name the name
   * @return the process, if any
   */
  public Optional<Member> whereis(String name) {
    return Optional.ofNullable(names.get(name));
  }

  /** The number of live processes. */
  public int size() {
    return processes.size();
  }

  /** Stops every live process. */
  public void stopAll() {
    for (Member p : processes) {
      p.stop();
    }
  }
}

package io.dgen.backend.memory;

import static io.dgen.backend.memory.TestKeys.b;
import static io.dgen.backend.memory.TestKeys.get;
import static io.dgen.backend.memory.TestKeys.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.backend.BackendException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class TooOldTest {

  private static final long SIX_SECONDS = TimeUnit.SECONDS.toNanos(6);

  private final AtomicLong now = new AtomicLong(1234);
  private final MemoryBackend backend = MemoryBackend.builder().ticker(now::get).build();
  private final AtomicInteger executions = new AtomicInteger();

  @AfterEach
  void close() {
    backend.close();
  }

  @Test
  void commitWithReadsMoreThanFiveSecondsAfterReadVersion_failsWith1007AndIsRetried() {
    byte[] k = b("k");
    backend.run(
        tx -> {
          tx.get(k);
          if (executions.incrementAndGet() == 1) {
            now.addAndGet(SIX_SECONDS);
          }
          tx.set(b("x"), b("1"));
          return null;
        });
    assertThat(executions).hasValue(2);
    assertThat(backend.counters().transactionsRetried()).isEqualTo(1);
    assertThat(get(backend, b("x"))).isEqualTo(b("1"));
  }

  @Test
  void storageReadMoreThanFiveSecondsAfterReadVersion_failsWith1007AndIsRetried() {
    put(backend, b("k"), b("v"));
    byte[] v =
        backend.run(
            tx -> {
              tx.getReadVersion();
              if (executions.incrementAndGet() == 1) {
                now.addAndGet(SIX_SECONDS);
              }
              return tx.get(b("k"));
            });
    assertThat(v).isEqualTo(b("v"));
    assertThat(executions).hasValue(2);
  }

  @Test
  void storageRead_throws1007WithoutRetryLimit() {
    try (MemoryBackend once = MemoryBackend.builder().ticker(now::get).retryLimit(0).build()) {
      assertThatThrownBy(
              () ->
                  once.run(
                      tx -> {
                        tx.getReadVersion();
                        now.addAndGet(SIX_SECONDS);
                        return tx.getRange(b("a"), b("b"));
                      }))
          .isInstanceOfSatisfying(
              BackendException.class, e -> assertThat(e.code()).isEqualTo(1007));
    }
  }

  @Test
  void oldWritingAttemptWithAReadVersion_failsWith1007AndIsRetried_evenWithoutReads() {
    // FoundationDB makes every writing commit self-conflicting: once the attempt took a read
    // version, it is too old to commit five seconds later, whether it read anything or not.
    backend.run(
        tx -> {
          tx.getReadVersion();
          if (executions.incrementAndGet() == 1) {
            now.addAndGet(SIX_SECONDS);
          }
          tx.set(b("k"), b("v"));
          return null;
        });
    assertThat(executions).hasValue(2);
    assertThat(backend.counters().transactionsRetried()).isEqualTo(1);
    assertThat(get(backend, b("k"))).isEqualTo(b("v"));
  }

  @Test
  void oldBlindWriteWithoutAReadVersion_commits() {
    // It takes its read version at commit, so it cannot be too old.
    backend.run(
        tx -> {
          executions.incrementAndGet();
          tx.set(b("k"), b("v"));
          now.addAndGet(SIX_SECONDS);
          return null;
        });
    assertThat(executions).hasValue(1);
    assertThat(get(backend, b("k"))).isEqualTo(b("v"));
  }

  @Test
  void oldReadOnlyAttempt_commits() {
    backend.run(
        tx -> {
          executions.incrementAndGet();
          tx.get(b("k"));
          now.addAndGet(SIX_SECONDS);
          return null;
        });
    assertThat(executions).hasValue(1);
  }

  @Test
  void readsAnsweredFromOwnWrites_doNotAge_butTheWritingCommitDoes() {
    List<byte[]> got = new ArrayList<>();
    backend.run(
        tx -> {
          tx.getReadVersion();
          tx.set(b("k"), b("mine"));
          if (executions.incrementAndGet() == 1) {
            now.addAndGet(SIX_SECONDS);
          }
          got.add(tx.get(b("k"))); // answered from the attempt's own writes: no 1007 here
          return null;
        });
    assertThat(got).hasSize(2).allSatisfy(v -> assertThat(v).isEqualTo(b("mine")));
    assertThat(executions).hasValue(2); // the first attempt's commit was too old
  }
}

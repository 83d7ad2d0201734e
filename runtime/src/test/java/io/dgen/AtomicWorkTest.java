package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.backend.BackendException;
import io.dgen.internal.keys.Buckets;
import io.dgen.internal.keys.ServerKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Atomic work across servers ({@link DGen#transact}): calls on several servers commit together or
 * not at all, in FIFO order with each server's queue, exactly once under conflicts and {@code
 * commit_unknown_result}, and across hand-offs of a hosted server's bucket.
 */
class AtomicWorkTest extends RuntimeTestBase {

  private static final Kind<Bank.Msg> KIND = Kind.of("acct", Bank.Msg.class);
  private static final Duration CREATE = Duration.ofSeconds(30);

  private final Bank.Hooks bank = new Bank.Hooks();
  private final List<DGen> others = new ArrayList<>();

  private boolean hosted;

  /**
   * Hosts the kind in the test's runtime (not for the tests that inject faults: a placement round
   * could take them).
   */
  private void host() {
    if (!hosted) {
      hosted = true;
      dgen.host(KIND, () -> new Bank(bank), HostOptions.builder(tenant).build());
    }
  }

  /** The tenant of the hand-off test, whose runtimes use fewer buckets. */
  private final String[] handOff = {"atomic", UUID.randomUUID().toString()};

  @AfterEach
  void closeOthers() {
    bank.release.countDown();
    others.forEach(DGen::close);
    backend.removeDirectory(handOff);
  }

  /** A hosted account of the test's runtime, created with {@code balance}. */
  private ServerRef<Bank.Msg> account(String id, long balance) {
    host();
    ServerRef<Bank.Msg> ref = dgen.ref(tenant, KIND, id);
    ref.call(new Bank.Deposit("open-" + id, balance), CREATE); // queued: its holder creates it
    return ref;
  }

  private String[] path() {
    return tenant.path().toArray(String[]::new);
  }

  /** The post-commit actions run so far, but the accounts' opening deposits'. */
  private List<String> transferActions() {
    return bank.actions.stream().filter(a -> !a.startsWith("deposit open")).toList();
  }

  private static long balance(ServerRef<Bank.Msg> ref) {
    return ref.call(new Bank.Balance(), CREATE);
  }

  /** Moves {@code amount} from {@code from} to {@code to} in one transaction of {@code d}. */
  private long transfer(
      DGen d, ServerRef<Bank.Msg> from, ServerRef<Bank.Msg> to, long amount, String id) {
    return d.transact(
        d.tenant(path()),
        tx -> {
          long left = tx.call(from, new Bank.Withdraw(id, amount));
          tx.call(to, new Bank.Deposit(id, amount));
          return left;
        });
  }

  @Test
  void aTransfer_commitsBothCalls_andTheirActionsRunOnceAfterTheCommit() {
    ServerRef<Bank.Msg> a = account("a", 100);
    ServerRef<Bank.Msg> b = account("b", 0);
    bank.actions.clear();

    assertThat(transfer(dgen, a, b, 30, "t1")).isEqualTo(70);

    assertThat(balance(a)).isEqualTo(70);
    assertThat(balance(b)).isEqualTo(30);
    assertThat(transferActions()).containsExactly("withdraw t1", "deposit t1");
  }

  @Test
  void aRefusalInTheSecondServer_abortsTheFirstsChange_andTheCallerGetsIt() {
    ServerRef<Bank.Msg> a = account("a", 100);
    ServerRef<Bank.Msg> b = account("b", 0);
    assertThat(b.call(new Bank.Close())).isTrue();
    bank.actions.clear();

    assertThatThrownBy(() -> transfer(dgen, a, b, 30, "t1"))
        .isInstanceOf(CallRejectedException.class)
        .hasMessageContaining("closed");
    // A body that catches the refusal still aborts: the refused callback cannot be taken back.
    assertThatThrownBy(
            () ->
                dgen.transact(
                    tenant,
                    tx -> {
                      tx.call(a, new Bank.Withdraw("t2", 30));
                      try {
                        tx.call(b, new Bank.Deposit("t2", 30));
                      } catch (CallRejectedException swallowed) {
                        // ignored on purpose
                      }
                      return null;
                    }))
        .isInstanceOf(CallRejectedException.class);
    // Refused in the first server: over the balance.
    assertThatThrownBy(() -> transfer(dgen, a, account("c", 0), 1000, "t3"))
        .isInstanceOf(CallRejectedException.class)
        .hasMessageContaining("insufficient");

    assertThat(balance(a)).isEqualTo(100);
    assertThat(transferActions()).isEmpty();
  }

  @Test
  void aCallbackThatThrows_abortsTheTransaction_andIsNotRetried() {
    ServerRef<Bank.Msg> a = account("a", 100);
    ServerRef<Bank.Msg> b = account("b", 0);
    AtomicInteger runs = new AtomicInteger();

    assertThatThrownBy(
            () ->
                dgen.transact(
                    tenant,
                    tx -> {
                      runs.incrementAndGet();
                      tx.call(a, new Bank.Withdraw("t1", 10));
                      return tx.call(b, new Bank.Boom());
                    }))
        .isInstanceOf(CallbackException.class)
        .hasMessageContaining("nothing was committed");
    assertThatThrownBy(
            () ->
                dgen.transact(
                    tenant,
                    tx -> {
                      tx.call(a, new Bank.Withdraw("t2", 10));
                      throw new java.io.IOException("the body's own failure");
                    }))
        .isInstanceOf(DGenException.class)
        .hasRootCauseInstanceOf(java.io.IOException.class);

    assertThat(runs).hasValue(1);
    assertThat(balance(a)).isEqualTo(100);
    assertThat(balance(b)).isZero();
  }

  @Test
  void statesRead_castsApplied_andOutboxCasts_commitWithTheTransaction() {
    ServerRef<Bank.Msg> a = account("a", 100);
    ServerRef<Bank.Msg> b = account("b", 5);

    long seen =
        dgen.transact(
            tenant,
            tx -> {
              tx.cast(a, new Bank.Touch("inline"));
              Bank.Acct before = tx.state(b, Bank.Acct.class);
              tx.call(b, new Bank.Deposit("d", 1));
              b.outbox().cast(tx.transaction(), new Bank.Touch("queued")); // after b's call
              Bank.Acct after = tx.state(b, Bank.Acct.class);
              assertThat(after.balance()).isEqualTo(before.balance() + 1);
              return tx.state(a, Bank.Acct.class).balance() + after.balance();
            });
    assertThat(seen).isEqualTo(106);
    await().atMost(BULK_WAIT).until(() -> b.call(new Bank.Log()).contains("queued"));
    assertThat(a.call(new Bank.Log())).endsWith("inline");
    assertThat(b.call(new Bank.Log())).containsSubsequence("d", "queued");
    Object none =
        dgen.<Object>transact(tenant, tx -> tx.state(dgen.ref(tenant, KIND, "none"), Object.class));
    assertThat(none).as("a server not created yet reads as null").isNull();
    assertThat(dgen.transactAsync(tenant, tx -> tx.call(a, new Bank.Balance())).join())
        .isEqualTo(100);
  }

  @Test
  void timersAndOutboxCastsOfARefusedTransaction_areNotStored() {
    ServerRef<Bank.Msg> a = account("a", 100);
    ServerRef<Bank.Msg> b = account("b", 0);

    assertThatThrownBy(
            () ->
                dgen.transact(
                    tenant,
                    tx -> {
                      tx.prefetch(a, b); // named before its outbox cast, which reading it needs
                      tx.call(a, new Bank.Remind("r1")); // a timer, written in this transaction
                      b.outbox().cast(tx.transaction(), new Bank.Touch("queued"));
                      return tx.call(b, new Bank.Withdraw("w", 1)); // refused: b has nothing
                    }))
        .isInstanceOf(CallRejectedException.class);
    assertThatThrownBy(
            () ->
                dgen.transact(
                    tenant,
                    tx -> {
                      b.outbox().cast(tx.transaction(), new Bank.Touch("queued"));
                      return tx.call(b, new Bank.Deposit("d", 1));
                    }))
        .isInstanceOf(DGenException.class)
        .hasMessageContaining("before it named the server");
    assertThat(admin(a).timers()).isEmpty();
    assertThat(admin(b).queueLength()).isZero();

    dgen.transact(tenant, tx -> tx.call(a, new Bank.Remind("r2")));
    assertThat(admin(a).timers()).hasSize(1);
    assertThat(b.call(new Bank.Log())).doesNotContain("queued");
  }

  @Test
  void transfersUnderContention_withConsumersAndSnapshots_conserveTheTotal() throws Exception {
    int n = 6;
    long each = 1000;
    List<ServerRef<Bank.Msg>> accounts = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      accounts.add(account("c" + i, each));
    }
    int transfersPerThread = 40;
    int touchesPerThread = 100;
    AtomicBoolean done = new AtomicBoolean();
    AtomicInteger committed = new AtomicInteger();
    AtomicInteger busy = new AtomicInteger();
    AtomicInteger snapshots = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(5);
    try {
      List<Future<?>> work = new ArrayList<>();
      for (int t = 0; t < 2; t++) {
        int seed = t;
        work.add(
            pool.submit(
                () -> {
                  Random r = new Random(seed);
                  for (int i = 0; i < transfersPerThread; i++) {
                    int from = r.nextInt(n);
                    int to = (from + 1 + r.nextInt(n - 1)) % n;
                    try {
                      transfer(
                          dgen,
                          accounts.get(from),
                          accounts.get(to),
                          1 + r.nextInt(50),
                          "x" + seed + "-" + i);
                      committed.incrementAndGet();
                    } catch (ServerBusyException e) {
                      busy.incrementAndGet();
                    }
                  }
                  return null;
                }));
        work.add(
            pool.submit(
                () -> {
                  Random r = new Random(100 + seed);
                  for (int i = 0; i < touchesPerThread; i++) {
                    accounts.get(r.nextInt(n)).cast(new Bank.Touch("touch"));
                  }
                  return null;
                }));
      }
      Future<?> auditor =
          pool.submit(
              () -> {
                while (!done.get()) {
                  long total =
                      dgen.transact(
                          tenant,
                          tx -> {
                            tx.prefetch(accounts.toArray(ServerRef<?>[]::new)); // one round
                            long sum = 0;
                            for (ServerRef<Bank.Msg> acct : accounts) {
                              sum += tx.state(acct, Bank.Acct.class).balance();
                            }
                            return sum;
                          });
                  assertThat(total).as("one atomic snapshot of every account").isEqualTo(n * each);
                  snapshots.incrementAndGet();
                }
                return null;
              });
      for (Future<?> f : work) {
        f.get(5, TimeUnit.MINUTES);
      }
      done.set(true);
      auditor.get(5, TimeUnit.MINUTES);
    } finally {
      done.set(true);
      pool.shutdownNow();
    }
    await()
        .atMost(BULK_WAIT)
        .until(
            () ->
                accounts.stream().mapToLong(a -> a.call(new Bank.Get(), CREATE).touches()).sum()
                    == 2L * touchesPerThread);
    long total = 0;
    for (ServerRef<Bank.Msg> a : accounts) {
      total += balance(a);
    }
    assertThat(total).isEqualTo(n * each);
    assertThat(committed.get()).as("most transfers waited their turn and committed").isPositive();
    assertThat(committed.get() + busy.get()).isEqualTo(2 * transfersPerThread);
    assertThat(snapshots.get()).isPositive();
    assertThat(bank.actions.stream().filter(s -> s.startsWith("deposit x")).count())
        .as("each committed transfer's actions ran once")
        .isEqualTo(committed.get());
  }

  @Test
  void injectedConflictsAndUnknownResults_applyEachTransferOnce() {
    ServerRef<Bank.Msg> a = startedAccount("a", 100);
    ServerRef<Bank.Msg> b = startedAccount("b", 0);
    AtomicInteger runs = new AtomicInteger();
    AtomicBody<Long> body =
        tx -> {
          runs.incrementAndGet();
          tx.call(b, new Bank.Deposit("t" + runs.get(), 10));
          return tx.call(a, new Bank.Withdraw("w", 10));
        };

    faults().failNextCommits(2); // 1020 twice: two conflicts
    assertThat(dgen.transact(tenant, body)).isEqualTo(90);
    assertThat(runs).as("run again after each conflict").hasValue(3);

    runs.set(0);
    faults().commitUnknownResult(1, true); // applied, reported as 1021
    assertThat(dgen.transact(tenant, body)).isEqualTo(80);
    assertThat(runs).as("the marker showed the commit: the body did not run again").hasValue(1);

    runs.set(0);
    faults().commitUnknownResult(1, false); // not applied, reported the same
    assertThat(dgen.transact(tenant, body)).isEqualTo(70);
    assertThat(runs).hasValue(2);

    assertThat(a.call(new Bank.Balance())).isEqualTo(70);
    assertThat(b.call(new Bank.Balance())).isEqualTo(30);
    assertThat(bank.actions.stream().filter(s -> s.startsWith("withdraw")).count())
        .as("actions ran once per committed transaction")
        .isEqualTo(3);
  }

  /** A started account (no placement: no other commit can take an injected fault). */
  private ServerRef<Bank.Msg> startedAccount(String name, long balance) {
    return dgen.start(
        new Bank(bank), new Bank.Open(name, balance), StartOptions.builder(tenant).build());
  }

  @Test
  void aLockedServer_makesTheTransactionWaitItsTurn_thenFailRetryably() {
    ServerRef<Bank.Msg> a = account("a", 100);
    ServerRef<Bank.Msg> b = account("b", 0);
    a.cast(new Bank.Hold());
    awaitHolding();

    long read = dgen.transact(tenant, tx -> tx.state(a, Bank.Acct.class).balance());
    assertThat(read).as("a read needs no turn").isEqualTo(100);
    assertThatThrownBy(() -> transfer(dgen, a, b, 10, "t1"))
        .isInstanceOfSatisfying(
            ServerBusyException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(ServerBusyException.Reason.LOCKED);
              assertThat((Object) e.server()).isEqualTo(a.tuid());
            });

    AtomicInteger runs = new AtomicInteger();
    long left =
        dgen.transact(
            tenant,
            tx -> {
              if (runs.incrementAndGet() == 3) {
                bank.release.countDown(); // the lock is released while the transaction waits
              }
              return tx.call(a, new Bank.Withdraw("t2", 10));
            });
    assertThat(left).isEqualTo(90);
    assertThat(runs.get())
        .as("two attempts found it locked, then it waited its turn")
        .isGreaterThanOrEqualTo(3);
    assertThat(a.call(new Bank.Log())).containsSubsequence("held", "t2");
    assertThat(balance(b)).isZero();
  }

  @Test
  void aServerWithQueuedMessages_makesTheTransactionWait_andRunAfterThem() {
    ServerRef<Bank.Msg> a = account("a", 100);
    a.cast(new Bank.Hold());
    awaitHolding();
    a.cast(new Bank.Touch("queued-1")); // behind the lock

    assertThatThrownBy(() -> dgen.transact(tenant, tx -> tx.call(a, new Bank.Deposit("d0", 1))))
        .isInstanceOfSatisfying(
            ServerBusyException.class,
            e -> assertThat(e.reason()).isEqualTo(ServerBusyException.Reason.QUEUED));

    AtomicInteger runs = new AtomicInteger();
    dgen.transact(
        tenant,
        tx -> {
          if (runs.incrementAndGet() == 2) {
            bank.release.countDown();
          }
          return tx.call(a, new Bank.Deposit("d1", 1));
        });
    assertThat(a.call(new Bank.Log()))
        .as("FIFO with the queue: the queued cast ran first")
        .containsSubsequence("held", "queued-1", "d1")
        .doesNotContain("d0");
  }

  private void awaitHolding() {
    try {
      assertThat(bank.holding.await(1, TimeUnit.MINUTES)).isTrue();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aHostedServerWhoseBucketMovesMidTransaction_isAppliedOnce_andItsHolderSeesIt() {
    int buckets = 64; // with 8, both members' rendezvous hashing gave b none now and then
    String[] p = handOff;
    DGen a = runtime(buckets);
    a.host(KIND, () -> new Bank(bank), HostOptions.builder(a.tenant(p)).build());
    DGen b = runtime(buckets);
    b.host(KIND, () -> new Bank(bank), HostOptions.builder(b.tenant(p)).build());
    java.util.Map<UUID, Integer> held =
        SettledPlacement.await(
            () -> new DGenAdmin(backend).tenant(p).orElseThrow(),
            KIND.name(),
            buckets,
            List.of(a.memberId(), b.memberId()),
            Duration.ofSeconds(60));
    assertThat(held.get(b.memberId())).isPositive();
    // An account whose bucket b holds: a runs the transaction as a visitor; b's close moves it.
    String moving = null;
    for (int i = 0; moving == null; i++) {
      Tuple tuid = Tuple.from(KIND.name(), "m" + i);
      int bucket = new ServerKeys(a.tenant(p).subspace(), Buckets.of(buckets), tuid).bucket();
      if (b.memberId().equals(holder(p, bucket))) {
        moving = "m" + i;
      }
    }
    ServerRef<Bank.Msg> from = a.ref(a.tenant(p), KIND, moving);
    from.call(new Bank.Deposit("open", 100), CREATE);
    ServerRef<Bank.Msg> to = a.ref(a.tenant(p), KIND, "to");
    to.call(new Bank.Deposit("open", 0), CREATE);

    AtomicInteger runs = new AtomicInteger();
    String finalMoving = moving;
    long left =
        a.transact(
            a.tenant(p),
            tx -> {
              long l = tx.call(from, new Bank.Withdraw("t", 10));
              if (runs.incrementAndGet() == 1) {
                b.close(); // hands its buckets to a, mid-transaction
                // The new holder applies a message: this attempt read the state before it.
                a.ref(a.tenant(p), KIND, finalMoving).call(new Bank.Deposit("late", 5), CREATE);
              }
              tx.call(to, new Bank.Deposit("t", 10));
              return l;
            });

    assertThat(runs.get()).as("the attempt that read the old state conflicted").isGreaterThan(1);
    assertThat(left).isEqualTo(95);
    assertThat(balance(from)).isEqualTo(95);
    assertThat(balance(to)).isEqualTo(10);
    from.cast(new Bank.Touch("after")); // consumed by the holder, on its cached state
    await().atMost(BULK_WAIT).until(() -> from.call(new Bank.Log()).contains("after"));
    assertThat(from.call(new Bank.Get()))
        .isEqualTo(new Bank.Acct(95, false, 1, from.call(new Bank.Log())));
  }

  private @org.jspecify.annotations.Nullable UUID holder(String[] p, int bucket) {
    TenantAdmin admin = new DGenAdmin(backend).tenant(p).orElseThrow();
    for (TenantAdmin.Lease l : admin.leases()) {
      if (l.kind().equals(KIND.name()) && l.bucket() == bucket) {
        return l.holder();
      }
    }
    return null;
  }

  private DGen runtime(int buckets) {
    DGen d =
        DGen.builder(backend)
            .buckets(buckets)
            .leaseDuration(Duration.ofMillis(600))
            .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
            .build();
    others.add(d);
    return d;
  }

  @Test
  void theHoldersCachedState_seesAnAtomicChange() {
    ServerRef<Bank.Msg> a = account("a", 100);
    ServerRef<Bank.Msg> b = account("b", 0);
    a.cast(new Bank.Touch("warm")); // the holder caches a's state
    await().atMost(BULK_WAIT).until(() -> a.call(new Bank.Log()).contains("warm"));

    transfer(dgen, a, b, 40, "t");
    a.cast(new Bank.Touch("next")); // the holder's batch, on its cache if still valid
    await().atMost(BULK_WAIT).until(() -> a.call(new Bank.Log()).contains("next"));

    assertThat(a.call(new Bank.Get()).balance()).isEqualTo(60);
    assertThat(a.call(new Bank.Get()).touches()).isEqualTo(2);
  }

  @Test
  void limits_failClearly_andCommitNothing() {
    ServerRef<Bank.Msg> a = account("a", 100);
    assertThatThrownBy(
            () ->
                withdrawingThen(
                    a,
                    tx -> {
                      for (int i = 0; i <= Atomic.MAX_SERVERS; i++) {
                        tx.state(dgen.ref(tenant, KIND, "n" + i), Object.class);
                      }
                    }))
        .isInstanceOf(DGenException.class)
        .hasMessageContaining("at most " + Atomic.MAX_SERVERS + " servers");

    byte[] big = new byte[90_000];
    assertThatThrownBy(
            () ->
                withdrawingThen(
                    a,
                    tx -> {
                      for (int i = 0; i < 120; i++) {
                        tx.transaction().set(tenant.subspace().pack(Tuple.from("big", i)), big);
                      }
                    }))
        .isInstanceOfSatisfying(
            BackendFailureException.class,
            e ->
                assertThat(((BackendException) e.getCause()).code())
                    .isEqualTo(BackendException.TRANSACTION_TOO_LARGE));
    assertThat(balance(a)).isEqualTo(100);
  }

  /** A transaction that withdraws 1 from {@code a}, then does {@code more}. */
  private void withdrawingThen(ServerRef<Bank.Msg> a, java.util.function.Consumer<Atomic> more) {
    dgen.transact(
        tenant,
        tx -> {
          tx.call(a, new Bank.Withdraw("t", 1));
          more.accept(tx);
          return null;
        });
  }

  @Test
  void aBodyPastTheTransactionTime_failsClearly() {
    AtomicLong now = new AtomicLong(System.nanoTime());
    DGen timed = DGen.builder(backend).ticker(now::get).build();
    others.add(timed);
    Tenant t = timed.tenant(path());
    ServerRef<Bank.Msg> a =
        timed.start(new Bank(bank), new Bank.Open("timed", 100), StartOptions.builder(t).build());
    assertThatThrownBy(
            () ->
                timed.transact(
                    t,
                    tx -> {
                      tx.call(a, new Bank.Withdraw("t", 1));
                      now.addAndGet(TimeUnit.SECONDS.toNanos(5));
                      return null;
                    }))
        .isInstanceOf(TransactionTooLongException.class);
    assertThat(a.call(new Bank.Balance())).isEqualTo(100);
  }

  @Test
  void badInput_isRefusedBeforeAnythingRuns() {
    ServerRef<Bank.Msg> a = account("a", 100);
    assertThatThrownBy(() -> dgen.transact(null, tx -> null))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> dgen.transact(tenant, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> dgen.transact(tenant, tx -> tx.call(null, new Bank.Balance())))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> dgen.transact(tenant, tx -> tx.call(a, null)))
        .isInstanceOf(NullPointerException.class);

    Tenant other = dgen.tenant("test", UUID.randomUUID().toString());
    assertThatThrownBy(() -> dgen.transact(other, tx -> tx.call(a, new Bank.Withdraw("t", 1))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not of this transaction's tenant");

    DGen without = DGen.builder(backend).build();
    others.add(without);
    Tenant there = without.tenant(path());
    assertThatThrownBy(
            () ->
                without.transact(
                    there, tx -> tx.call(without.ref(there, KIND, "a"), new Bank.Balance())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("does not host the kind");
    assertThatThrownBy(() -> without.transact(tenant, tx -> null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> dgen.transact(tenant, tx -> tx.call(a, new Wrong())))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () ->
                dgen.transact(
                    tenant, tx -> tx.call(dgen.ref(tenant, KIND, "nobody"), new Bank.Balance())))
        .isInstanceOf(DGenException.class)
        .hasMessageContaining("does not exist yet");
    assertThatThrownBy(() -> dgen.transact(tenant, tx -> tx.call(a, new Bank.Lock())))
        .isInstanceOf(DGenException.class)
        .hasMessageContaining("Result.lock");
    assertThat(balance(a)).isEqualTo(100);
  }

  /** A call of another server's message type. */
  private record Wrong() implements Call<Long> {}

  /** Accounts that refuse what they cannot do, and record what they applied, in order. */
  static final class Bank implements DGenServer<Bank.Acct, Bank.Msg> {

    /** The balance, whether closed, the touches applied, and the last ids applied. */
    record Acct(long balance, boolean closed, long touches, List<String> log) {
      Acct with(String id, long amount) {
        List<String> l = new ArrayList<>(log);
        l.add(id);
        return new Acct(
            balance + amount,
            closed,
            touches,
            l.size() > 20 ? l.subList(l.size() - 20, l.size()) : l);
      }
    }

    sealed interface Msg
        permits Deposit, Withdraw, Balance, Get, Log, Close, Touch, Boom, Hold, Lock, Remind {}

    record Deposit(String id, long amount) implements Msg, Call<Long> {}

    record Withdraw(String id, long amount) implements Msg, Call<Long> {}

    record Balance() implements Msg, Call<Long> {}

    record Get() implements Msg, Call<Acct> {}

    record Log() implements Msg, Call<List<String>> {}

    record Close() implements Msg, Call<Boolean> {}

    record Touch(String id) implements Msg {}

    record Boom() implements Msg, Call<Long> {}

    /** Takes the lock; handleLocked waits for {@link Hooks#release}. */
    record Hold() implements Msg {}

    /** A call that asks for the lock. */
    record Lock() implements Msg, Call<Long> {}

    /** Schedules a {@link Touch} in an hour through the callback's own timers. */
    record Remind(String id) implements Msg, Call<String> {}

    /** A started account's name and opening balance. */
    record Open(String name, long balance) {}

    static final class Hooks {
      final List<String> actions = new java.util.concurrent.CopyOnWriteArrayList<>();
      final CountDownLatch holding = new CountDownLatch(1);
      final CountDownLatch release = new CountDownLatch(1);
    }

    private final Hooks hooks;

    Bank(Hooks hooks) {
      this.hooks = hooks;
    }

    @Override
    public InitResult<Acct> init(Object arg) {
      if (arg instanceof Open o) {
        return InitResult.ok(
            Tuple.from("started-acct", o.name()), new Acct(o.balance(), false, 0, List.of()));
      }
      return InitResult.ok(new Acct(0, false, 0, List.of()));
    }

    @Override
    public Result<Acct> handleCallTx(TxContext tx, Msg request, From from, Acct state) {
      if (request instanceof Remind r) {
        return Result.reply(r, tx.castAfter(new Touch(r.id()), Duration.ofHours(1)), state);
      }
      return handleCall(request, from, state);
    }

    @Override
    public Result<Acct> handleCall(Msg request, From from, Acct state) {
      if (request instanceof Deposit d) {
        if (state.closed()) {
          throw new TerminalException("account closed");
        }
        Acct next = state.with(d.id(), d.amount());
        return Result.reply(
            d, next.balance(), next, List.of(s -> hooks.actions.add("deposit " + d.id())));
      }
      if (request instanceof Withdraw w) {
        if (w.amount() > state.balance()) {
          throw new TerminalException("insufficient funds");
        }
        Acct next = state.with(w.id(), -w.amount());
        return Result.reply(
            w, next.balance(), next, List.of(s -> hooks.actions.add("withdraw " + w.id())));
      }
      if (request instanceof Close) {
        return Result.reply(true, new Acct(state.balance(), true, state.touches(), state.log()));
      }
      if (request instanceof Boom) {
        throw new IllegalStateException("boom");
      }
      if (request instanceof Lock) {
        return Result.lock(state);
      }
      if (request instanceof Get) {
        return Result.reply(state, state);
      }
      if (request instanceof Log) {
        return Result.reply(state.log(), state);
      }
      return Result.reply(state.balance(), state);
    }

    @Override
    public Result<Acct> handleCast(Msg message, Acct state) {
      if (message instanceof Touch t) {
        Acct next = state.with(t.id(), 0);
        return Result.noReply(
            new Acct(next.balance(), next.closed(), state.touches() + 1, next.log()));
      }
      if (message instanceof Hold) {
        return Result.lock(state);
      }
      return Result.noReply(state);
    }

    @Override
    public Result<Acct> handleLocked(DbContext db, Event<Msg> event, Acct state)
        throws InterruptedException {
      hooks.holding.countDown();
      if (!hooks.release.await(2, TimeUnit.MINUTES)) {
        throw new IllegalStateException("never released");
      }
      return Result.noReply(state.with("held", 0));
    }
  }
}

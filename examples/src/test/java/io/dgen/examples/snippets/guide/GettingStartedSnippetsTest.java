package io.dgen.examples.snippets.guide;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.CallRejectedException;
import io.dgen.DGen;
import io.dgen.HostOptions;
import io.dgen.Outbox;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.admin.ServerControl;
import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.examples.snippets.guide.Orders.Charge;
import io.dgen.examples.snippets.guide.Orders.Msg;
import io.dgen.examples.snippets.guide.Orders.Report;
import io.dgen.examples.snippets.guide.Orders.Ship;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The code of docs/getting-started.md, compiled and run on the memory backend; {@code
 * DocSnippetsTest} keeps the page equal to the regions marked here. Lines marked "hidden from the
 * docs" are left out of the page.
 */
class GettingStartedSnippetsTest {

  private final Backend backend = MemoryBackend.create();
  private final DGen dgen = DGen.builder(backend).build();
  private final Orders orders = new Orders();

  @AfterEach
  void close() {
    dgen.close();
    backend.close();
  }

  private ServerRef<Msg> startOrders() {
    return dgen.start(orders, null, StartOptions.builder(dgen.tenant("demo", "orders")).build());
  }

  @Test
  void startingAndTalkingToAServer() throws Exception {
    // snippet: gs-start
    try (Backend backend = MemoryBackend.create(); // or FdbBackend.open()
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("demo", "counter");
      ServerRef<Counter.Msg> ref =
          dgen.start(new Counter(), null, StartOptions.builder(tenant).name("counter").build());

      ref.cast(new Counter.Increment(1)); // durably queued, applied later
      ref.castAll(List.of(new Counter.Increment(2), new Counter.Increment(3))); // one transaction
      long v = ref.call(new Counter.Get()); // waits for the reply (default 5 s)
      CompletableFuture<Long> f = ref.callAsync(new Counter.Get(), Duration.ofSeconds(2));
      long now = ref.priorityCall(new Counter.Get()); // bypasses the queue
      Optional<ServerRef<Counter.Msg>> byName = dgen.whereis("counter");
      assertThat(v).isEqualTo(6); // hidden from the docs
      assertThat(f.get()).isEqualTo(6); // hidden from the docs
      assertThat(now).isEqualTo(6); // hidden from the docs
      assertThat(byName).containsSame(ref); // hidden from the docs
    }
    // end snippet
  }

  @Test
  void anAccountService() {
    // snippet: gs-account-service
    try (Backend backend = MemoryBackend.create(); // or RocksDbBackend.open(dir), FdbBackend.open()
        DGen dgen = DGen.builder(backend).build()) {
      Tenant bank = dgen.tenant("demo", "bank");
      dgen.host(Account.KIND, Account::new, HostOptions.builder(bank).build()); // every replica

      ServerRef<Account.Msg> alice = dgen.ref(bank, Account.KIND, "alice"); // anywhere, no I/O
      alice.cast(new Account.Deposit(1_000)); // durably queued; the first message creates alice
      Account.Withdrawn w = alice.call(new Account.Withdraw(300)); // waits for the typed reply
      assertThat(w).isEqualTo(new Account.Withdrawn(300, 700)); // hidden from the docs
      assertThat(alice.call(new Account.Balance())).isEqualTo(700); // hidden from the docs
    }
    // end snippet
  }

  @Test
  void aRefusedWithdrawal_reachesTheCallerAsCallRejectedException() {
    dgen.host(Account.KIND, Account::new, HostOptions.builder(dgen.tenant("demo")).build());
    ServerRef<Account.Msg> alice = dgen.ref(dgen.tenant("demo"), Account.KIND, "alice");
    alice.cast(new Account.Deposit(700));
    boolean refused = false;
    // snippet: gs-account-refusal
    try {
      alice.call(new Account.Withdraw(5_000));
    } catch (CallRejectedException e) {
      String why = e.reason(); // "insufficient funds: balance 700"; nothing was committed
      assertThat(why).isEqualTo("insufficient funds: balance 700"); // hidden from the docs
      refused = true; // hidden from the docs
    }
    // end snippet
    assertThat(refused).isTrue();
    assertThat(alice.call(new Account.Balance())).isEqualTo(700);
  }

  private byte[] audit(ServerRef<Msg> ref, String orderId) {
    return backend.run(tx -> tx.get(ref.tenant().subspace().pack(Tuple.from("audit", orderId))));
  }

  @Test
  void aCallbackWritesAKeyOfItsOwn_andActionsRunAfterTheCommit() {
    ServerRef<Msg> ref = startOrders();
    ref.cast(new Ship("o-1"));
    await().until(() -> audit(ref, "o-1") != null);
    assertThat(new String(audit(ref, "o-1"), UTF_8)).isEqualTo("shipped o-1");

    assertThat(ref.call(new Charge("o-1", 7))).isEqualTo(7);
    await() // actions run after the commit, maybe on another thread than the reply's
        .untilAsserted(
            () -> {
              assertThat(orders.mailer.sent).containsExactly("buyer: charged 7");
              assertThat(orders.metrics.charged).containsExactly(7L);
            });
  }

  @Test
  void theOutbox_queuesWithYourOwnWrites() {
    ServerRef<Msg> ref = startOrders();
    String orderId = "o-2";
    byte[] orderKey = ref.tenant().subspace().pack(Tuple.from("order", orderId));
    byte[] orderBytes = "2 pears".getBytes(UTF_8);
    // snippet: gs-outbox
    Outbox<Msg> out = ref.outbox();
    backend.run(
        tx -> {
          tx.set(orderKey, orderBytes);
          out.cast(tx, new Ship(orderId)); // queued if and only if this transaction commits
          return null;
        });
    // end snippet
    await().until(() -> audit(ref, "o-2") != null);
  }

  @Test
  void idempotencyKeys_andSubmit() {
    ServerRef<Msg> ref = startOrders();
    Outbox<Msg> out = ref.outbox();
    String orderId = "o-3";
    String month = "2030-11";
    ref.cast(new Ship(orderId), "ship-" + orderId); // hidden from the docs
    // snippet: gs-idempotency
    boolean queued = ref.cast(new Ship(orderId), "ship-" + orderId); // false: queued before
    long total = ref.call(new Charge(orderId, 40), "charge-" + orderId, Duration.ofSeconds(5));
    String callId = ref.submit(new Report(month)); // returns at once
    String report = ref.awaitReply(callId, Duration.ofSeconds(30)); // any runtime, repeatable
    backend.run(tx -> out.cast(tx, new Ship(orderId), "ship-" + orderId)); // in your transaction
    // end snippet
    assertThat(queued).isFalse();
    assertThat(total).isEqualTo(40);
    assertThat(report).isEqualTo("2030-11: 1 orders, 40");
    assertThat(ref.call(new Charge(orderId, 40), "charge-" + orderId, Duration.ofSeconds(5)))
        .isEqualTo(40);
    await().untilAsserted(() -> assertThat(orders.mailer.sent).hasSize(1));
    assertThat(orders.mailer.sent).containsExactly("buyer: charged 40"); // the call ran once
    await().until(() -> ServerControl.of(ref).queueLength() == 0);
    assertThat(ref.call(new Report(month))).isEqualTo("2030-11: 1 orders, 40");
  }

  @Test
  void timers() {
    dgen.host(Account.KIND, Account::new, HostOptions.builder(dgen.tenant("demo")).build());
    ServerRef<Account.Msg> alice = dgen.ref(dgen.tenant("demo"), Account.KIND, "alice");
    // snippet: gs-timers
    String id = alice.castAfter(new Account.Deposit(100), Duration.ofDays(30)); // in 30 days
    alice.castAt(new Account.Deposit(50), Instant.parse("2030-12-24T17:00:00Z")); // at an instant
    boolean cancelled = alice.cancelTimer(id); // true: it was pending and will never fire
    // end snippet
    assertThat(cancelled).isTrue();
    assertThat(alice.cancelTimer(id)).isFalse();
    assertThat(alice.call(new Account.Balance())).isZero();
  }
}

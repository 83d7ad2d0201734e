package io.dgen.examples;

import io.dgen.Call;
import io.dgen.CallRejectedException;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.HostOptions;
import io.dgen.InitResult;
import io.dgen.Kind;
import io.dgen.Outbox;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.TerminalException;
import io.dgen.TxContext;
import io.dgen.admin.ServerControl;
import io.dgen.backend.Backend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Bank accounts as durable servers of one kind, {@code account}, addressed by id: every runtime
 * that may run them hosts the kind ({@link DGen#host}), and a request reaches an account from
 * anywhere through a ref ({@link DGen#ref}). A transfer is a typed call on the source account: in
 * one transaction it debits the source and, through the target's {@link Outbox}, queues the credit
 * on the target. Either both happen or neither, so money is never created or lost, however many
 * transfers run at once. An overdraft is refused: the handler throws {@link TerminalException} and
 * the caller gets {@link CallRejectedException}. A post-commit action prints the receipt.
 */
public final class BankExample {

  private BankExample() {}

  /** One bank account: the server {@code ("account", id)}, created by its first message. */
  public static final class Account implements DGenServer<Account.State, Account.Msg> {

    /** The kind: its name, and the type of its messages. */
    public static final Kind<Msg> KIND = Kind.of("account", Msg.class);

    /** An account's state. */
    public record State(String id, long balance) {}

    /** What an account understands. */
    public sealed interface Msg permits Transfer, Credit, Balance {}

    /** Moves {@code amount} from this account to account {@code to} (a call). */
    public record Transfer(String transferId, String to, long amount)
        implements Msg, Call<Transferred> {}

    /** Adds money sent by another account (a cast, queued by that account's transfer). */
    public record Credit(String transferId, String from, long amount) implements Msg {}

    /** Reads the balance (a call). */
    public record Balance() implements Msg, Call<Long> {}

    /** The reply to a {@link Transfer}: the source's balance after it. */
    public record Transferred(long balance) {}

    private final DGen dgen;
    private final Map<String, Long> openingBalances;
    private final Receipts receipts;

    /**
     * Creates the behaviour; the runtime makes one per account it runs.
     *
     * @param dgen the runtime, for the refs a transfer credits through
     * @param openingBalances the bank's accounts and what each starts with
     * @param receipts where the post-commit actions print receipts
     */
    public Account(DGen dgen, Map<String, Long> openingBalances, Receipts receipts) {
      this.dgen = dgen;
      this.openingBalances = openingBalances;
      this.receipts = receipts;
    }

    /** Runs on an account's first message, with the id its ref named; refuses unknown ids. */
    @Override
    public InitResult<State> init(Object id) {
      Long opening = openingBalances.get((String) id);
      if (opening == null) {
        throw new TerminalException("no such account: " + id); // nothing is stored
      }
      return InitResult.ok(new State((String) id, opening));
    }

    @Override
    public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state) {
      if (request instanceof Balance balance) {
        return Result.reply(balance, state.balance(), state);
      }
      if (request instanceof Transfer t) {
        if (!openingBalances.containsKey(t.to())) {
          throw new TerminalException("no such account: " + t.to());
        }
        if (t.amount() <= 0 || t.amount() > state.balance()) {
          throw new TerminalException("insufficient funds: balance " + state.balance());
        }
        State next = new State(state.id(), state.balance() - t.amount());
        // The credit is queued in this very transaction: it exists if and only if the debit
        // commits.
        dgen.ref(tx.tenant(), KIND, t.to())
            .outbox()
            .cast(tx.transaction(), new Credit(t.transferId(), state.id(), t.amount()));
        return Result.reply(
            t,
            new Transferred(next.balance()),
            next,
            List.of(
                committed ->
                    receipts.print(
                        t.transferId(),
                        String.format(
                            "   receipt: %s paid %s %d, balance %d   (post-commit action)",
                            committed.id(), t.to(), t.amount(), committed.balance()))));
      }
      throw new IllegalArgumentException("unexpected call: " + request);
    }

    @Override
    public Result<State> handleCast(Msg message, State state) {
      Credit c = (Credit) message; // the only cast an account takes
      return Result.noReply(new State(state.id(), state.balance() + c.amount()));
    }
  }

  /**
   * Stands for an external receipt printer: the side effect that must happen only once the transfer
   * is committed. Also lets the demo wait until a receipt is out, so its lines stay in order.
   */
  public static final class Receipts {
    private final Map<String, CompletableFuture<Void>> printed = new ConcurrentHashMap<>();
    private final AtomicInteger count = new AtomicInteger();
    private volatile boolean quiet;

    void print(String transferId, String line) {
      if (!quiet) {
        System.out.println(line);
      }
      count.incrementAndGet();
      printed.computeIfAbsent(transferId, id -> new CompletableFuture<>()).complete(null);
    }

    void awaitPrinted(String transferId) throws Exception {
      printed.computeIfAbsent(transferId, id -> new CompletableFuture<>()).get(5, TimeUnit.SECONDS);
    }
  }

  /**
   * Runs the example on the memory backend (it prints the backend it runs on), on FoundationDB when
   * a cluster file is given ({@code --cluster-file PATH} or {@code FDB_CLUSTER_FILE}), or on the
   * embedded RocksDB backend in {@code --data-dir DIR}. It kills its accounts in tenant {@code
   * examples/bank} to start afresh: on a cluster file or a data directory it runs only with {@code
   * --yes}.
   *
   * @param args optional {@code --cluster-file PATH} or {@code --data-dir DIR}, with {@code --yes};
   *     or {@code --memory}
   * @throws Exception if the demo fails
   */
  public static void main(String[] args) throws Exception {
    try (Backend backend = Backends.openOverwriting(args, "examples/bank");
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("examples", "bank");
      Map<String, Long> openingBalances = new LinkedHashMap<>();
      openingBalances.put("alice", 100L);
      openingBalances.put("bob", 50L);
      openingBalances.put("carol", 0L);
      Receipts receipts = new Receipts();
      // Every runtime that may run accounts hosts the kind: here, this one.
      dgen.host(
          Account.KIND,
          () -> new Account(dgen, openingBalances, receipts),
          HostOptions.builder(tenant).build());
      Map<String, ServerRef<Account.Msg>> accounts = new LinkedHashMap<>();
      for (String id : openingBalances.keySet()) {
        ServerRef<Account.Msg> ref = dgen.ref(tenant, Account.KIND, id);
        ServerControl.of(ref)
            .kill("a fresh demo"); // forget earlier runs: the next message creates it anew
        accounts.put(id, ref);
      }
      System.out.println("opened:   " + balances(accounts));

      transfer(accounts, receipts, "t1", "alice", "bob", 30, "");
      transfer(accounts, receipts, "t2", "bob", "carol", 60, "   (bob has 50 + t1's 30)");
      transfer(accounts, receipts, "t3", "carol", "alice", 500, "");
      System.out.println("balances: " + balances(accounts));
      try {
        dgen.ref(tenant, Account.KIND, "dave").call(new Account.Balance());
      } catch (CallRejectedException e) {
        System.out.println("dave's balance: refused, " + e.reason() + " (init declined)");
      }

      int threads = 4;
      int perThread = 25;
      receipts.quiet = true;
      int before = receipts.count.get();
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      List<Future<Integer>> done = new ArrayList<>();
      List<String> ids = new ArrayList<>(accounts.keySet());
      for (int t = 0; t < threads; t++) {
        Random random = new Random(42 + t);
        String prefix = "c" + t + "-";
        done.add(
            pool.submit(
                () -> {
                  int ok = 0;
                  for (int i = 0; i < perThread; i++) {
                    int from = random.nextInt(ids.size());
                    int to = (from + 1 + random.nextInt(ids.size() - 1)) % ids.size();
                    try {
                      accounts
                          .get(ids.get(from))
                          .call(
                              new Account.Transfer(prefix + i, ids.get(to), 1 + random.nextInt(30)),
                              Duration.ofSeconds(10));
                      ok++;
                      receipts.awaitPrinted(prefix + i);
                    } catch (CallRejectedException refused) {
                      // an overdraft: nothing was committed, no receipt
                    }
                  }
                  return ok;
                }));
      }
      int ok = 0;
      for (Future<Integer> f : done) {
        ok += f.get();
      }
      pool.shutdown();
      int total = threads * perThread;
      System.out.printf(
          "%d concurrent transfers from %d threads: %d done, %d refused, %d receipts%n",
          total, threads, ok, total - ok, receipts.count.get() - before);
      System.out.println("balances: " + balances(accounts) + " (conserved)");
    }
  }

  private static void transfer(
      Map<String, ServerRef<Account.Msg>> accounts,
      Receipts receipts,
      String id,
      String from,
      String to,
      long amount,
      String note)
      throws Exception {
    System.out.printf("%s %-5s -> %-5s %4d%s%n", id, from, to, amount, note);
    try {
      Account.Transferred done = accounts.get(from).call(new Account.Transfer(id, to, amount));
      receipts.awaitPrinted(id);
      System.out.println("   reply:   done, balance " + done.balance());
    } catch (CallRejectedException refused) { // the handler threw TerminalException
      System.out.println("   reply:   refused, " + refused.reason());
    }
  }

  /** Reads every balance with a call: queued behind pending credits, so it sees them applied. */
  private static String balances(Map<String, ServerRef<Account.Msg>> accounts) {
    StringBuilder line = new StringBuilder();
    long total = 0;
    for (Map.Entry<String, ServerRef<Account.Msg>> e : accounts.entrySet()) {
      long balance = e.getValue().call(new Account.Balance());
      total += balance;
      line.append(String.format("%s %3d   ", e.getKey(), balance));
    }
    return line.append("total ").append(total).toString();
  }
}

package io.dgen.examples;

import io.dgen.Call;
import io.dgen.CallRejectedException;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.HostOptions;
import io.dgen.InitResult;
import io.dgen.Kind;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.TerminalException;
import io.dgen.admin.ServerControl;
import io.dgen.backend.Backend;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Transfers between bank accounts as atomic work across servers ({@link DGen#transact}): the
 * withdrawal from one account and the deposit into the other run as calls on both servers in one
 * transaction, so the money is never in neither account, not even for a moment. A transfer that the
 * target refuses (a frozen account) aborts the withdrawal too: no compensation message. Under
 * concurrent transfers, an auditor reads every account in one atomic snapshot ({@code
 * tx.state(...)}) again and again, and every snapshot holds the whole total. Compare {@link
 * BankExample}, where a transfer is a call on the source that queues the credit through the
 * target's outbox: reliable, cheaper, but not atomic.
 */
public final class AtomicTransferExample {

  private AtomicTransferExample() {}

  /** One account: the server {@code ("ledger-account", id)}, created by its first message. */
  public static final class Account implements DGenServer<Account.State, Account.Msg> {

    /** The kind: its name, and the type of its messages. */
    public static final Kind<Msg> KIND = Kind.of("ledger-account", Msg.class);

    /** An account's state: a frozen account takes no deposits. */
    public record State(String id, long balance, boolean frozen) {}

    /** What an account understands. */
    public sealed interface Msg permits Withdraw, Deposit, Balance {}

    /** Takes {@code amount} out; refused beyond the balance. Replies the balance left. */
    public record Withdraw(String transferId, long amount) implements Msg, Call<Long> {}

    /** Puts {@code amount} in; refused by a frozen account. Replies the new balance. */
    public record Deposit(String transferId, long amount) implements Msg, Call<Long> {}

    /** Reads the balance. */
    public record Balance() implements Msg, Call<Long> {}

    private final Map<String, Long> openingBalances;

    /**
     * Creates the behaviour.
     *
     * @param openingBalances the bank's accounts and what each starts with
     */
    public Account(Map<String, Long> openingBalances) {
      this.openingBalances = openingBalances;
    }

    @Override
    public InitResult<State> init(Object id) {
      Long opening = openingBalances.get((String) id);
      if (opening == null) {
        throw new TerminalException("no such account: " + id);
      }
      return InitResult.ok(new State((String) id, opening, ((String) id).startsWith("frozen")));
    }

    @Override
    public Result<State> handleCall(Msg request, From from, State state) {
      if (request instanceof Withdraw w) {
        if (w.amount() <= 0 || w.amount() > state.balance()) {
          throw new TerminalException("insufficient funds: balance " + state.balance());
        }
        State next = new State(state.id(), state.balance() - w.amount(), state.frozen());
        return Result.reply(w, next.balance(), next);
      }
      if (request instanceof Deposit d) {
        if (state.frozen()) {
          throw new TerminalException(state.id() + " is frozen");
        }
        State next = new State(state.id(), state.balance() + d.amount(), false);
        return Result.reply(d, next.balance(), next);
      }
      return Result.reply((Balance) request, state.balance(), state);
    }
  }

  /**
   * Runs the example on the memory backend, on FoundationDB when a cluster file is given ({@code
   * --cluster-file PATH} or {@code FDB_CLUSTER_FILE}), or on the embedded RocksDB backend in {@code
   * --data-dir DIR}. It kills its accounts in tenant {@code examples/atomic-bank} to start afresh:
   * on a cluster file or a data directory it runs only with {@code --yes}.
   *
   * @param args optional {@code --cluster-file PATH} or {@code --data-dir DIR}, with {@code --yes};
   *     or {@code --memory}
   * @throws Exception if the demo fails
   */
  public static void main(String[] args) throws Exception {
    try (Backend backend = Backends.openOverwriting(args, "examples/atomic-bank");
        DGen dgen = DGen.builder(backend).build()) {
      Tenant bank = dgen.tenant("examples", "atomic-bank");
      Map<String, Long> openingBalances = new LinkedHashMap<>();
      openingBalances.put("alice", 100L);
      openingBalances.put("bob", 50L);
      openingBalances.put("carol", 0L);
      openingBalances.put("frozen-dan", 10L);
      dgen.host(
          Account.KIND, () -> new Account(openingBalances), HostOptions.builder(bank).build());
      Map<String, ServerRef<Account.Msg>> accounts = new LinkedHashMap<>();
      for (String id : openingBalances.keySet()) {
        ServerRef<Account.Msg> ref = dgen.ref(bank, Account.KIND, id);
        ServerControl.of(ref).kill("a fresh demo"); // the next message creates it anew
        ref.call(new Account.Balance()); // queued: the holder creates it (init)
        accounts.put(id, ref);
      }
      System.out.println("opened:   " + snapshot(dgen, bank, accounts));

      transfer(dgen, bank, accounts, "t1", "alice", "bob", 30);
      transfer(dgen, bank, accounts, "t2", "bob", "frozen-dan", 20);
      transfer(dgen, bank, accounts, "t3", "carol", "alice", 500);
      System.out.println(
          "balances: " + snapshot(dgen, bank, accounts) + "   (t2 took nothing from bob)");

      List<String> ids = List.of("alice", "bob", "carol");
      int threads = 4;
      int perThread = 25;
      ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
      AtomicBoolean transfersDone = new AtomicBoolean();
      Future<long[]> auditor =
          pool.submit(
              () -> {
                long snapshots = 0;
                long wrong = 0;
                while (!transfersDone.get()) {
                  long total = total(dgen, bank, accounts);
                  snapshots++;
                  if (total != 160) {
                    wrong++;
                  }
                }
                return new long[] {snapshots, wrong};
              });
      List<Future<Integer>> done = new ArrayList<>();
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
                      move(
                          dgen,
                          bank,
                          accounts.get(ids.get(from)),
                          accounts.get(ids.get(to)),
                          prefix + i,
                          1 + random.nextInt(30));
                      ok++;
                    } catch (CallRejectedException overdraft) {
                      // refused: nothing was committed
                    }
                  }
                  return ok;
                }));
      }
      int ok = 0;
      for (Future<Integer> f : done) {
        ok += f.get();
      }
      transfersDone.set(true);
      long[] audit = auditor.get();
      pool.shutdown();
      int total = threads * perThread;
      System.out.printf(
          "%d concurrent transfers from %d threads: %d done, %d refused%n",
          total, threads, ok, total - ok);
      System.out.printf(
          "auditor: %d atomic snapshots of every account, %d with a total other than 160%n",
          audit[0], audit[1]);
      System.out.println("balances: " + snapshot(dgen, bank, accounts) + " (conserved)");
    }
  }

  /** Moves {@code amount} in one transaction: both calls commit, or neither does. */
  private static long move(
      DGen dgen,
      Tenant bank,
      ServerRef<Account.Msg> from,
      ServerRef<Account.Msg> to,
      String transferId,
      long amount) {
    return dgen.transact(
        bank,
        tx -> {
          tx.prefetch(from, to); // both accounts read in one round trip
          long left = tx.call(from, new Account.Withdraw(transferId, amount));
          tx.call(to, new Account.Deposit(transferId, amount)); // a refusal undoes the withdrawal
          return left;
        });
  }

  private static void transfer(
      DGen dgen,
      Tenant bank,
      Map<String, ServerRef<Account.Msg>> accounts,
      String id,
      String from,
      String to,
      long amount) {
    System.out.printf("%s %-5s -> %-10s %4d%n", id, from, to, amount);
    try {
      long left = move(dgen, bank, accounts.get(from), accounts.get(to), id, amount);
      System.out.println("   done, " + from + " has " + left);
    } catch (CallRejectedException refused) {
      System.out.println("   refused, " + refused.reason() + "; nothing was committed");
    }
  }

  /** The sum of every balance, read in one atomic transaction. */
  private static long total(DGen dgen, Tenant bank, Map<String, ServerRef<Account.Msg>> accounts) {
    return dgen.transact(
        bank,
        tx -> {
          tx.prefetch(accounts.values().toArray(ServerRef<?>[]::new));
          long sum = 0;
          for (ServerRef<Account.Msg> a : accounts.values()) {
            sum += tx.state(a, Account.State.class).balance();
          }
          return sum;
        });
  }

  /** Every balance and the total, read in one atomic transaction. */
  private static String snapshot(
      DGen dgen, Tenant bank, Map<String, ServerRef<Account.Msg>> accounts) {
    return dgen.transact(
        bank,
        tx -> {
          StringBuilder line = new StringBuilder();
          long sum = 0;
          for (Map.Entry<String, ServerRef<Account.Msg>> e : accounts.entrySet()) {
            long balance = tx.state(e.getValue(), Account.State.class).balance();
            sum += balance;
            line.append(String.format("%s %3d   ", e.getKey(), balance));
          }
          return line.append("total ").append(sum).toString();
        });
  }
}

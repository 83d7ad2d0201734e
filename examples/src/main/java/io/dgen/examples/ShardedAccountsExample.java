package io.dgen.examples;

import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.HostOptions;
import io.dgen.InitResult;
import io.dgen.Kind;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.TxContext;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.TenantAdmin;
import io.dgen.backend.Backend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;

/**
 * A service of many accounts, each a durable server addressed by id ({@link DGen#host}, {@link
 * DGen#ref}), spread over three runtimes that share one store: no account is started, each is
 * created by its first message and run by exactly one runtime, the holder of its bucket's lease.
 * Requests reach an account from any runtime through a ref, as an HTTP handler on any instance of a
 * service would. Half-way, one runtime leaves: the others take its buckets, and the money is still
 * all there.
 *
 * <p>Runs on the in-memory backend (three runtimes in this JVM), or on FoundationDB with {@code
 * --cluster-file PATH}; there, run it in several JVMs at once to see them share the accounts.
 */
public final class ShardedAccountsExample {

  private ShardedAccountsExample() {}

  /** One account; its server's tuid is {@code ("account", id)}. */
  public static final class Account implements DGenServer<Account.State, Account.Msg> {

    /** The kind: its name, and the type of its messages. */
    public static final Kind<Msg> KIND = Kind.of("account", Msg.class);

    /** An account's state. */
    public record State(long balance) {}

    /** What an account understands. */
    public sealed interface Msg permits Deposit, Transfer, Credit, Balance {}

    /** Adds money from outside (a cast). */
    public record Deposit(long amount) implements Msg {}

    /** Moves money to another account, if there is enough (a call; replies whether it did). */
    public record Transfer(long to, long amount) implements Msg, Call<Boolean> {}

    /** Money another account's transfer sent (queued through that account's outbox). */
    public record Credit(long amount) implements Msg {}

    /** Reads the balance (a call). */
    public record Balance() implements Msg, Call<Long> {}

    private final DGen dgen;
    private final Tenant tenant;

    /**
     * Creates one account's behaviour; a runtime makes one per account it runs.
     *
     * @param dgen the runtime, for the refs a transfer credits through
     * @param tenant the accounts' tenant
     */
    public Account(DGen dgen, Tenant tenant) {
      this.dgen = dgen;
      this.tenant = tenant;
    }

    @Override
    public InitResult<State> init(Object id) { // id: the Long the ref named
      return InitResult.ok(new State(0)); // the first message creates the account, empty
    }

    @Override
    public Result<State> handleCast(Msg message, State state) {
      long amount = message instanceof Deposit d ? d.amount() : ((Credit) message).amount();
      return Result.noReply(new State(state.balance() + amount));
    }

    @Override
    public Result<State> handleCallTx(TxContext tx, Msg request, From from, State state) {
      if (request instanceof Transfer t) {
        if (t.amount() > state.balance()) {
          return Result.reply(t, false, state);
        }
        // The debit and the credit's push commit together: money is never made or lost.
        ServerRef<Msg> target = dgen.ref(tenant, KIND, t.to());
        target.outbox().cast(tx.transaction(), new Credit(t.amount()));
        return Result.reply(t, true, new State(state.balance() - t.amount()));
      }
      if (request instanceof Balance b) {
        return Result.reply(b, state.balance(), state);
      }
      throw new IllegalArgumentException("unexpected call: " + request);
    }
  }

  /** A request handler, as it would sit behind an HTTP endpoint on any instance of the service. */
  static boolean transfer(DGen via, Tenant tenant, long from, long to, long amount) {
    ServerRef<Account.Msg> account = via.ref(tenant, Account.KIND, from);
    return account.call(new Account.Transfer(to, amount), Duration.ofSeconds(30));
  }

  static long balance(DGen via, Tenant tenant, long id) {
    ServerRef<Account.Msg> account = via.ref(tenant, Account.KIND, id);
    return account.call(new Account.Balance(), Duration.ofSeconds(30));
  }

  /**
   * Runs the example.
   *
   * @param args optional {@code --cluster-file PATH}, or {@code --memory}
   * @throws Exception if the demo fails
   */
  public static void main(String[] args) throws Exception {
    int accounts = 300;
    String run = UUID.randomUUID().toString().substring(0, 8);
    try (Backend backend = Backends.open(args, null)) {
      List<DGen> runtimes = new ArrayList<>();
      List<Tenant> tenants = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        DGen dgen = DGen.builder(backend).buckets(256).build();
        Tenant tenant = dgen.tenant("examples", "sharded-accounts", run);
        dgen.host(
            Account.KIND,
            () -> new Account(dgen, tenant),
            HostOptions.builder(tenant).consumeK(16).build());
        runtimes.add(dgen);
        tenants.add(tenant);
      }
      TenantAdmin admin =
          new DGenAdmin(backend).tenant("examples", "sharded-accounts", run).orElseThrow();
      System.out.printf("three runtimes host kind \"account\" over %d buckets%n", 256);
      awaitSpread(admin, runtimes, 3);
      System.out.println("buckets held:  " + held(admin, runtimes));

      for (long id = 0; id < accounts; id++) { // each account is created by its first message
        DGen via = runtimes.get((int) (id % 3));
        via.ref(tenants.get((int) (id % 3)), Account.KIND, id).cast(new Account.Deposit(100));
      }
      System.out.printf(
          "opened %d accounts with 100 each through refs in all three runtimes%n", accounts);

      int moved = transfers(runtimes, tenants, accounts, 600, 1);
      System.out.printf(
          "600 concurrent transfers: %d done, %d refused (not enough money)%n", moved, 600 - moved);

      System.out.println("runtime 2 leaves; the others take its buckets at once");
      runtimes.get(2).close();
      List<DGen> left = runtimes.subList(0, 2);
      awaitSpread(admin, left, 2);
      System.out.println("buckets held:  " + held(admin, runtimes));
      moved = transfers(left, tenants, accounts, 400, 2);
      System.out.printf("400 more transfers through the two left: %d done%n", moved);

      long total = 0;
      for (long id = 0; id < accounts; id++) {
        total += balance(left.get(0), tenants.get(0), id);
      }
      System.out.printf(
          "total across %d accounts: %d (conserved: %s)%n",
          accounts, total, total == 100L * accounts);
      for (DGen d : left) {
        d.close();
      }
    }
  }

  private static int transfers(
      List<DGen> via, List<Tenant> tenants, int accounts, int count, long seed) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(6);
    try {
      List<Future<Boolean>> done = new ArrayList<>();
      Random random = new Random(seed);
      for (int i = 0; i < count; i++) {
        int r = random.nextInt(via.size());
        long from = random.nextInt(accounts);
        long to = (from + 1 + random.nextInt(accounts - 1)) % accounts;
        long amount = 1 + random.nextInt(60);
        done.add(pool.submit(() -> transfer(via.get(r), tenants.get(r), from, to, amount)));
      }
      int ok = 0;
      for (Future<Boolean> f : done) {
        ok += f.get() ? 1 : 0;
      }
      return ok;
    } finally {
      pool.shutdown();
    }
  }

  /**
   * Waits (a demo's pacing: the placement settles within seconds) until every bucket is held and
   * each of the {@code members} runtimes holds at least 70 % of a fair share: hand-offs move at
   * most a tenth of the buckets a second, so a runtime's share arrives over a few rounds.
   */
  private static void awaitSpread(TenantAdmin admin, List<DGen> runtimes, int members)
      throws InterruptedException {
    for (int i = 0; i < 1200; i++) {
      Map<Object, Long> byHolder =
          admin.leases().stream()
              .filter(l -> l.holder() != null)
              .collect(Collectors.groupingBy(TenantAdmin.Lease::holder, Collectors.counting()));
      long held = byHolder.values().stream().mapToLong(Long::longValue).sum();
      if (held == 256
          && byHolder.size() == members
          && byHolder.values().stream().allMatch(n -> n >= 0.7 * 256 / members)) {
        return;
      }
      Thread.sleep(50);
    }
  }

  /** How many buckets each runtime holds, by the leases in the store. */
  private static String held(TenantAdmin admin, List<DGen> runtimes) {
    Map<String, Long> byRuntime =
        admin.leases().stream()
            .collect(
                Collectors.groupingBy(
                    l -> {
                      for (int i = 0; i < runtimes.size(); i++) {
                        if (runtimes.get(i).memberId().equals(l.holder())) {
                          return "runtime " + i;
                        }
                      }
                      return "none";
                    },
                    TreeMap::new,
                    Collectors.counting()));
    return byRuntime.toString();
  }
}

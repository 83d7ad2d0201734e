package io.dgen.examples;

import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.admin.ServerControl;
import io.dgen.backend.Backend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * An HTTP-style order endpoint that clients may retry safely. Each request carries an {@code
 * Idempotency-Key}; the handler passes it to {@link ServerRef#call(Call, String, Duration)}, so a
 * retried request — after a dropped response, from another node, or many at once — returns the
 * first request's receipt and charges once. A slow report is {@link ServerRef#submit submitted}:
 * the endpoint answers "202 Accepted" with a call id at once, and a later request, even to a
 * restarted endpoint, picks up the result with {@link ServerRef#awaitReply}.
 */
public final class IdempotentOrderExample {

  private IdempotentOrderExample() {}

  /** Charges orders and numbers their receipts. */
  public static final class Orders implements DGenServer<Orders.State, Orders.Msg> {

    /** Receipts issued so far and the total charged. */
    public record State(long receipts, long charged) {}

    /** What the orders server understands. */
    public sealed interface Msg permits Place, Report {}

    /** Places an order: charges {@code cents} and replies a receipt (a call). */
    public record Place(String customer, long cents) implements Msg, Call<String> {}

    /** Replies a summary of everything charged (a call). */
    public record Report() implements Msg, Call<String> {}

    @Override
    public InitResult<State> init(Object arg) {
      return InitResult.ok(new State(0, 0));
    }

    @Override
    public Result<State> handleCall(Msg request, From from, State state) {
      if (request instanceof Place p) {
        State next = new State(state.receipts() + 1, state.charged() + p.cents());
        return Result.reply(
            p, "receipt #" + next.receipts() + ": " + p.customer() + " charged " + p.cents(), next);
      }
      if (request instanceof Report r) {
        return Result.reply(
            r, "report: " + state.receipts() + " orders, " + state.charged() + " charged", state);
      }
      throw new IllegalArgumentException("unexpected call: " + request);
    }
  }

  /** A request as an HTTP framework would hand it over: a header and a body. */
  record Request(String idempotencyKey, String customer, long cents) {}

  /** The endpoint: one handler per request, on any thread, in any process. */
  static final class Endpoint {
    private final ServerRef<Orders.Msg> orders;

    Endpoint(ServerRef<Orders.Msg> orders) {
      this.orders = orders;
    }

    /** POST /orders: runs once per Idempotency-Key, however often the client retries. */
    String postOrder(Request r) {
      String receipt =
          orders.call(
              new Orders.Place(r.customer(), r.cents()),
              "order:" + r.idempotencyKey(),
              Duration.ofSeconds(10));
      return "201 " + receipt;
    }

    /** POST /reports: queued; answers at once with where to fetch the result. */
    String postReport() {
      return "202 /calls/" + orders.submit(new Orders.Report());
    }

    /** GET /calls/{id}: the submitted call's reply, as often as asked, from any process. */
    String getCall(String path) {
      String id = path.substring("202 /calls/".length());
      return "200 " + orders.<String>awaitReply(id, Duration.ofSeconds(10));
    }
  }

  /**
   * Runs the example on the memory backend (it prints the backend it runs on), on FoundationDB when
   * a cluster file is given ({@code --cluster-file PATH} or {@code FDB_CLUSTER_FILE}), or on the
   * embedded RocksDB backend in {@code --data-dir DIR}. It kills its servers in tenant {@code
   * examples/idempotent-orders}: on a cluster file or a data directory it runs only with {@code
   * --yes}.
   *
   * @param args optional {@code --cluster-file PATH} or {@code --data-dir DIR}, with {@code --yes};
   *     or {@code --memory}
   * @throws Exception if the demo fails
   */
  public static void main(String[] args) throws Exception {
    try (Backend backend = Backends.openOverwriting(args, "examples/idempotent-orders")) {
      String location;
      try (DGen node1 = DGen.builder(backend).build()) {
        Endpoint api = new Endpoint(start(node1, true));
        Request first = new Request("7f3c-a1", "alice", 4_000);
        System.out.println("POST /orders key=7f3c-a1  -> " + api.postOrder(first));
        System.out.println("  (the response was lost; the client retries with the same key)");
        System.out.println("POST /orders key=7f3c-a1  -> " + api.postOrder(first));

        Request second = new Request("9b2e-c4", "bob", 2_500);
        ExecutorService clients = Executors.newFixedThreadPool(4);
        List<Future<String>> retries = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
          retries.add(clients.submit(() -> api.postOrder(second)));
        }
        TreeSet<String> answers = new TreeSet<>();
        for (Future<String> f : retries) {
          answers.add(f.get());
        }
        clients.shutdown();
        System.out.println("4 concurrent retries of key=9b2e-c4 -> " + answers);

        location = api.postReport();
        System.out.println("POST /reports             -> " + location);
      }
      System.out.println("  (node1 shut down; node2 serves the next requests)");
      try (DGen node2 = DGen.builder(backend).build()) {
        Endpoint api = new Endpoint(start(node2, false));
        System.out.println("GET " + location.substring(4) + " -> " + api.getCall(location));
        System.out.println("GET again                 -> " + api.getCall(location));
        System.out.println(
            "POST /orders key=7f3c-a1  -> "
                + api.postOrder(new Request("7f3c-a1", "alice", 4_000))
                + "   (still charged once)");
      }
    }
  }

  private static ServerRef<Orders.Msg> start(DGen dgen, boolean fresh) {
    StartOptions options =
        StartOptions.builder(dgen.tenant("examples", "idempotent-orders")).build();
    if (fresh) {
      ServerControl.of(dgen.start(new Orders(), null, options))
          .kill("a fresh demo"); // forget earlier runs
    }
    return dgen.start(new Orders(), null, options);
  }
}

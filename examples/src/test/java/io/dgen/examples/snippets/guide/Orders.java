package io.dgen.examples.snippets.guide;

import static java.nio.charset.StandardCharsets.UTF_8;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.Call;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.TxContext;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/** The orders server of getting-started's snippets: a key of its own, actions, keyed requests. */
public final class Orders implements DGenServer<Orders.State, Orders.Msg> {

  /** Orders shipped and money charged, per order. */
  public record State(List<String> shipped, Map<String, Long> charged) {
    State ship(String orderId) {
      List<String> s = new ArrayList<>(shipped);
      s.add(orderId);
      return new State(List.copyOf(s), charged);
    }

    State charge(String orderId, long amount) {
      Map<String, Long> c = new HashMap<>(charged);
      c.merge(orderId, amount, Long::sum);
      return new State(shipped, Map.copyOf(c));
    }

    long total() {
      return charged.values().stream().mapToLong(Long::longValue).sum();
    }
  }

  public sealed interface Msg permits Ship, Charge, Report {}

  public record Ship(String orderId) implements Msg {}

  public record Charge(String orderId, long amount) implements Msg, Call<Long> {}

  public record Report(String month) implements Msg, Call<String> {}

  /** Stands in for an e-mail client: records what it was asked to send. */
  public static final class Mailer {
    final List<String> sent = new CopyOnWriteArrayList<>();

    void send(String to, String text) {
      sent.add(to + ": " + text);
    }
  }

  /** Stands in for a metrics client. */
  public static final class Metrics {
    final List<Long> charged = new CopyOnWriteArrayList<>();

    void record(long total) {
      charged.add(total);
    }
  }

  final Mailer mailer = new Mailer();
  final Metrics metrics = new Metrics();

  @Override
  public InitResult<State> init(Object arg) {
    return InitResult.ok(new State(List.of(), Map.of()));
  }

  // snippet: gs-tx
  @Override
  public Result<State> handleCastTx(TxContext tx, Msg m, State s) {
    Ship ship = (Ship) m; // the only cast this server takes
    byte[] audit = ("shipped " + ship.orderId()).getBytes(UTF_8);
    tx.transaction().set(tx.tenant().subspace().pack(Tuple.from("audit", ship.orderId())), audit);
    return Result.noReply(s.ship(ship.orderId()));
  }

  // end snippet

  @Override
  public Result<State> handleCall(Msg m, From from, State s) {
    if (m instanceof Charge c) {
      State next = s.charge(c.orderId(), c.amount());
      // snippet: gs-actions
      return Result.reply(
          c,
          next.total(),
          next,
          List.of(
              committed -> mailer.send("buyer", "charged " + c.amount()), // after the commit
              committed -> metrics.record(committed.total()))); // with the committed state
      // end snippet
    }
    if (m instanceof Report r) {
      return Result.reply(r, r.month() + ": " + s.charged().size() + " orders, " + s.total(), s);
    }
    throw new IllegalArgumentException("not a call: " + m);
  }
}

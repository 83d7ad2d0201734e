package io.dgen.cli;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGenServer;
import io.dgen.DbContext;
import io.dgen.Event;
import io.dgen.InitResult;
import io.dgen.Result;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.jspecify.annotations.Nullable;

/** A small shop: adds items, fails on request, holds the lock until its gate opens. */
final class Shop implements DGenServer<Shop.State, Shop.Msg> {

  record State(long total, List<String> items) {}

  sealed interface Msg {}

  record AddItem(String name, long price) implements Msg {}

  record Fail(String why) implements Msg {}

  record Hold(String id) implements Msg {}

  private final CountDownLatch entered;
  private final CountDownLatch gate;

  Shop(CountDownLatch entered, CountDownLatch gate) {
    this.entered = entered;
    this.gate = gate;
  }

  @Override
  public InitResult<State> init(@Nullable Object arg) {
    return InitResult.ok((Tuple) arg, new State(0, List.of()));
  }

  @Override
  public Result<State> handleCast(Msg message, State state) {
    if (message instanceof AddItem a) {
      List<String> items = new ArrayList<>(state.items());
      items.add(a.name());
      return Result.noReply(new State(state.total() + a.price(), items));
    }
    if (message instanceof Fail f) {
      throw new IllegalStateException(f.why());
    }
    return Result.lock(state);
  }

  @Override
  public Result<State> handleLocked(DbContext db, Event<Msg> event, State state)
      throws InterruptedException {
    entered.countDown();
    gate.await();
    return Result.noReply(state);
  }
}

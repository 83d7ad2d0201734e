package io.dgen.backend.fdb;

import com.apple.foundationdb.Database;
import com.apple.foundationdb.FDBException;
import com.apple.foundationdb.ReadTransaction;
import com.apple.foundationdb.Transaction;
import com.apple.foundationdb.async.AsyncIterable;
import io.dgen.backend.BackendException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Scriptable stand-ins for fdb-java's {@link Database} and {@link Transaction} interfaces, built
 * with {@link Proxy}: they record every call and answer from a script. They let the adapter's
 * mapping and retry loop be tested without the native client. Their {@code onError} follows
 * FoundationDB's rule (retryable codes give a fresh transaction, others fail with the same error)
 * unless a test scripts it otherwise.
 */
final class FakeFdb {

  /** One recorded call. */
  record Call(String method, List<@Nullable Object> args) {
    Object arg(int i) {
      return args.get(i);
    }
  }

  /** A fake transaction: its calls, and the answers to give. */
  static final class FakeTransaction implements InvocationHandler {
    final List<Call> calls = Collections.synchronizedList(new ArrayList<>());
    final Map<String, Function<Object[], Object>> answers = new HashMap<>();
    final FakeDatabase database;
    final Transaction proxy;
    final ReadTransaction snapshotProxy;

    FakeTransaction(FakeDatabase database) {
      this.database = database;
      this.proxy =
          (Transaction)
              Proxy.newProxyInstance(
                  Transaction.class.getClassLoader(), new Class<?>[] {Transaction.class}, this);
      this.snapshotProxy =
          (ReadTransaction)
              Proxy.newProxyInstance(
                  ReadTransaction.class.getClassLoader(),
                  new Class<?>[] {ReadTransaction.class},
                  (p, method, args) -> invokeAs("snapshot." + method.getName(), method, args));
    }

    FakeTransaction answer(String method, Function<Object[], Object> answer) {
      answers.put(method, answer);
      return this;
    }

    List<String> methods() {
      synchronized (calls) {
        return calls.stream().map(Call::method).toList();
      }
    }

    Call last(String method) {
      synchronized (calls) {
        for (int i = calls.size() - 1; i >= 0; i--) {
          if (calls.get(i).method().equals(method)) {
            return calls.get(i);
          }
        }
      }
      throw new AssertionError("no call of " + method + " in " + methods());
    }

    @Override
    public @Nullable Object invoke(Object p, Method method, Object @Nullable [] args) {
      String name = method.getName();
      if (name.equals("snapshot")) {
        return snapshotProxy;
      }
      if (name.equals("onError")) {
        calls.add(new Call(name, args == null ? List.of() : List.of(args)));
        return database.onError(this, (Throwable) args[0]);
      }
      return invokeAs(name, method, args);
    }

    private @Nullable Object invokeAs(String name, Method method, Object @Nullable [] args) {
      Object[] a = args == null ? new Object[0] : args;
      calls.add(new Call(name, java.util.Arrays.asList(a)));
      Function<Object[], Object> answer = answers.get(name);
      if (answer != null) {
        return answer.apply(a);
      }
      if (name.equals("isSnapshot")) {
        return false;
      }
      if (name.endsWith("isSnapshot")) {
        return true;
      }
      Class<?> type = method.getReturnType();
      if (type == CompletableFuture.class) {
        return CompletableFuture.completedFuture(null);
      }
      if (type == boolean.class) {
        return false;
      }
      if (type == AsyncIterable.class) {
        return rows(List.of());
      }
      return null;
    }
  }

  /** A fake database handing out scripted transactions, oldest first. */
  static final class FakeDatabase implements InvocationHandler {
    final Deque<FakeTransaction> scripted = new ArrayDeque<>();
    final List<FakeTransaction> created = Collections.synchronizedList(new ArrayList<>());
    final Database proxy =
        (Database)
            Proxy.newProxyInstance(
                Database.class.getClassLoader(), new Class<?>[] {Database.class}, this);
    int closes;
    @Nullable Function<FDBException, CompletableFuture<Transaction>> onErrorScript;

    /** Scripts the next transaction handed out (by createTransaction or onError). */
    FakeTransaction next() {
      FakeTransaction tx = new FakeTransaction(this);
      scripted.add(tx);
      return tx;
    }

    FakeTransaction created(int i) {
      return created.get(i);
    }

    private FakeTransaction take() {
      FakeTransaction tx = scripted.isEmpty() ? new FakeTransaction(this) : scripted.poll();
      created.add(tx);
      return tx;
    }

    CompletableFuture<Transaction> onError(FakeTransaction from, Throwable e) {
      if (!(e instanceof FDBException fdb)) {
        return CompletableFuture.failedFuture(e);
      }
      if (onErrorScript != null) {
        return onErrorScript.apply(fdb);
      }
      if (BackendException.isRetryable(fdb.getCode())) {
        return CompletableFuture.completedFuture(take().proxy);
      }
      return CompletableFuture.failedFuture(fdb);
    }

    @Override
    public @Nullable Object invoke(Object p, Method method, Object @Nullable [] args) {
      switch (method.getName()) {
        case "createTransaction":
          return take().proxy;
        case "close":
          closes++;
          return null;
        case "toString":
          return "FakeDatabase";
        default:
          throw new UnsupportedOperationException(method.getName());
      }
    }
  }

  /** An {@link AsyncIterable} whose {@code asList()} answers {@code rows}. */
  static AsyncIterable<com.apple.foundationdb.KeyValue> rows(
      List<com.apple.foundationdb.KeyValue> rows) {
    return rows(CompletableFuture.completedFuture(rows));
  }

  /** An {@link AsyncIterable} whose {@code asList()} answers {@code future}. */
  @SuppressWarnings("unchecked")
  static AsyncIterable<com.apple.foundationdb.KeyValue> rows(
      CompletableFuture<List<com.apple.foundationdb.KeyValue>> future) {
    return (AsyncIterable<com.apple.foundationdb.KeyValue>)
        Proxy.newProxyInstance(
            AsyncIterable.class.getClassLoader(),
            new Class<?>[] {AsyncIterable.class},
            (p, method, args) -> {
              if (method.getName().equals("asList")) {
                return future;
              }
              throw new UnsupportedOperationException(method.getName());
            });
  }

  private FakeFdb() {}
}

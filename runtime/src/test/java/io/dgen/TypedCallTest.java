package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.admin.ServerControl;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Typed calls ({@link Call}): a reply is decoded as the type its request names, with no allowed
 * types; a call is never sent as a cast; a reply of another type fails before the commit; and a
 * wrong reply type does not compile.
 */
class TypedCallTest extends RuntimeTestBase {

  /** Not in the message type's hierarchy nor allowed: named only by the {@link Call}s below. */
  record Withdrawn(long amount, long balance) {}

  record Line(String what, long amount) {}

  sealed interface AccountMsg permits Deposit, Withdraw, Statement, Balance, Misreply {}

  record Deposit(long amount) implements AccountMsg {}

  record Withdraw(long amount) implements AccountMsg, Call<Withdrawn> {}

  record Statement() implements AccountMsg, Call<List<Line>> {}

  record Balance() implements AccountMsg, Call<Long> {}

  /** Answered, by the untyped reply, with a string where a {@link Withdrawn} is expected. */
  record Misreply() implements AccountMsg, Call<Withdrawn> {}

  record Account(long balance, List<Line> lines) {}

  static final class AccountServer implements DGenServer<Account, AccountMsg> {
    @Override
    public InitResult<Account> init(@Nullable Object arg) {
      return InitResult.ok(new Account(0, List.of()));
    }

    @Override
    public Result<Account> handleCast(AccountMsg message, Account state) {
      Deposit d = (Deposit) message;
      return Result.noReply(with(state, "deposit", d.amount()));
    }

    @Override
    public Result<Account> handleCall(AccountMsg request, From from, Account state) {
      if (request instanceof Withdraw w) {
        Account next = with(state, "withdraw", -w.amount());
        return Result.reply(w, new Withdrawn(w.amount(), next.balance()), next);
      }
      if (request instanceof Statement s) {
        return Result.reply(s, state.lines(), state);
      }
      if (request instanceof Balance b) {
        return Result.reply(b, state.balance(), state);
      }
      if (request instanceof Misreply) {
        return Result.reply((Object) "not a Withdrawn", with(state, "mis", 1));
      }
      throw new IllegalArgumentException("a deposit is a cast");
    }

    private static Account with(Account state, String what, long amount) {
      List<Line> lines = new ArrayList<>(state.lines());
      lines.add(new Line(what, amount));
      return new Account(state.balance() + amount, lines);
    }
  }

  private ServerRef<AccountMsg> account(int consumeK) {
    return dgen.start(
        new AccountServer(), null, StartOptions.builder(tenant).consumeK(consumeK).build());
  }

  @ParameterizedTest(name = "consumeK={0}")
  @ValueSource(ints = {1, 3}) // 1: inline where the queue is empty; 3: queued
  void aCallsReply_isDecodedAsTheTypeItsRequestNames_withoutAllowTypes(int consumeK) {
    ServerRef<AccountMsg> account = account(consumeK);
    account.cast(new Deposit(10));

    Withdrawn w = account.call(new Withdraw(3));
    List<Line> lines = account.call(new Statement(), Duration.ofSeconds(30));
    long balance = account.priorityCall(new Balance());
    Withdrawn keyed = account.call(new Withdraw(2), "w-2", Duration.ofSeconds(30));
    Withdrawn again = account.call(new Withdraw(2), "w-2", Duration.ofSeconds(30));

    assertThat(w).isEqualTo(new Withdrawn(3, 7));
    assertThat(lines)
        .as("a generic reply type: its elements decoded as Line, not as maps")
        .containsExactly(new Line("deposit", 10), new Line("withdraw", -3));
    assertThat(balance).isEqualTo(7);
    assertThat(again).as("the kept reply of the first keyed call").isEqualTo(keyed);
    assertThat(keyed).isEqualTo(new Withdrawn(2, 5));
    assertThat(
            account.<Withdrawn>awaitReply(account.submit(new Withdraw(1)), Duration.ofMinutes(1)))
        .as("a reply awaited by id, decoded by its stored type name: allowed as a Call names it")
        .isEqualTo(new Withdrawn(1, 4));
  }

  @Test
  void aCallSentAsACast_isRefusedInEveryForm_andNothingIsWritten() throws Exception {
    ServerRef<AccountMsg> account = account(1);
    account.call(new Balance()); // the server exists
    Withdraw call = new Withdraw(1);
    List<Runnable> casts =
        List.of(
            () -> account.cast(call),
            () -> account.castAsync(call),
            () -> account.castAll(List.of(new Deposit(1), call)),
            () -> account.cast(call, "key"),
            () -> account.castAfter(call, Duration.ofMinutes(1)),
            () -> account.castAt(call, Instant.now().plusSeconds(60)),
            () -> account.priorityCast(call),
            () ->
                backend.run(
                    tx -> {
                      account.outbox().cast(tx, call);
                      return null;
                    }),
            () ->
                backend.run(
                    tx -> {
                      account.outbox().castAll(tx, List.of(call));
                      return null;
                    }));
    for (Runnable cast : casts) {
      assertThatThrownBy(cast::run)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(Withdraw.class.getName())
          .hasMessageContaining("is a Call");
    }
    assertThat(ServerControl.of(account).queueLength()).isZero();
    assertThat(account.call(new Statement())).as("nothing was applied").isEmpty();
    assertThat(account.call(new Withdraw(0), Duration.ofSeconds(30)))
        .isEqualTo(new Withdrawn(0, 0));
  }

  @ParameterizedTest(name = "consumeK={0}")
  @ValueSource(ints = {1, 3})
  void aReplyOfAnotherTypeThanTheCallNames_failsTheCallbackBeforeItCommits(int consumeK) {
    ServerRef<AccountMsg> account =
        dgen.start(
            new AccountServer(),
            null,
            StartOptions.builder(tenant).consumeK(consumeK).deadLetterThreshold(1).build());

    assertThatThrownBy(() -> account.priorityCall(new Misreply()))
        .isInstanceOf(CallbackException.class)
        .cause()
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("replied a java.lang.String to a " + Misreply.class.getName());
    assertThatThrownBy(() -> account.call(new Misreply(), Duration.ofSeconds(30)))
        .isInstanceOf(DGenException.class)
        .satisfies(
            e -> assertThat(e).isInstanceOfAny(CallbackException.class, DeadLetterException.class));
    org.awaitility.Awaitility.await()
        .atMost(30, TimeUnit.SECONDS)
        .until(() -> ServerControl.of(account).queueLength() == 0);
    assertThat(account.call(new Statement()))
        .as("the state change of the callbacks that misreplied was never committed")
        .isEmpty();
  }

  @Test
  void theTypedReplyFactory_refusesAReplyOfAnotherType_throughRawTypes() {
    @SuppressWarnings({"unchecked", "rawtypes"})
    Call<Object> raw = (Call) new Balance();
    assertThatThrownBy(() -> Result.reply(raw, "a string", new Account(0, List.of())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Call<java.lang.Long>");
    assertThat(Result.reply(new Balance(), null, new Account(0, List.of())).reply())
        .as("null is a reply of any type")
        .isNull();
  }

  @Test
  void aReplyOfTheWrongType_andACallOfAMessageThatIsNotACall_doNotCompile() throws Exception {
    String server =
        """
        import io.dgen.*;
        import java.time.Duration;
        class Client {
          sealed interface Msg permits Balance, Deposit {}
          record Balance() implements Msg, Call<Long> {}
          record Deposit(long n) implements Msg {}
          static void use(ServerRef<Msg> ref) {
            %s
          }
        }
        """;
    assertThat(compile(server.formatted("long ok = ref.call(new Balance());"))).isEmpty();
    assertThat(compile(server.formatted("String s = ref.call(new Balance());")))
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .contains("incompatible types");
    assertThat(compile(server.formatted("String s = ref.priorityCall(new Balance());")))
        .isNotEmpty();
    assertThat(compile(server.formatted("ref.call(new Deposit(1));")))
        .as("a message that is not a Call has no reply to wait for")
        .isNotEmpty();
    assertThat(
            compile(
                server.formatted(
                    "Result<String> r = Result.reply(new Balance(), \"not a long\", \"s\");")))
        .isNotEmpty();
  }

  /** Compiles {@code source} against the test's class path; returns its errors. */
  private static List<String> compile(String source) throws java.io.IOException {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    JavaFileObject file =
        new SimpleJavaFileObject(URI.create("string:///Client.java"), JavaFileObject.Kind.SOURCE) {
          @Override
          public CharSequence getCharContent(boolean ignoreEncodingErrors) {
            return source;
          }
        };
    List<String> options =
        List.of(
            "-proc:none",
            "-d",
            java.nio.file.Files.createTempDirectory("typed-call").toString(),
            "-classpath",
            System.getProperty("java.class.path"));
    javac.getTask(null, null, diagnostics, options, null, List.of(file)).call();
    return diagnostics.getDiagnostics().stream()
        .filter(d -> d.getKind() == Diagnostic.Kind.ERROR)
        .map(d -> d.getMessage(Locale.ROOT))
        .toList();
  }
}

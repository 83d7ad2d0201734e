package io.dgen;

/**
 * A request that expects a reply of type {@code R}: a message of a server's message type that is
 * sent with {@link ServerRef#call(Call)} and answered with {@link Result#reply(Call, Object,
 * Object)}.
 *
 * <pre>{@code
 * sealed interface AccountMsg permits Deposit, Withdraw, Balance {}
 * record Deposit(long amount) implements AccountMsg {}                        // a cast
 * record Withdraw(long amount) implements AccountMsg, Call<Withdrawn> {}      // a call
 * record Balance() implements AccountMsg, Call<Long> {}
 *
 * Withdrawn w = account.call(new Withdraw(5));   // String s = account.call(new Withdraw(5)) does not compile
 * }</pre>
 *
 * <p>The reply type is part of the request's class, so the runtime knows it on both sides:
 *
 * <ul>
 *   <li>a caller decodes the reply as {@code R} whichever runtime it runs in, and a reply type that
 *       a {@code Call} of the server's message type names needs no {@link
 *       ServerOptions.Builder#allowTypes};
 *   <li>a handler that replies something else (through raw types) fails before its transaction
 *       commits, as a callback that throws does;
 *   <li>a {@code Call} sent with {@link ServerRef#cast} (or any other cast form) is refused with
 *       {@link IllegalArgumentException} before anything is written: its reply would be dropped.
 * </ul>
 *
 * <p>{@code R} must be a concrete type the request's class fixes ({@code Call<Long>}, {@code
 * Call<List<Item>>}). A request class generic in its reply ({@code record Get<T>() implements
 * Call<T>}) works too, but its reply is decoded by its stored type name, as a reply of {@link
 * ServerRef#call(Object, Class, java.time.Duration)} without a class would be.
 *
 * @param <R> the reply type
 */
public interface Call<R> {}

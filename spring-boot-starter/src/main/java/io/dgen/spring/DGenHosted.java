package io.dgen.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Hosts a {@link io.dgen.DGenServer} bean's kind in the application's {@link io.dgen.DGen} at
 * startup: {@code dgen.host(kind, () -> the bean, options)}. Servers of the kind are then addressed
 * by id from anywhere with {@code dgen.ref(tenant, kind, tuid)}; see {@code docs/scale-out.md}.
 *
 * <pre>{@code
 * @Component
 * @DGenHosted(kind = "account", tenant = "bank", consumeK = 16, idleTimeout = "10m")
 * class Account implements DGenServer<Account.State, Account.Msg> { ... }
 * }</pre>
 *
 * <p>Put it on a bean's class, or on the {@code @Bean} method that makes it. The runtime asks for a
 * behaviour instance per loaded server (and per ref made in this application): the starter then
 * asks the bean factory for the bean, so a {@code @Scope("prototype")} bean gives each server its
 * own instance while a singleton (the default scope) is shared by every server of the kind and
 * called from many threads at once. A shared behaviour must therefore be stateless, as behaviours
 * should be anyway: a server's state is its durable state, never a field.
 *
 * <p>If the bean's class declares a {@code public static final} {@link io.dgen.Kind} constant of
 * the annotation's kind name, the kind is hosted by it ({@code dgen.host(Kind, ...)}): its servers'
 * {@code init} gets a plain id, a {@code String} or {@code Long}, and every message is checked
 * against the kind's message type. Without one, it is hosted by name and {@code init} gets a {@code
 * Tuple}. See {@code DGen.host(Kind, Supplier, HostOptions)}.
 *
 * <pre>{@code
 * @Component
 * @DGenHosted(kind = "account", tenant = "bank")
 * class Account implements DGenServer<Account.State, Account.Msg> {
 *   public static final Kind<Msg> KIND = Kind.of("account", Msg.class); // hosted by it
 *   ...
 * }
 * }</pre>
 *
 * <p>Every string attribute may use property placeholders ({@code "${bank.idle:10m}"}). Durations
 * are Spring Boot's format: {@code "500ms"}, {@code "30s"}, {@code "10m"} or ISO-8601 ({@code
 * "PT30S"}); an empty string keeps the runtime's default. The kinds are hosted when the application
 * context starts, before the web server accepts requests, and a refused kind or option fails the
 * startup with the bean's name.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
public @interface DGenHosted {

  /**
   * The kind's name: the first element of its servers' tuids, and what refs address.
   *
   * @return the kind, not blank
   */
  String kind();

  /**
   * The tenant's path, its elements separated by {@code /}: {@code "bank"}, {@code "acme/bank"}.
   *
   * @return the tenant path
   */
  String tenant();

  /**
   * {@code HostOptions.Builder.consumeK}: messages per consumer transaction. Default 1, which also
   * lets a call made in the holder run inline.
   *
   * @return at least 1
   */
  int consumeK() default 1;

  /**
   * {@code HostOptions.Builder.deadLetterThreshold}: consecutive failures before a message is
   * dead-lettered. Default 0: never.
   *
   * @return 0 for never, or at least 1
   */
  int deadLetterThreshold() default 0;

  /**
   * {@code HostOptions.Builder.lockTimeout}: how long a lock may be held before it is busted.
   * Default {@code ""}: never.
   *
   * @return a duration, or empty
   */
  String lockTimeout() default "";

  /**
   * {@code HostOptions.Builder.idleTimeout}: how long a loaded server stays loaded with an empty
   * queue. Default {@code ""}: the runtime's, 60 s.
   *
   * @return a duration, or empty
   */
  String idleTimeout() default "";

  /**
   * {@code HostOptions.Builder.expireAfter}: a server of the kind that received no message for this
   * long is deleted, and its next message creates it anew. Default {@code ""}: never.
   *
   * @return a duration, or empty
   */
  String expireAfter() default "";

  /**
   * {@code HostOptions.Builder.callTimeout}: the default timeout of a call. Default {@code ""}: the
   * runtime's, 5 s.
   *
   * @return a duration, or empty
   */
  String callTimeout() default "";

  /**
   * {@code HostOptions.Builder.idempotencyRetention}: how long idempotency keys and kept replies
   * are remembered. Default {@code ""}: the runtime's, 24 hours.
   *
   * @return a duration, or empty
   */
  String idempotencyRetention() default "";

  /**
   * {@code HostOptions.Builder.cache}: whether a consumer keeps the state between batches. Default
   * true.
   *
   * @return whether to cache
   */
  boolean cache() default true;

  /**
   * {@code HostOptions.Builder.holdBuckets}: whether this application takes leases on the kind's
   * buckets and runs its servers. Default true. With false (a web tier) it has the kind's code and
   * runs calls through its refs inline, and leaves the servers to the applications that hold the
   * buckets.
   *
   * @return whether to hold buckets
   */
  boolean holdBuckets() default true;

  /**
   * {@code HostOptions.Builder.allowTypes}: classes allowed in messages and replies besides the
   * behaviour's declared types. Default none.
   *
   * @return the classes
   */
  Class<?>[] allowTypes() default {};
}

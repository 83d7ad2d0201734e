package io.dgen;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The logical name and version under which a class's instances are stored: messages, replies,
 * state, dead letters and timers name the class by this name instead of its fully qualified class
 * name, so the class can move or be renamed without making stored data undecodable.
 *
 * <pre>{@code
 * @TypeName(value = "deposit", aliases = "com.acme.bank.Deposit", version = 2)
 * record Deposit(String account, long cents, String currency) implements BankMsg {}
 * }</pre>
 *
 * <p>Data stored under the logical name, any alias, or the class's own fully qualified name decodes
 * to the annotated class. List the former fully qualified name (or a former logical name) as an
 * alias when renaming. Data stored at a version below {@link #version()} is passed through the
 * migration steps registered with {@link DGen.Builder#migration} before it is decoded; data of an
 * unannotated class, or stored before the class was annotated, is at version 1.
 *
 * <p>On a behaviour ({@link DGenServer} implementation) the logical name gives the default tuid
 * {@code ("dgen_server", value)} instead of {@code ("dgen_server", <class name>)}; if no server
 * exists under it but one exists under {@code ("dgen_server", alias)} for an alias, that one is
 * started.
 *
 * <p>See {@code docs/evolving-data.md}.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface TypeName {

  /**
   * The logical name: not blank, without {@code #} or whitespace, not starting with {@code ~}.
   * Unique among the types one server allows.
   *
   * @return the name
   */
  String value();

  /**
   * Names the class's data may have been stored under before: former logical names or former fully
   * qualified class names. Default: none.
   *
   * @return the aliases
   */
  String[] aliases() default {};

  /**
   * The version of the class's stored form, at least 1. Raise it when a change needs a migration
   * ({@link DGen.Builder#migration}); adding a nullable field or removing one does not. Default 1.
   *
   * @return the version
   */
  int version() default 1;
}

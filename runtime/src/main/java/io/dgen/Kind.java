package io.dgen;

import java.util.Objects;

/**
 * A kind of hosted server, typed by its message type: the name its servers' tuids start with, and
 * the type every message sent to them must be. Declare one per kind, once, and use it to host the
 * kind and to address its servers:
 *
 * <pre>{@code
 * public static final Kind<Account.Msg> ACCOUNT = Kind.of("account", Account.Msg.class);
 *
 * dgen.host(ACCOUNT, Account::new, HostOptions.builder(bank).build()); // in every instance
 * ServerRef<Account.Msg> account = dgen.ref(bank, ACCOUNT, 42);          // anywhere
 * }</pre>
 *
 * <p>A message that is not an instance of {@link #messageType()} is refused with {@link
 * IllegalArgumentException} before anything is written, whatever the generic types said (a raw
 * {@code ServerRef}, an unchecked cast). One runtime hosts and addresses a kind's name with one
 * message type only: see {@link DGen#host(Kind, java.util.function.Supplier, HostOptions)}.
 *
 * <p>Immutable; two kinds are equal if their names and message types are. Code that chooses its
 * types at run time may host and address kinds by name instead ({@link DGen#host(String,
 * java.util.function.Supplier, HostOptions)}).
 *
 * @param <M> the message type of the kind's servers
 */
public final class Kind<M> {

  private final String name;
  private final Class<M> messageType;

  private Kind(String name, Class<M> messageType) {
    this.name = name;
    this.messageType = messageType;
  }

  /**
   * A kind named {@code name} whose servers take messages of {@code messageType}.
   *
   * @param name the kind's name, not blank: the first element of its servers' tuids
   * @param messageType the class or interface every message is an instance of, e.g. a sealed
   *     interface whose records are the messages
   * @param <M> the message type
   * @return the kind
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if the name is blank or the message type is primitive
   */
  public static <M> Kind<M> of(String name, Class<M> messageType) {
    checkName(name);
    Objects.requireNonNull(messageType, "messageType must not be null");
    if (messageType.isPrimitive()) {
      throw new IllegalArgumentException(
          "the message type of kind "
              + name
              + " must be a class or interface, not the primitive "
              + messageType
              + "; use its wrapper class");
    }
    return new Kind<>(name, messageType);
  }

  /**
   * Checks a kind's name as {@link DGen#host} and {@link DGen#ref} do.
   *
   * @throws NullPointerException if it is null
   * @throws IllegalArgumentException if it is blank
   */
  static void checkName(String name) {
    Objects.requireNonNull(name, "kind must not be null");
    if (name.isBlank()) {
      throw new IllegalArgumentException("kind must not be blank");
    }
  }

  /** The kind's name: the first element of its servers' tuids. */
  public String name() {
    return name;
  }

  /** The type every message to the kind's servers is an instance of. */
  public Class<M> messageType() {
    return messageType;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Kind<?> k && k.name.equals(name) && k.messageType == messageType;
  }

  @Override
  public int hashCode() {
    return name.hashCode() * 31 + messageType.hashCode();
  }

  @Override
  public String toString() {
    return "Kind[" + name + ", " + messageType.getName() + "]";
  }
}

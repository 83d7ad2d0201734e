package io.dgen;

/** A tenant that was expected to exist ({@link DGen#existingTenant}) does not. */
public final class UnknownTenantException extends DGenException {

  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message which tenant is missing
   */
  public UnknownTenantException(String message) {
    super(message);
  }
}

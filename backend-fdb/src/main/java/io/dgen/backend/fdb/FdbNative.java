package io.dgen.backend.fdb;

import com.apple.foundationdb.Database;
import com.apple.foundationdb.DatabaseOptions;
import com.apple.foundationdb.FDB;
import com.apple.foundationdb.FDBException;
import org.jspecify.annotations.Nullable;

/**
 * The only class that touches {@link FDB}, whose static initialiser loads the native libraries
 * ({@code libfdb_java}, linked against {@code libfdb_c}). Keeping every reference here means that
 * loading {@link FdbBackend}, its builder and the pure helpers never loads native code: the class
 * is initialised the first time a backend is opened.
 *
 * <h2>The API version and the network thread</h2>
 *
 * {@code FDB.selectAPIVersion} may succeed once per JVM; later calls must ask for the same version.
 * Opening the first database starts FoundationDB's network thread (a daemon), which runs until the
 * JVM exits, when fdb-java's shutdown hook stops it. The network can be stopped only once per JVM
 * and never restarted, so closing a backend closes its database but leaves the network running:
 * another backend (or another library using fdb-java in the same JVM) may still need it.
 */
final class FdbNative {

  // Guarded by FdbNative.class. A failed static initialiser of FDB is reported once as the
  // original error and afterwards only as "NoClassDefFoundError: Could not initialize class", so
  // the first failure is kept to give every later open the same, useful message.
  private static @Nullable Throwable loadFailure;

  private FdbNative() {}

  /**
   * Selects the API version (once per JVM) and opens the database {@code settings} describe, with
   * its options applied.
   *
   * @throws IllegalStateException if the native client cannot be loaded, or another API version was
   *     selected in this JVM before
   */
  static synchronized Database open(FdbBackend.Settings settings) {
    FDB fdb = selectApiVersion(settings.apiVersion());
    String clusterFile = settings.clusterFile() == null ? null : settings.clusterFile().toString();
    Database db;
    try {
      db =
          settings.executor() == null
              ? fdb.open(clusterFile)
              : fdb.open(clusterFile, settings.executor());
    } catch (RuntimeException e) {
      throw FdbErrors.map(e);
    }
    try {
      DatabaseOptions options = db.options();
      options.setMaxWatches(settings.maxWatches());
      if (settings.transactionTimeoutMillis() > 0) {
        options.setTransactionTimeout(settings.transactionTimeoutMillis());
      }
      if (settings.retryLimit() >= 0) {
        options.setTransactionRetryLimit(settings.retryLimit());
      }
      if (settings.automaticIdempotency()) {
        options.setTransactionAutomaticIdempotency();
      }
    } catch (RuntimeException e) {
      db.close();
      throw FdbErrors.map(e);
    }
    return db;
  }

  /**
   * Loads the native client and selects {@code apiVersion} without opening a database; the
   * FoundationDB test environment uses it to skip, with the reason, where {@code libfdb_c} is
   * missing.
   *
   * @throws IllegalStateException as {@link #open}
   */
  static synchronized void load(int apiVersion) {
    selectApiVersion(apiVersion);
  }

  private static FDB selectApiVersion(int apiVersion) {
    if (loadFailure != null) {
      throw FdbErrors.clientLibraryUnavailable(loadFailure);
    }
    try {
      if (FDB.isAPIVersionSelected()) {
        int selected = FDB.instance().getAPIVersion();
        if (selected != apiVersion) {
          throw new IllegalStateException(
              "FoundationDB API version "
                  + selected
                  + " is already selected in this JVM, so an FdbBackend with API version "
                  + apiVersion
                  + " cannot be opened: FDB.selectAPIVersion can be called once per JVM. Open"
                  + " every FdbBackend (and any other FoundationDB client in this JVM) with the"
                  + " same API version.");
        }
        return FDB.instance();
      }
      return FDB.selectAPIVersion(apiVersion);
    } catch (UnsatisfiedLinkError | NoClassDefFoundError | ExceptionInInitializerError e) {
      loadFailure = e;
      throw FdbErrors.clientLibraryUnavailable(e);
    } catch (FDBException e) {
      throw new IllegalStateException(
          "The installed FoundationDB client library refused API version "
              + apiVersion
              + " ("
              + FdbErrors.map(e).getMessage()
              + "). Install the FoundationDB 7.3 client (see \"Installing the FoundationDB"
              + " client\" in "
              + FdbErrors.OPERATIONS_DOC
              + ").",
          e);
    }
  }
}

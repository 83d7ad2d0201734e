package io.dgen.examples.spring;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.core.env.Environment;

/**
 * A small bank as a Spring Boot REST service on DGen: one durable server per account, hosted by
 * annotation ({@link Account}), reached from HTTP handlers through refs ({@link
 * AccountController}). By default it keeps its data with the embedded RocksDB backend in {@code
 * examples-spring/target/spring-bank-data}, so balances survive a restart; see {@code
 * application.properties} and {@code docs/spring.md}.
 *
 * <pre>
 * mvn -B -q -pl examples-spring -am test-compile exec:java
 * curl -X POST localhost:8080/accounts/1
 * curl -X POST localhost:8080/accounts/1/deposits -H 'Content-Type: application/json' \
 *   -H 'Idempotency-Key: 7f3a' -d '{"amount": 100}'
 * curl localhost:8080/accounts/1
 * </pre>
 */
@SpringBootApplication
public class BankApplication {

  private static final Logger log = LoggerFactory.getLogger(BankApplication.class);

  /**
   * Starts the service.
   *
   * @param args Spring Boot's, e.g. {@code --server.port=9090}
   */
  public static void main(String[] args) {
    SpringApplication.run(BankApplication.class, args);
  }

  /** Says how to try it once the server listens. */
  @EventListener(ApplicationReadyEvent.class)
  void ready(ApplicationReadyEvent event) {
    Environment env = event.getApplicationContext().getEnvironment();
    String base = "http://localhost:" + env.getProperty("local.server.port", "8080");
    log.info(
        "the bank is open: try\n  curl -X POST {}/accounts/1\n  curl -X POST {}/accounts/1/deposits"
            + " -H 'Content-Type: application/json' -H 'Idempotency-Key: 7f3a' -d"
            + " '{\"amount\": 100}'\n  curl {}/accounts/1\n  curl {}/actuator/health"
            + "\n  (data in {}; Ctrl-C stops it gracefully)",
        base,
        base,
        base,
        base,
        env.getProperty("dgen.rocksdb.data-dir"));
  }
}

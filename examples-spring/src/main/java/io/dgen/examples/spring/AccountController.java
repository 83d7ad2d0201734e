package io.dgen.examples.spring;

import io.dgen.CallTimeoutException;
import io.dgen.DGen;
import io.dgen.OperationTimeoutException;
import io.dgen.ServerRef;
import io.dgen.Tenant;
import io.dgen.examples.spring.Account.Msg;
import io.dgen.examples.spring.Account.Reply;
import io.dgen.examples.spring.Account.Request;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The accounts over HTTP. Each request reaches its account through a ref, whichever instance of the
 * service runs it. A request with an {@code Idempotency-Key} header is a keyed call: however often
 * a client retries it (after a timeout, a lost response, a crash), it is applied once, and every
 * retry gets the first answer.
 *
 * <pre>
 * POST /accounts/{id}                                 open            201, 409 if open already
 * POST /accounts/{id}/deposits   {"amount": 100}      deposit         200, 404, 400
 * POST /accounts/{id}/transfers  {"to": 2, "amount": 30}  transfer    200, 404, 409 if short, 400
 * GET  /accounts/{id}                                 balance         200, 404
 * </pre>
 */
@RestController
@RequestMapping("/accounts")
public class AccountController {

  private static final Duration TIMEOUT = Duration.ofSeconds(10);

  /** The body of a deposit. */
  public record DepositRequest(long amount) {}

  /** The body of a transfer. */
  public record TransferRequest(long to, long amount) {}

  /** Every response's body. */
  public record AccountView(long id, long balance, Account.Outcome outcome) {}

  private final DGen dgen;
  private final Tenant bank;

  /**
   * Created by Spring.
   *
   * @param dgen the runtime
   */
  public AccountController(DGen dgen) {
    this.dgen = dgen;
    this.bank = dgen.tenant("bank"); // opened once: a transaction
  }

  /** Opens an account. */
  @PostMapping("/{id}")
  public ResponseEntity<AccountView> open(
      @PathVariable long id,
      @RequestHeader(name = "Idempotency-Key", required = false) @Nullable String key) {
    return respond(id, call(id, new Account.Open(), "open", key), HttpStatus.CREATED);
  }

  /** Deposits money. */
  @PostMapping("/{id}/deposits")
  public ResponseEntity<AccountView> deposit(
      @PathVariable long id,
      @RequestBody DepositRequest body,
      @RequestHeader(name = "Idempotency-Key", required = false) @Nullable String key) {
    return respond(id, call(id, new Account.Deposit(body.amount()), "deposit", key), HttpStatus.OK);
  }

  /** Moves money to another account; the credit lands there moments later. */
  @PostMapping("/{id}/transfers")
  public ResponseEntity<AccountView> transfer(
      @PathVariable long id,
      @RequestBody TransferRequest body,
      @RequestHeader(name = "Idempotency-Key", required = false) @Nullable String key) {
    Request transfer = new Account.Transfer(body.to(), body.amount());
    return respond(id, call(id, transfer, "transfer", key), HttpStatus.OK);
  }

  /** Reads the balance. */
  @GetMapping("/{id}")
  public ResponseEntity<AccountView> balance(@PathVariable long id) {
    return respond(id, call(id, new Account.Balance(), "balance", null), HttpStatus.OK);
  }

  /**
   * A keyed call when the client sent a key: the key is per account, so it is prefixed with the
   * operation, and a retry of "deposit 100" cannot be answered with the reply of a transfer.
   */
  private Reply call(long id, Request request, String operation, @Nullable String key) {
    ServerRef<Msg> account = dgen.ref(bank, Account.KIND, id);
    return key == null
        ? account.call(request, TIMEOUT)
        : account.call(request, operation + ":" + key, TIMEOUT);
  }

  private static ResponseEntity<AccountView> respond(long id, Reply reply, HttpStatus ok) {
    HttpStatus status =
        switch (reply.outcome()) {
          case OK -> ok;
          case NO_ACCOUNT -> HttpStatus.NOT_FOUND;
          case ALREADY_OPEN, INSUFFICIENT_FUNDS -> HttpStatus.CONFLICT;
          case INVALID -> HttpStatus.BAD_REQUEST;
        };
    return ResponseEntity.status(status)
        .body(new AccountView(id, reply.balance(), reply.outcome()));
  }

  /** The account did not answer in time; the request may still be applied: retry with its key. */
  @ExceptionHandler(CallTimeoutException.class)
  public ResponseEntity<String> timedOut(CallTimeoutException e) {
    return ResponseEntity.status(HttpStatus.GATEWAY_TIMEOUT).body(e.getMessage());
  }

  /** The store did not answer in time; the outcome is unknown: retry with the request's key. */
  @ExceptionHandler(OperationTimeoutException.class)
  public ResponseEntity<String> unavailable(OperationTimeoutException e) {
    return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).body(e.getMessage());
  }

  /** A key longer than 256 bytes, for instance. */
  @ExceptionHandler(IllegalArgumentException.class)
  public ResponseEntity<String> badRequest(IllegalArgumentException e) {
    return ResponseEntity.badRequest().body(e.getMessage());
  }
}

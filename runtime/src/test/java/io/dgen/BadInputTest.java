package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.TestServer.Ask;
import io.dgen.TestServer.Msg;
import io.dgen.admin.ServerControl;
import io.dgen.internal.codec.Envelope;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class BadInputTest extends RuntimeTestBase {

  @Test
  void nullMessages_areRefusedWithTheirName() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    assertThatThrownBy(() -> ref.cast(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("message");
    assertThatThrownBy(() -> ref.call(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("request");
    assertThatThrownBy(() -> ref.castAll(Arrays.asList(new TestServer.Add(1), null)))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> ref.info(null)).isInstanceOf(NullPointerException.class);
    assertThat(ServerControl.of(ref).queueLength()).isZero(); // castAll is all or nothing
  }

  @Test
  void unknownTenant_isASpecificError() {
    assertThatThrownBy(() -> dgen.existingTenant("no", "such", "tenant"))
        .isInstanceOf(UnknownTenantException.class)
        .hasMessageContaining("[no, such, tenant]");
    assertThatThrownBy(() -> dgen.tenant()).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> dgen.tenant("ok", "")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void tenantOfAnotherDGen_isRefused() {
    try (DGen other = DGen.builder(backend).build()) {
      Tenant foreign = other.tenant("x");
      assertThatThrownBy(
              () -> dgen.start(new TestServer(hooks), null, StartOptions.builder(foreign).build()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("another DGen");
    }
  }

  @Test
  void callbackReturningNull_isACallbackError() {
    ServerRef<Msg> ref = start(b -> b.consume(false));
    assertThatThrownBy(() -> ref.priorityCall(new Ask(new TestServer.ReturnNull())))
        .isInstanceOf(CallbackException.class)
        .cause()
        .hasMessageContaining("returned null");
  }

  @Test
  void invalidOptions_failFast() {
    StartOptions.Builder b = StartOptions.builder(tenant);
    assertThatThrownBy(() -> b.consumeK(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.deadLetterThreshold(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.lockTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.name(" ")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> StartOptions.builder(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void oversizedMessage_isRefusedBeforeAnythingIsWritten() {
    ServerRef<Object> ref =
        dgen.start(
            new SerializationTest.LooseServer(),
            null,
            StartOptions.builder(tenant).consume(false).build());
    assertThatThrownBy(() -> ref.castAll(List.of("small", "y".repeat(200_000))))
        .isInstanceOf(IllegalArgumentException.class)
        // The limit leaves room for the records that may wrap the item later (issue 12).
        .hasMessageContaining(Envelope.MAX_ITEM + " bytes");
    assertThat(ServerControl.of(ref).queueLength()).isZero();
  }

  @Test
  void unresolvableTypes_areExplained() {
    class Generic<S, M> implements DGenServer<S, M> {
      @Override
      public InitResult<S> init(Object arg) {
        throw new UnsupportedOperationException();
      }
    }
    assertThatThrownBy(
            () ->
                dgen.start(
                    new Generic<String, String>(), null, StartOptions.builder(tenant).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("concrete type arguments");
  }
}

package io.dgen.internal.codec;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The queue item's header: the optional trace context behind its flag, and items without it. */
class EnvelopeTest {

  private static final String PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

  private final Serde serde = new Serde(Serde.defaultMapper());
  private final Map<String, Integer> message = Map.of("amount", 5);

  private byte[] messageBytes() {
    return serde.mapper().writeValueAsBytes(message);
  }

  @Test
  void anUntracedItem_isByteForByteTheFormatWrittenBeforeTracing() {
    ByteArrayOutputStream before = new ByteArrayOutputStream();
    before.write(Envelope.FORMAT);
    before.write(Envelope.CAST);
    before.write(0); // the declared type
    before.write(0); // no failures
    before.writeBytes(messageBytes());

    byte[] item = Envelope.encode(serde, Envelope.CAST, Envelope.DECLARED, 0, null, null, message);

    assertThat(item).isEqualTo(before.toByteArray());
    Envelope env = Envelope.decode(before.toByteArray(), serde);
    assertThat(env.trace()).isNull();
    assertThat(env.kind()).isEqualTo(Envelope.CAST);
    assertThat(serde.mapper().readTree(env.bytes(), env.messageOffset(), env.messageLength()))
        .isEqualTo(serde.mapper().valueToTree(message));
  }

  @Test
  void aTracedItem_carriesItsContextBehindTheFlag_andCostsOnlyItsStrings() {
    byte[] plain = Envelope.encode(serde, Envelope.CAST, Envelope.DECLARED, 0, null, null, message);
    byte[] traced =
        Envelope.encode(
            serde,
            Envelope.CAST,
            Envelope.DECLARED,
            0,
            null,
            new Envelope.Trace(PARENT, null),
            message);

    assertThat(traced[1]).isEqualTo((byte) (Envelope.CAST | Envelope.TRACED));
    // the traceparent's length + 1, its bytes, and 0 for no tracestate
    assertThat(traced.length - plain.length).isEqualTo(1 + PARENT.length() + 1);
    Envelope env = Envelope.decode(traced, serde);
    assertThat(env.kind()).isEqualTo(Envelope.CAST); // the flag is the trace's, not the kind's
    assertThat(env.trace()).isEqualTo(new Envelope.Trace(PARENT, null));
    assertThat(env.messageLength()).isEqualTo(messageBytes().length);
  }

  @Test
  void aTracedCall_keepsItsSlotAndTraceState_throughFailures() {
    Envelope.Trace trace = new Envelope.Trace(PARENT, "dgen=a1,other=b2");
    byte[] item =
        Envelope.encode(
            serde, Envelope.CALL | Envelope.KIND_TABLE, 3, 1234, "slot-1", trace, message);

    Envelope failed = Envelope.decode(Envelope.decode(item, serde).withFailure(2, "f-1", 3), serde);

    assertThat(failed.trace()).isEqualTo(trace);
    assertThat(failed.isCall()).isTrue();
    assertThat(failed.kindTable()).isTrue();
    assertThat(failed.typeIndex()).isEqualTo(3);
    assertThat(failed.slotSeconds()).isEqualTo(1234);
    assertThat(failed.slotId()).isEqualTo("slot-1");
    assertThat(failed.failures()).isEqualTo(2);
    assertThat(failed.failureId()).isEqualTo("f-1");
    assertThat(
            new String(
                failed.bytes(),
                failed.messageOffset(),
                failed.messageLength(),
                StandardCharsets.ISO_8859_1))
        .isEqualTo(new String(messageBytes(), StandardCharsets.ISO_8859_1));
  }
}

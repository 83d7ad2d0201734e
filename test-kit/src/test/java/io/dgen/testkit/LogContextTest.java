package io.dgen.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.MDC;

/** The MDC of a callback, of a retry's and of a dead letter's log lines (issue 16 item 4). */
@ExtendWith(DGenExtension.class)
class LogContextTest {

  record Hit(String what) {}

  /** Records the MDC each callback saw; a "fail" message throws. */
  static final class Recorder implements DGenServer<Integer, Hit> {
    final List<Map<String, String>> seen = new CopyOnWriteArrayList<>();
    final List<Map<String, String>> deadSeen = new CopyOnWriteArrayList<>();

    @Override
    public InitResult<Integer> init(@Nullable Object arg) {
      return InitResult.ok(0);
    }

    @Override
    public Result<Integer> handleCast(Hit message, Integer state) {
      seen.add(mdc());
      if (message.what().equals("fail")) {
        throw new IllegalStateException("refused");
      }
      return Result.noReply(state + 1);
    }

    @Override
    public Result<Integer> handleCall(Hit request, From from, Integer state) {
      seen.add(mdc());
      return Result.reply(state, state);
    }

    @Override
    public void handleDeadLetter(Hit message, int attempts) {
      deadSeen.add(mdc());
    }

    private static Map<String, String> mdc() {
      Map<String, String> m = MDC.getCopyOfContextMap();
      return m == null ? Map.of() : new HashMap<>(m);
    }
  }

  @Test
  void callbacksRetriesAndDeadLettersCarryTheServersContextAndLeaveTheThreadClean(TestKit kit) {
    MDC.put("request", "r-1"); // the caller's own context survives
    Recorder recorder = new Recorder();
    ServerRef<Hit> ref =
        kit.dgen()
            .start(
                recorder,
                null,
                StartOptions.builder(kit.dgen().tenant("acme", "shop"))
                    .deadLetterThreshold(2)
                    .build());
    ref.castAll(List.of(new Hit("ok"), new Hit("fail")));
    int before = CapturedLogs.lines().size();

    kit.drain(ref);
    ref.call(new Hit("get"), Integer.class, Duration.ofSeconds(5)); // Hit is cast too: no Call

    Map<String, String> expected =
        Map.of(
            "dgen.tenant", "[acme, shop]",
            "dgen.tuid", ref.tuid().toString(),
            "dgen.server", Recorder.class.getName(),
            "dgen.message", Hit.class.getName(),
            "request", "r-1");
    assertThat(recorder.seen).hasSize(4).allSatisfy(m -> assertThat(m).isEqualTo(expected));
    assertThat(recorder.deadSeen).containsExactly(expected);

    List<CapturedLogs.Line> lines =
        CapturedLogs.lines().subList(before, CapturedLogs.lines().size());
    CapturedLogs.Line retry = only(lines, "draining again");
    assertThat(retry.mdc()).containsEntry("dgen.tuid", ref.tuid().toString());
    assertThat(retry.mdc()).containsEntry("dgen.server", Recorder.class.getName());
    assertThat(retry.mdc()).doesNotContainKey("dgen.message");
    assertThat(only(lines, "dead-lettered after 2 attempts").mdc()).isEqualTo(expected);

    assertThat(MDC.getCopyOfContextMap()).isEqualTo(Map.of("request", "r-1"));
    MDC.clear();
  }

  private static CapturedLogs.Line only(List<CapturedLogs.Line> lines, String text) {
    List<CapturedLogs.Line> found = lines.stream().filter(l -> l.message().contains(text)).toList();
    assertThat(found).as("lines containing '%s' in %s", text, lines).hasSize(1);
    return found.get(0);
  }
}

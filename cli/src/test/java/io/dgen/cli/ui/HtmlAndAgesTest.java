package io.dgen.cli.ui;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.tuple.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The escaping writer, links, and ages from versions. */
class HtmlAndAgesTest {

  @Test
  void html_escapesTextAndAttributes() {
    String evil = "<script>alert('x')</script>\"&";
    String out =
        new Html()
            .open("p", "title", evil, "data-none", null, "hidden", "")
            .text(evil)
            .close("p")
            .link("/a?x=1&y=" + evil, evil)
            .toString();
    assertThat(out)
        .isEqualTo(
            "<p title=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;\" hidden>"
                + "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;</p>"
                + "<a href=\"/a?x=1&amp;y=&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;\">"
                + "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;</a>");
    assertThat(Html.escape("plain")).isSameAs("plain");
    assertThatThrownBy(() -> new Html().open("p", "odd"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void urls_useLiteralsWhereTheyReadBack_elsePackedTuids() {
    assertThat(Urls.server(java.util.List.of("shop", "eu"), Tuple.from("orders", 1L)))
        .isEqualTo("/server?t=shop%2Feu&tuid=%28%22orders%22%2C+1%29");
    Tuple odd = Tuple.from(UUID.fromString("00000000-0000-0000-0000-000000000001"), 1.5);
    String[] p = Urls.tuid(odd);
    assertThat(p[0]).isEqualTo("tuidb");
    assertThat((Object) Urls.unpack(p[1])).isEqualTo(odd);
    assertThatThrownBy(() -> Urls.unpack("!!")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void ages_areBracketedBySamples_orEstimatedFromTheRate() {
    Instant t0 = Instant.parse("2026-01-01T00:00:00Z");
    VersionClock bracket = new VersionClock(0);
    assertThat(bracket.age(5, t0)).isNull();
    bracket.record(100, t0, t0.plusMillis(10));
    bracket.record(200, t0.plusSeconds(60), t0.plusSeconds(60));
    bracket.record(150, t0.plusSeconds(61), t0.plusSeconds(61)); // older version: ignored
    Instant now = t0.plusSeconds(120);
    // queued before the first sample: at least its age
    assertThat(bracket.age(50, now).text()).isEqualTo("≥ 119 s");
    // between the samples: after the first began, before the second ended
    VersionClock.Age between = bracket.age(150, now);
    assertThat(between.low()).isEqualTo(Duration.ofSeconds(60));
    assertThat(between.high()).isEqualTo(Duration.ofSeconds(120));
    assertThat(between.text()).isEqualTo("60 s – 2 min");
    // after the last sample: younger than it
    assertThat(bracket.age(250, now).text()).isEqualTo("≤ 60 s");

    VersionClock fdb = new VersionClock(1_000_000);
    fdb.record(10_000_000, t0, t0);
    assertThat(fdb.age(4_000_000, t0.plusSeconds(4)).text()).isEqualTo("≈ 10 s");
    assertThat(VersionClock.format(Duration.ofHours(50))).isEqualTo("2 d");
  }

  @Test
  void samples_areThinnedWhenFull() {
    VersionClock c = new VersionClock(0);
    Instant t = Instant.EPOCH;
    for (int i = 0; i < VersionClock.MAX_SAMPLES * 3; i++) {
      t = t.plusSeconds(2);
      c.record(i, t, t);
    }
    // the oldest sample is kept: an item older than everything stays bounded below by it
    assertThat(c.age(-1, t).low()).isEqualTo(Duration.between(Instant.EPOCH.plusSeconds(2), t));
  }
}

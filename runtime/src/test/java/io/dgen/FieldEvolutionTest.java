package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.admin.DGenAdmin;
import io.dgen.admin.ServerAdmin;
import io.dgen.admin.ServerControl;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * Field changes without a migration, in every state encoding, for records and ordinary classes: a
 * type that gains a field reads old data with the field's default (null, 0, false, or what a
 * compact constructor or field initializer sets); a type that loses one ignores it; an incompatible
 * change is a clear {@link UndecodableDataException} naming the server, the stored type and version
 * and the key, and the data is kept.
 */
class FieldEvolutionTest extends RuntimeTestBase {

  /**
   * Keeps a state of type {@code S} under {@code tuid} (null: a hosted server, addressed by its
   * id); a call replies with the state.
   */
  abstract static class Keeper<S> implements DGenServer<S, String> {
    private final @Nullable Tuple tuid;
    private final S initial;

    Keeper(@Nullable Tuple tuid, S initial) {
      this.tuid = tuid;
      this.initial = initial;
    }

    @Override
    public InitResult<S> init(@Nullable Object arg) {
      // the stored state wins
      return tuid == null ? InitResult.ok(initial) : InitResult.ok(tuid, initial);
    }

    @Override
    public Result<S> handleCall(String request, From from, S state) {
      return Result.reply(state, state);
    }
  }

  // ---------------------------------------------------------------- records

  @TypeName("fe.profile")
  record ProfileV1(String name, String dropped) {}

  @TypeName("fe.profile")
  record ProfileV2(String name, @Nullable String nick, int count, boolean flag, List<String> tags) {
    ProfileV2 {
      tags = tags == null ? List.of("none") : tags; // a compact constructor's default
    }
  }

  static final class ProfileV1Keeper extends Keeper<ProfileV1> {
    ProfileV1Keeper(Tuple tuid, ProfileV1 initial) {
      super(tuid, initial);
    }
  }

  static final class ProfileV2Keeper extends Keeper<ProfileV2> {
    ProfileV2Keeper(Tuple tuid) {
      super(tuid, new ProfileV2("fresh", null, 0, false, null));
    }
  }

  // ---------------------------------------------------------------- ordinary classes

  /** An ordinary class, not annotated: stored under its class name. */
  static final class SettingsV1 {
    public String name = "";
    public int dropped;
  }

  static final class SettingsV2 {
    public String name = "";
    public String added = "initialized";
    public long zero;
  }

  static final class SettingsV1Keeper extends Keeper<SettingsV1> {
    SettingsV1Keeper(Tuple tuid, SettingsV1 initial) {
      super(tuid, initial);
    }
  }

  static final class SettingsV2Keeper extends Keeper<SettingsV2> {
    SettingsV2Keeper(Tuple tuid) {
      super(tuid, new SettingsV2());
    }
  }

  // ---------------------------------------------------------------- an incompatible change

  @TypeName("fe.amount")
  record AmountV1(String amount) {}

  @TypeName("fe.amount")
  record AmountV2(long amount) {}

  static final class AmountV1Keeper extends Keeper<AmountV1> {
    AmountV1Keeper(@Nullable Tuple tuid, AmountV1 initial) {
      super(tuid, initial);
    }
  }

  static final class AmountV2Keeper extends Keeper<AmountV2> {
    AmountV2Keeper(Tuple tuid) {
      super(tuid, new AmountV2(0));
    }
  }

  // ---------------------------------------------------------------- messages

  @TypeName("fe.order")
  record OrderV1(String item, String dropped) {}

  @TypeName("fe.order")
  record OrderV2(String item, int quantity, @Nullable String note) {}

  @TypeName("fe.count")
  record CountV1(String n) {}

  @TypeName("fe.count")
  record CountV2(long n) {}

  record Seen(List<String> items) {}

  /**
   * A server that records what it saw; which version of the messages it reads is its start's
   * allowed types.
   */
  static final class Recorder implements DGenServer<Seen, Object> {
    @Override
    public InitResult<Seen> init(@Nullable Object arg) {
      return InitResult.ok(Tuple.from("fe", "orders"), new Seen(List.of()));
    }

    @Override
    public Result<Seen> handleCast(Object m, Seen s) {
      List<String> items = new ArrayList<>(s.items());
      items.add(String.valueOf(m));
      return Result.noReply(new Seen(items));
    }

    @Override
    public Result<Seen> handleCall(Object m, From from, Seen s) {
      return Result.reply(s, s);
    }
  }

  final List<DGen> runtimes = new ArrayList<>();

  @AfterEach
  void closeRuntimes() {
    runtimes.forEach(DGen::close);
  }

  private DGen runtime(StateEncoding encoding) {
    DGen d =
        DGen.builder(backend)
            .stateEncoding(encoding)
            .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
            .build();
    runtimes.add(d);
    return d;
  }

  private StartOptions.Builder options(DGen d) {
    return StartOptions.builder(d.tenant(tenant.path().toArray(String[]::new)));
  }

  /** Stores {@code first}'s state, stops it, and starts {@code second} over the same data. */
  private <T> ProcessRef<String> upgrade(
      StateEncoding encoding, DGenServer<?, String> first, DGenServer<T, String> second) {
    DGen d = runtime(encoding);
    ProcessRef<String> old = d.start(first, null, options(d).build());
    assertThat(get(old, Object.class)).isNotNull(); // written
    old.stop();
    return d.start(second, null, options(d).build());
  }

  @ParameterizedTest
  @EnumSource(StateEncoding.class)
  void aRecordState_gainsFieldsWithTheirDefaults_andIgnoresALostOne(StateEncoding encoding) {
    Tuple tuid = Tuple.from("fe", "profile");
    ProcessRef<String> ref =
        upgrade(
            encoding,
            new ProfileV1Keeper(tuid, new ProfileV1("ann", "gone")),
            new ProfileV2Keeper(tuid));
    assertThat(get(ref, ProfileV2.class))
        .isEqualTo(new ProfileV2("ann", null, 0, false, List.of("none")));
  }

  @ParameterizedTest
  @EnumSource(StateEncoding.class)
  void anOrdinaryClassState_gainsFieldsWithTheirInitializers_andIgnoresALostOne(
      StateEncoding encoding) {
    Tuple tuid = Tuple.from("fe", "settings");
    SettingsV1 v1 = new SettingsV1();
    v1.name = "ann";
    v1.dropped = 7;
    ProcessRef<String> ref =
        upgrade(encoding, new SettingsV1Keeper(tuid, v1), new SettingsV2Keeper(tuid));
    SettingsV2 read = get(ref, SettingsV2.class);
    assertThat(read.name).isEqualTo("ann");
    assertThat(read.added).isEqualTo("initialized");
    assertThat(read.zero).isZero();
  }

  @ParameterizedTest
  @EnumSource(StateEncoding.class)
  void anIncompatibleState_isUndecodable_namingServerTypeVersionAndKey_andIsKept(
      StateEncoding encoding) {
    Tuple tuid = Tuple.from("fe", "amount");
    DGen d = runtime(encoding);
    ProcessRef<String> old =
        d.start(new AmountV1Keeper(tuid, new AmountV1("twelve")), null, options(d).build());
    old.stop();
    ProcessRef<String> ref = d.start(new AmountV2Keeper(tuid), null, options(d).build());
    assertThatThrownBy(() -> get(ref, AmountV2.class))
        .isInstanceOfSatisfying(
            UndecodableDataException.class,
            e -> {
              assertThat(e.server()).contains("tuid=" + tuid);
              assertThat(e.storedType()).isEqualTo("fe.amount");
              assertThat(e.storedVersion()).isEqualTo(1);
              assertThat(e.key()).isNotBlank();
              assertThat(e.getMessage())
                  .contains("storedType=fe.amount", "storedVersion=1", "key=", "tuid=");
            });
    ref.stop();
    // Nothing was lost: version 1 reads it as it was.
    ServerRef<String> again =
        d.start(new AmountV1Keeper(tuid, new AmountV1("other")), null, options(d).build());
    assertThat(get(again, AmountV1.class)).isEqualTo(new AmountV1("twelve"));
  }

  /** Takes casts into a state of type {@link AmountV2}. */
  static final class AmountV2Consumer implements DGenServer<AmountV2, String> {
    private final @Nullable Tuple tuid;

    /** A server under {@code tuid}; null: a hosted server, addressed by its id. */
    AmountV2Consumer(@Nullable Tuple tuid) {
      this.tuid = tuid;
    }

    @Override
    public InitResult<AmountV2> init(@Nullable Object arg) {
      return tuid == null ? InitResult.ok(new AmountV2(0)) : InitResult.ok(tuid, new AmountV2(0));
    }

    @Override
    public Result<AmountV2> handleCast(String m, AmountV2 s) {
      return Result.noReply(new AmountV2(s.amount() + Long.parseLong(m)));
    }

    @Override
    public Result<AmountV2> handleCall(String m, From from, AmountV2 s) {
      return Result.reply(s, s);
    }
  }

  @ParameterizedTest
  @EnumSource(StateEncoding.class)
  void anUndecodableState_stopsOnlyItsServer_andTheAdminApiShowsAndReplacesIt(
      StateEncoding encoding) {
    Tuple broken = Tuple.from("fe", "broken");
    Tuple healthy = Tuple.from("fe", "healthy");
    List<UndecodableDataException> heard = new CopyOnWriteArrayList<>();
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    DGen d =
        DGen.builder(backend)
            .stateEncoding(encoding)
            .meterRegistry(meters)
            .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(50))
            .listener(
                new DGenListener() {
                  @Override
                  public void stateUndecodable(ServerRef<?> server, UndecodableDataException e) {
                    heard.add(e);
                  }
                })
            .build();
    runtimes.add(d);
    d.start(new AmountV1Keeper(broken, new AmountV1("twelve")), null, options(d).build()).stop();
    ServerRef<String> other = d.start(new AmountV2Consumer(healthy), null, options(d).build());
    ProcessRef<String> ref = d.start(new AmountV2Consumer(broken), null, options(d).build());
    ref.cast("5");
    assertThat(ref.termination()).failsWithin(Duration.ofSeconds(30));
    assertThat(ref.isAlive()).isFalse();
    assertThat(heard).singleElement().satisfies(e -> assertThat(e.server()).contains("broken"));
    assertThat(
            meters
                .get("dgen.state.undecodable")
                .tag("server", AmountV2Consumer.class.getName())
                .counter()
                .count())
        .isEqualTo(1);
    // Only it: another server of the same runtime goes on.
    other.cast("3");
    await().atMost(Duration.ofSeconds(30)).until(() -> get(other, AmountV2.class).amount() == 3);

    ServerAdmin admin =
        new DGenAdmin(backend)
            .tenant(tenant.path().toArray(String[]::new))
            .orElseThrow()
            .server(broken)
            .orElseThrow();
    JsonNode raw = admin.state().orElseThrow();
    assertThat(raw.get("amount").asString()).isEqualTo("twelve"); // the raw tree, kept
    assertThat(admin.stateType()).hasValue("fe.amount");
    JsonNode fixed = new ObjectMapper().createObjectNode().put("amount", 12);
    assertThat(admin.replaceState(fixed, "fe.amount", fixed)).isFalse(); // not what is stored
    assertThat(admin.state()).hasValue(raw);
    assertThat(admin.replaceState(fixed, "fe.amount", raw)).isTrue();
    ServerRef<String> again = d.start(new AmountV2Consumer(broken), null, options(d).build());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                ServerControl.of(again).queueLength() == 0
                    && get(again, AmountV2.class).amount() == 17);
  }

  /**
   * A hosted server whose stored state no longer decodes stops, and is not loaded again by every
   * message (each load fails and logs): it waits out a backoff, the admin API shows it stuck (so do
   * {@code dgen inspect} and the dashboard), and a repair of its state loads it again at once, from
   * a runtime that does not host its kind.
   */
  @Test
  void aHostedServerWithAnUndecodableState_backsOff_isShownStuck_andARepairLoadsItAtOnce() {
    String[] path = tenant.path().toArray(String[]::new);
    Tuple tuid = Tuple.from("fe-hosted", 1L);
    DGen v1 = runtime(StateEncoding.STRUCTURED);
    v1.host(
        "fe-hosted",
        () -> new AmountV1Keeper(null, new AmountV1("twelve")),
        HostOptions.builder(v1.tenant(path)).build());
    ServerRef<String> viaV1 = v1.ref(v1.tenant(path), "fe-hosted", Tuple.from(1L));
    assertThat(viaV1.call("get", AmountV1.class, Duration.ofSeconds(30)))
        .isEqualTo(new AmountV1("twelve"));
    v1.close(); // its buckets are released at once

    List<UndecodableDataException> heard = new CopyOnWriteArrayList<>();
    DGen v2 =
        DGen.builder(backend)
            // a stuck server's next load would come a minute later: the repair must not wait
            .retryBackoff(Duration.ofMillis(1), Duration.ofMinutes(1))
            .listener(
                new DGenListener() {
                  @Override
                  public void stateUndecodable(ServerRef<?> server, UndecodableDataException e) {
                    heard.add(e);
                  }
                })
            .build();
    runtimes.add(v2);
    v2.host(
        "fe-hosted",
        () -> new AmountV2Consumer(null),
        HostOptions.builder(v2.tenant(path)).build());
    ServerRef<String> client = dgen.ref(tenant, "fe-hosted", Tuple.from(1L)); // hosts nothing
    client.cast("5");
    ServerAdmin admin =
        new DGenAdmin(backend).tenant(path).orElseThrow().server(tuid).orElseThrow();
    await().atMost(Duration.ofSeconds(60)).until(() -> admin.stuck().isPresent());
    assertThat(admin.stuck().orElseThrow().reason()).contains("fe.amount");
    assertThat(admin.stuck().orElseThrow().member()).isEqualTo(v2.memberId().toString());

    ServerRef<String> local = v2.ref(v2.tenant(path), "fe-hosted", Tuple.from(1L));
    for (int i = 0; i < 20; i++) {
      local.cast("1"); // each would load it again straight after its push, and fail again
    }
    await()
        .during(Duration.ofMillis(500))
        .atMost(Duration.ofSeconds(10))
        .until(() -> heard.size() == 1);
    assertThat(admin.queueLength()).isEqualTo(21);

    JsonNode raw = admin.state().orElseThrow();
    JsonNode fixed = new ObjectMapper().createObjectNode().put("amount", 12);
    assertThat(admin.replaceState(fixed, "fe.amount", raw)).isTrue();

    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                admin.queueLength() == 0
                    && client.call("get", AmountV2.class, Duration.ofSeconds(30)).amount() == 37);
    assertThat(admin.stuck()).isEmpty();
  }

  @ParameterizedTest
  @EnumSource(StateEncoding.class)
  void messages_gainAndLoseFields_andAnIncompatibleOneIsMovedAsideWithItsBytes(
      StateEncoding encoding) {
    DGen d = runtime(encoding);
    ProcessRef<Object> publisher =
        d.start(
            new Recorder(),
            null,
            options(d).consume(false).allowTypes(OrderV1.class, CountV1.class).build());
    publisher.cast(new OrderV1("pen", "gone"));
    publisher.cast(new CountV1("twelve"));
    publisher.stop();
    ProcessRef<Object> consumer =
        d.start(new Recorder(), null, options(d).allowTypes(OrderV2.class, CountV2.class).build());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                ServerControl.of(consumer).queueLength() == 0
                    && ServerControl.of(consumer).deadLetters().size() == 1);
    assertThat(get(consumer, Seen.class).items())
        .containsExactly(new OrderV2("pen", 0, null).toString());
    DeadLetter<Object> aside = ServerControl.of(consumer).deadLetters().get(0);
    assertThat(aside.message()).isNull();
    assertThat(aside.lastError())
        .contains(
            "UndecodableDataException", "storedType=fe.count", "storedVersion=1", "key=", "tuid=");
    consumer.stop();
    // Its bytes are kept: version 1 takes it back and applies it.
    ServerRef<Object> v1 =
        d.start(new Recorder(), null, options(d).allowTypes(OrderV1.class, CountV1.class).build());
    assertThat(ServerControl.of(v1).requeueDeadLetter(aside.id(), false)).isTrue();
    await().atMost(Duration.ofSeconds(30)).until(() -> get(v1, Seen.class).items().size() == 2);
    assertThat(get(v1, Seen.class).items()).last().isEqualTo(new CountV1("twelve").toString());
  }

  /** The keeper's state, asked with a call whose reply type is picked here. */
  private static <R> R get(ServerRef<? super String> keeper, Class<R> type) {
    return keeper.call("get", type, Duration.ofSeconds(30));
  }
}

package io.dgen.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.apple.foundationdb.tuple.Tuple;
import io.dgen.DGen;
import io.dgen.HostOptions;
import io.dgen.Tenant;
import io.dgen.backend.memory.MemoryBackend;
import io.dgen.spring.Tally.Identify;
import io.dgen.spring.Tally.Summary;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Scope;
import org.springframework.mock.env.MockEnvironment;

/** Kinds hosted by annotation: the instances they get, their options, and refused ones. */
class DGenHostedTest {

  private static final Duration WAIT = Duration.ofSeconds(20);

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(DGenAutoConfiguration.class))
          .withPropertyValues("dgen.backend=memory", "dgen.buckets=16");

  @Configuration(proxyBeanMethods = false)
  static class SharedAndFresh {
    @Bean
    @DGenHosted(kind = "shared", tenant = "test/hosting")
    Tally shared() {
      return new Tally();
    }

    @Bean
    @Scope("prototype")
    @DGenHosted(kind = "fresh", tenant = "test/hosting")
    Tally fresh() {
      return new Tally();
    }
  }

  @Test
  void aSingleton_isSharedByEveryServer_aPrototype_givesEachItsOwn() {
    runner
        .withUserConfiguration(SharedAndFresh.class)
        .run(
            ctx -> {
              DGen dgen = ctx.getBean(DGen.class);
              Tenant tenant = dgen.tenant("test", "hosting");
              assertThat(ctx.getBean(DGenLifecycle.class).hostedKinds())
                  .extracting(DGenLifecycle.HostedKind::kind)
                  .containsExactlyInAnyOrder("shared", "fresh");

              Set<Long> shared = identities(dgen, tenant, "shared");
              assertThat(shared)
                  .containsExactly((long) System.identityHashCode(ctx.getBean("shared")));

              Set<Long> fresh = identities(dgen, tenant, "fresh");
              assertThat(fresh).hasSize(3).doesNotContainAnyElementsOf(shared);
            });
  }

  /** The behaviour instances that answered one call to each of three servers of {@code kind}. */
  private static Set<Long> identities(DGen dgen, Tenant tenant, String kind) {
    Set<Long> seen = new HashSet<>();
    for (long id = 1; id <= 3; id++) {
      seen.add(dgen.ref(tenant, kind, Tuple.from(id)).call(new Identify(), WAIT));
    }
    return seen;
  }

  @Test
  void aHostedKind_appliesMessagesFromRefs() {
    runner
        .withUserConfiguration(SharedAndFresh.class)
        .run(
            ctx -> {
              DGen dgen = ctx.getBean(DGen.class);
              Tenant tenant = dgen.tenant("test", "hosting");
              var ref = dgen.<Tally.Msg>ref(tenant, "shared", Tuple.from("a"));
              ref.castAll(List.of(new Tally.Add(1), new Tally.Add(2), new Tally.Add(3)));
              Summary s = ref.call(new Tally.Summarize(), WAIT);
              assertThat(s).isEqualTo(new Summary(3, 3, 1, 3));
            });
  }

  @Configuration(proxyBeanMethods = false)
  static class Typed {
    @Bean
    @DGenHosted(kind = "ledger", tenant = "test/typed")
    Ledger ledger() {
      return new Ledger();
    }

    @Bean
    @DGenHosted(kind = "by-name", tenant = "test/typed")
    Ledger byName() {
      return new Ledger(); // declares no Kind of this name: hosted by name
    }
  }

  @Test
  void aBeanWhoseClassDeclaresItsKind_isHostedByIt_andInitGetsThePlainId() {
    runner
        .withUserConfiguration(Typed.class)
        .run(
            ctx -> {
              DGen dgen = ctx.getBean(DGen.class);
              Tenant tenant = dgen.tenant("test", "typed");
              assertThat(
                      dgen.ref(tenant, Ledger.KIND, "alice")
                          .call(new Ledger.Id(), String.class, WAIT))
                  .isEqualTo("alice:String");
              assertThat(
                      dgen.<Ledger.Msg>ref(tenant, "by-name", Tuple.from("bob"))
                          .call(new Ledger.Id(), String.class, WAIT))
                  .isEqualTo("(\"bob\"):Tuple");
            });
  }

  @DGenHosted(
      kind = "${test.kind:account}",
      tenant = "acme/${test.tenant:bank}",
      consumeK = 8,
      deadLetterThreshold = 3,
      lockTimeout = "30s",
      idleTimeout = "PT10M",
      expireAfter = "${test.expiry:1h}",
      callTimeout = "1500ms",
      idempotencyRetention = "${test.retention:2d}",
      cache = false,
      holdBuckets = false,
      allowTypes = Summary.class)
  static final class AllAttributes {}

  @DGenHosted(kind = "k", tenant = "t")
  static final class NoAttributes {}

  @Test
  void everyAttribute_becomesItsStartOption_withPlaceholdersResolved() {
    MockEnvironment env = new MockEnvironment().withProperty("test.tenant", "branch");
    HostedBean bean =
        HostedBean.resolve("bean", AllAttributes.class.getAnnotation(DGenHosted.class), env);
    assertThat(bean.kind()).isEqualTo("account");
    assertThat(bean.tenant()).containsExactly("acme", "branch");
    try (MemoryBackend backend = MemoryBackend.create();
        DGen dgen = DGen.builder(backend).build()) {
      HostOptions o = bean.options(dgen.tenant(bean.tenantPath()));
      assertThat(o.consumeK()).isEqualTo(8);
      assertThat(o.deadLetterThreshold()).hasValue(3);
      assertThat(o.lockTimeout()).hasValue(Duration.ofSeconds(30));
      assertThat(o.idleTimeout()).isEqualTo(Duration.ofMinutes(10));
      assertThat(o.expireAfter()).hasValue(Duration.ofHours(1));
      assertThat(o.callTimeout()).isEqualTo(Duration.ofMillis(1500));
      assertThat(o.idempotencyRetention()).isEqualTo(Duration.ofDays(2));
      assertThat(o.cache()).isFalse();
      assertThat(o.holdsBuckets()).isFalse();
      assertThat(o.allowedTypes()).containsExactly(Summary.class);

      HostOptions defaults =
          HostedBean.resolve("b", NoAttributes.class.getAnnotation(DGenHosted.class), env)
              .options(dgen.tenant("t"));
      HostOptions runtimes = HostOptions.builder(dgen.tenant("t")).build();
      assertThat(defaults.consumeK()).isEqualTo(runtimes.consumeK());
      assertThat(defaults.deadLetterThreshold()).isEqualTo(runtimes.deadLetterThreshold());
      assertThat(defaults.lockTimeout()).isEqualTo(runtimes.lockTimeout());
      assertThat(defaults.idleTimeout()).isEqualTo(runtimes.idleTimeout());
      assertThat(defaults.expireAfter()).isEqualTo(runtimes.expireAfter()).isEmpty();
      assertThat(defaults.callTimeout()).isEqualTo(runtimes.callTimeout());
      assertThat(defaults.idempotencyRetention()).isEqualTo(runtimes.idempotencyRetention());
      assertThat(defaults.cache()).isEqualTo(runtimes.cache());
      assertThat(defaults.holdsBuckets()).isEqualTo(runtimes.holdsBuckets());
    }
  }

  @DGenHosted(kind = "k", tenant = "t", idleTimeout = "soon")
  static final class NotADuration {}

  @DGenHosted(kind = "k", tenant = "t", consumeK = 0)
  static final class ZeroConsumeK {}

  @DGenHosted(kind = "k", tenant = "acme//bank")
  static final class EmptyTenantElement {}

  @DGenHosted(kind = " ", tenant = "t")
  static final class BlankKind {}

  @Test
  void aRefusedAttribute_failsNamingTheBeanAndTheAttribute() {
    MockEnvironment env = new MockEnvironment();
    try (MemoryBackend backend = MemoryBackend.create();
        DGen dgen = DGen.builder(backend).build()) {
      Tenant t = dgen.tenant("t");
      assertThatThrownBy(
              () ->
                  HostedBean.resolve(
                          "late", NotADuration.class.getAnnotation(DGenHosted.class), env)
                      .options(t))
          .hasMessage(
              "bean 'late': @DGenHosted(idleTimeout = \"soon\") is refused: not a duration;"
                  + " write e.g. \"500ms\", \"30s\", \"10m\" or \"PT30S\"");
      assertThatThrownBy(
              () ->
                  HostedBean.resolve(
                          "zero", ZeroConsumeK.class.getAnnotation(DGenHosted.class), env)
                      .options(t))
          .hasMessageContaining("bean 'zero': @DGenHosted(consumeK = 0) is refused")
          .hasMessageContaining("consumeK must be at least 1");
    }
    assertThatThrownBy(
            () ->
                HostedBean.resolve(
                    "gap", EmptyTenantElement.class.getAnnotation(DGenHosted.class), env))
        .hasMessageContaining("bean 'gap': @DGenHosted(tenant = \"acme//bank\") is refused");
    assertThatThrownBy(
            () -> HostedBean.resolve("blank", BlankKind.class.getAnnotation(DGenHosted.class), env))
        .hasMessageContaining("bean 'blank': @DGenHosted(kind = \" \") is refused");
  }

  @Configuration(proxyBeanMethods = false)
  static class NotAServer {
    @Bean
    @DGenHosted(kind = "k", tenant = "t")
    String notAServer() {
      return "no";
    }
  }

  @Test
  void anAnnotatedBeanThatIsNoServer_failsTheStartup() {
    runner
        .withUserConfiguration(NotAServer.class)
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining(
                        "bean 'notAServer' is annotated @DGenHosted but is not a DGenServer"));
  }

  @Configuration(proxyBeanMethods = false)
  static class TwiceTheSameKind {
    @Bean
    @DGenHosted(kind = "k", tenant = "t")
    Tally first() {
      return new Tally();
    }

    @Bean
    @DGenHosted(kind = "k", tenant = "t")
    Tally second() {
      return new Tally();
    }
  }

  @Test
  void twoBeansOfOneKindInOneTenant_failTheStartup_namingTheSecond() {
    runner
        .withUserConfiguration(TwiceTheSameKind.class)
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("cannot host bean '")
                    .hasStackTraceContaining("(@DGenHosted kind=k, tenant=[t])"));
  }
}

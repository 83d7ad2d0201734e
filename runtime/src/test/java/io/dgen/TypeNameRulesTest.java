package io.dgen;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dgen.backend.KeyValue;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Mistakes in names and migrations are refused where they are made — at {@code build()}, {@code
 * start} or {@code host} — with a message that says what to add, and before anything is written.
 */
class TypeNameRulesTest extends RuntimeTestBase {

  @TypeName(value = "rules.state", version = 3)
  record StateV3(long n) {}

  static final class NeedsSteps implements DGenServer<StateV3, String> {
    @Override
    public InitResult<StateV3> init(@Nullable Object arg) {
      return InitResult.ok(new StateV3(0));
    }
  }

  sealed interface Clash {}

  @TypeName("rules.same")
  record First() implements Clash {}

  @TypeName(value = "rules.other", aliases = "rules.same")
  record Second() implements Clash {}

  static final class Clashing implements DGenServer<Long, Clash> {
    @Override
    public InitResult<Long> init(@Nullable Object arg) {
      return InitResult.ok(0L);
    }
  }

  /**
   * The renamed class and the class it renames, both still declared: the old name is claimed twice.
   */
  sealed interface Both permits Renamed, Old {}

  @TypeName(value = "rules.renamed", aliases = "io.dgen.TypeNameRulesTest$Old")
  record Renamed() implements Both {}

  record Old() implements Both {}

  static final class Overlapping implements DGenServer<Long, Both> {
    @Override
    public InitResult<Long> init(@Nullable Object arg) {
      return InitResult.ok(0L);
    }
  }

  @TypeName("bad#name")
  record BadName() {}

  static final class BadlyNamed implements DGenServer<BadName, String> {
    @Override
    public InitResult<BadName> init(@Nullable Object arg) {
      return InitResult.ok(new BadName());
    }
  }

  private List<KeyValue> everything() {
    return backend.run(
        tx -> tx.getRange(tenant.subspace().range().begin, tenant.subspace().range().end));
  }

  @Test
  void build_refusesAGapAmongATypesSteps() {
    DGen.Builder b =
        DGen.builder(backend)
            .migration("rules.state", 1, t -> t)
            .migration("rules.state", 3, t -> t);
    assertThatThrownBy(b::build)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'rules.state'")
        .hasMessageContaining("the step from version 2 is missing");
  }

  @Test
  void migration_refusesTheSameStepTwiceAndVersionsBelowOne() {
    DGen.Builder b = DGen.builder(backend).migration("rules.state", 1, t -> t);
    assertThatThrownBy(() -> b.migration("rules.state", 1, t -> t))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("registered already");
    assertThatThrownBy(() -> b.migration("rules.state", 0, t -> t))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("versions start at 1");
  }

  @Test
  void startAndHost_refuseATypeWithoutEveryStepBelowItsVersion_beforeWritingAnything() {
    try (DGen d = DGen.builder(backend).migration("rules.state", 1, t -> t).build()) {
      Tenant t = d.tenant(tenant.path().toArray(String[]::new));
      assertThatThrownBy(() -> d.start(new NeedsSteps(), null, StartOptions.builder(t).build()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'rules.state'")
          .hasMessageContaining("is at version 3 but no migration from version 2")
          .hasMessageContaining("migration(\"rules.state\", 2,");
      assertThatThrownBy(() -> d.host("needs", NeedsSteps::new, HostOptions.builder(t).build()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("no migration from version 2");
    }
    assertThat(everything()).isEmpty();
  }

  @Test
  void start_refusesTwoClassesClaimingOneName() {
    assertThatThrownBy(() -> dgen.start(new Clashing(), null, StartOptions.builder(tenant).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'rules.same' is claimed by both");
    assertThat(everything()).isEmpty();
  }

  @Test
  void start_refusesAnAliasNamingAnotherDeclaredClass() {
    assertThatThrownBy(
            () -> dgen.start(new Overlapping(), null, StartOptions.builder(tenant).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'io.dgen.TypeNameRulesTest$Old' is claimed by both");
  }

  @Test
  void start_refusesAnInvalidLogicalName() {
    assertThatThrownBy(
            () -> dgen.start(new BadlyNamed(), null, StartOptions.builder(tenant).build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'bad#name' is not a valid type name");
  }
}

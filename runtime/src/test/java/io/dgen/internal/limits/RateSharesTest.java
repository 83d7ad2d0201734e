package io.dgen.internal.limits;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class RateSharesTest {

  private static final UUID A = new UUID(0, 1);
  private static final UUID B = new UUID(0, 2);
  private static final UUID C = new UUID(0, 3);
  private static final RateShares.Demand IDLE = new RateShares.Demand(false, 0, 0);

  private static RateShares.Demand hungry(int weight) {
    return new RateShares.Demand(true, weight, 0);
  }

  @Test
  void split_oneMember_getsTheWholeRate_busyOrIdle() {
    assertThat(RateShares.split(50, Map.of(A, IDLE))).containsEntry(A, 50.0);
    assertThat(RateShares.split(50, Map.of(A, hungry(3)))).containsEntry(A, 50.0);
  }

  @Test
  void split_hungryMembers_shareByTheirWaitingServers() {
    Map<UUID, Double> s = RateShares.split(100, Map.of(A, hungry(1), B, hungry(3)));
    assertThat(s.get(A)).isCloseTo(25, within(1e-9));
    assertThat(s.get(B)).isCloseTo(75, within(1e-9));
  }

  @Test
  void split_busyAndIdle_givesTheIdleOneItsFloorOnly() {
    Map<UUID, Double> s = RateShares.split(100, Map.of(A, hungry(4), B, IDLE));
    assertThat(s.get(B)).isCloseTo(100 * RateShares.FLOOR / 2, within(1e-9));
    assertThat(s.get(A) + s.get(B)).isCloseTo(100, within(1e-9));
  }

  @Test
  void split_lightMember_getsTwiceWhatItTook_andTheRestGoesToTheHungry() {
    Map<UUID, Double> s =
        RateShares.split(
            100, Map.of(A, hungry(1), B, hungry(1), C, new RateShares.Demand(false, 0, 10)));
    double floor = 100 * RateShares.FLOOR / 3;
    assertThat(s.get(C)).isCloseTo(floor + 20, within(1e-9));
    assertThat(s.get(A)).isCloseTo((100 - floor - 20) / 2, within(1e-9));
    assertThat(s.values().stream().mapToDouble(Double::doubleValue).sum())
        .isCloseTo(100, within(1e-9));
  }

  @Test
  void split_whatNobodyWants_isSharedEqually() {
    Map<UUID, Double> s = RateShares.split(100, Map.of(A, IDLE, B, IDLE));
    assertThat(s.get(A)).isCloseTo(50, within(1e-9));
    assertThat(s.get(B)).isCloseTo(50, within(1e-9));
  }
}

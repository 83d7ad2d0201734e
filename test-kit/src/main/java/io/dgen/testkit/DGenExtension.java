package io.dgen.testkit;

import io.dgen.DGen;
import java.util.Set;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A JUnit 5 extension that gives each test a fresh {@link TestKit}: a {@link DGen} over a new
 * memory backend with a {@link ManualClock}, closed after the test. Test methods (and {@code
 * BeforeEach} methods) declare a parameter of type {@link TestKit}, {@link DGen} or {@link
 * ManualClock}; within one test they all belong to the same kit.
 *
 * <pre>{@code
 * @ExtendWith(DGenExtension.class)
 * class CounterTest {
 *   @Test
 *   void counts(TestKit kit) {
 *     ServerRef<Counter.Msg> ref = kit.start(new Counter(), null);
 *     ref.cast(new Counter.Increment(2));
 *     kit.drain(ref);
 *     assertThat(ref.<Integer>call(new Counter.Get())).isEqualTo(2);
 *   }
 * }
 * }</pre>
 */
public final class DGenExtension implements ParameterResolver, AfterEachCallback {

  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(DGenExtension.class);
  private static final Set<Class<?>> TYPES = Set.of(TestKit.class, DGen.class, ManualClock.class);

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    return TYPES.contains(parameter.getParameter().getType());
  }

  @Override
  public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
    TestKit kit = kit(context);
    Class<?> type = parameter.getParameter().getType();
    if (type == DGen.class) {
      return kit.dgen();
    }
    if (type == ManualClock.class) {
      return kit.clock();
    }
    return kit;
  }

  private static TestKit kit(ExtensionContext context) {
    // the method's context: BeforeEach methods and the test share one kit
    return context
        .getStore(NS)
        .computeIfAbsent(TestKit.class, k -> TestKit.create(), TestKit.class);
  }

  @Override
  public void afterEach(ExtensionContext context) {
    TestKit kit = context.getStore(NS).remove(TestKit.class, TestKit.class);
    if (kit != null) {
      kit.close();
    }
  }
}

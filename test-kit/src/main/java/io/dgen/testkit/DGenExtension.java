package io.dgen.testkit;

import io.dgen.DGen;
import java.util.Set;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A JUnit Jupiter extension that gives each test a fresh {@link TestKit}: a {@link DGen} over a new
 * memory backend with a {@link ManualClock}, closed after the test. Test methods (and {@code
 * BeforeEach} methods) declare a parameter of type {@link TestKit}, {@link DGen} or {@link
 * ManualClock}; within one test they all belong to the same kit.
 *
 * <p>The test kit declares JUnit's Jupiter API in {@code provided} scope: it runs on the JUnit your
 * build declares, JUnit 6 (which DGen is built and tested with) or JUnit 5.x, and never changes its
 * version.
 *
 * <pre>{@code
 * @ExtendWith(DGenExtension.class)
 * class CounterTest {
 *   @Test
 *   void counts(TestKit kit) {
 *     ServerRef<Counter.Msg> ref = kit.start(new Counter(), null);
 *     ref.cast(new Counter.Increment(2));
 *     kit.drain(ref);
 *     assertThat(ref.call(new Counter.Get())).isEqualTo(2L); // Get implements Call<Long>
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
    // The method's context: BeforeEach methods and the test share one kit. Its parameters are
    // resolved one after another, so get-then-put needs no lock; and unlike computeIfAbsent
    // (JUnit 6 only) both calls exist in JUnit 5 too.
    ExtensionContext.Store store = context.getStore(NS);
    TestKit kit = store.get(TestKit.class, TestKit.class);
    if (kit == null) {
      kit = TestKit.create();
      store.put(TestKit.class, kit);
    }
    return kit;
  }

  @Override
  public void afterEach(ExtensionContext context) {
    TestKit kit = context.getStore(NS).remove(TestKit.class, TestKit.class);
    if (kit != null) {
      kit.close();
    }
  }
}

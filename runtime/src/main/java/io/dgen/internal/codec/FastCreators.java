package io.dgen.internal.codec;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Constructor;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.BeanDescription;
import tools.jackson.databind.DeserializationConfig;
import tools.jackson.databind.DeserializationContext;
import tools.jackson.databind.deser.ValueInstantiator;
import tools.jackson.databind.deser.ValueInstantiators;
import tools.jackson.databind.deser.std.StdValueInstantiator;
import tools.jackson.databind.introspect.AnnotatedConstructor;
import tools.jackson.databind.module.SimpleModule;

/**
 * Calls the constructors of property-based creators (every record, and classes with a
 * {@code @JsonCreator} constructor) through a spreading {@link MethodHandle} made once per type.
 *
 * <p>Jackson 3.3 calls such a constructor with {@code MethodHandle.invokeWithArguments}, which
 * builds a spreader for every call: a profile of a cast at consumeK 64 put 6 % of the CPU per
 * message there. Behaviour is Jackson's own: the same creator, the same arguments, an exception
 * from the constructor reported the way {@link StdValueInstantiator} reports it. Types whose
 * constructor cannot be unreflected keep Jackson's instantiator.
 */
final class FastCreators implements ValueInstantiators {

  private static final MethodType SPREAD = MethodType.methodType(Object.class, Object[].class);

  /** A module installing this on a mapper. */
  static SimpleModule module() {
    return new SimpleModule("dgen-fast-creators") {
      @Override
      public void setupModule(SetupContext context) {
        super.setupModule(context);
        context.addValueInstantiators(new FastCreators());
      }
    };
  }

  @Override
  public ValueInstantiator findValueInstantiator(
      DeserializationConfig config, BeanDescription.Supplier beanDescRef) {
    return null;
  }

  @Override
  public ValueInstantiator modifyValueInstantiator(
      DeserializationConfig config,
      BeanDescription.Supplier beanDescRef,
      ValueInstantiator defaultInstantiator) {
    if (defaultInstantiator.getClass() != StdValueInstantiator.class
        || !(defaultInstantiator.getWithArgsCreator() instanceof AnnotatedConstructor creator)) {
      return defaultInstantiator;
    }
    Constructor<?> constructor = creator.getAnnotated();
    MethodHandle spread;
    try {
      spread =
          MethodHandles.lookup()
              .unreflectConstructor(constructor)
              .asSpreader(Object[].class, constructor.getParameterCount())
              .asType(SPREAD);
    } catch (IllegalAccessException | RuntimeException e) {
      return defaultInstantiator; // not accessible to us: Jackson's own path works as before
    }
    return new Spreading((StdValueInstantiator) defaultInstantiator, spread);
  }

  /** Jackson's instantiator with the with-args creator called through a prepared spreader. */
  private static final class Spreading extends StdValueInstantiator {
    private final MethodHandle spread;

    Spreading(StdValueInstantiator src, MethodHandle spread) {
      super(src);
      this.spread = spread;
    }

    @Override
    public Object createFromObjectWith(DeserializationContext ctxt, Object[] args)
        throws JacksonException {
      try {
        return (Object) spread.invokeExact(args);
      } catch (Exception e) {
        return ctxt.handleInstantiationProblem(_valueClass, args, rewrapCtorProblem(ctxt, e));
      } catch (Error e) {
        throw e;
      } catch (Throwable t) {
        throw new IllegalStateException(t);
      }
    }
  }
}

package io.dgen;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a package (or type) that is DGen's own inside, not an API: its public types are public so
 * that DGen's packages can use each other, and may change or go in any release without notice.
 * Applications use {@code io.dgen} and {@code io.dgen.admin}.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target({ElementType.PACKAGE, ElementType.TYPE})
public @interface InternalApi {}

/**
 * A Spring Boot REST service on DGen: accounts hosted by annotation, reached through refs. See
 * {@code docs/spring.md}.
 */
@NullMarked
package io.dgen.examples.spring;

import org.jspecify.annotations.NullMarked;

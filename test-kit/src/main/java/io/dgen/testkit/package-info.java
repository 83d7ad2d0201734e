/**
 * The DGen test kit: test your servers deterministically, in the test's own thread. {@link
 * io.dgen.testkit.TestKit} is a runtime over a fresh memory backend and a {@link
 * io.dgen.testkit.ManualClock} whose queues are consumed only when the test drains them; {@link
 * io.dgen.testkit.DGenExtension} gives each JUnit Jupiter test one. The kit declares JUnit in
 * {@code provided} scope: add {@code junit-jupiter} (JUnit 6, or 5.x) to your own test
 * dependencies.
 */
@NullMarked
package io.dgen.testkit;

import org.jspecify.annotations.NullMarked;

package io.dgen.spring.app;

import io.dgen.spring.DGenHosted;
import io.dgen.spring.Tally;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Component;

/** An application as a user writes one: the starter and a behaviour hosted by annotation. */
@SpringBootApplication
public class TestApplication {

  /** Hosted as kind {@code tally} in tenant {@code app/test}. */
  @Component
  @DGenHosted(kind = "tally", tenant = "app/test", consumeK = 8)
  public static class HostedTally extends Tally {}
}

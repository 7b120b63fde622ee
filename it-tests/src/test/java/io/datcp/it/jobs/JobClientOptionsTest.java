package io.datcp.it.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Options;
import org.junit.jupiter.api.Test;

class JobClientOptionsTest {
  private static final Options OPTIONS = new Options()
      .addOption(JobClientOptions.required("spec", "FILE", "the spec"))
      .addOption(JobClientOptions.optional("rounds", "N", "rounds"));

  @Test
  void parsesLongOptionsWithTheirValues() throws Exception {
    CommandLine line = JobClientOptions.parse(OPTIONS, new String[] {"--spec", "s.json",
        "--rounds", "3"});
    assertThat(line.getOptionValue("spec")).isEqualTo("s.json");
    assertThat(JobClientOptions.integer(line, "rounds", 1, 1, 99)).isEqualTo(3);
  }

  @Test
  void anAbsentOptionalIntegerIsItsDefault() throws Exception {
    CommandLine line = JobClientOptions.parse(OPTIONS, new String[] {"--spec", "s.json"});
    assertThat(JobClientOptions.integer(line, "rounds", 1, 1, 99)).isEqualTo(1);
  }

  @Test
  void badCommandLinesNameWhatIsWrong() throws Exception {
    assertThatThrownBy(() -> JobClientOptions.parse(OPTIONS, new String[] {}))
        .isInstanceOf(JobClientOptions.UsageException.class).hasMessageContaining("spec");
    assertThatThrownBy(() -> JobClientOptions.parse(OPTIONS, new String[] {"--spec", "s",
        "--colour", "red"})).isInstanceOf(JobClientOptions.UsageException.class)
        .hasMessageContaining("colour");
    assertThatThrownBy(() -> JobClientOptions.parse(OPTIONS, new String[] {"--spec", "s",
        "extra"})).hasMessage("unexpected argument: extra");
    for (String bad : new String[] {"0", "100", "two"}) {
      CommandLine line = JobClientOptions.parse(OPTIONS, new String[] {"--spec", "s",
          "--rounds", bad});
      assertThatThrownBy(() -> JobClientOptions.integer(line, "rounds", 1, 1, 99))
          .hasMessage("--rounds: must be an integer in [1, 99], not '" + bad + "'");
    }
  }
}

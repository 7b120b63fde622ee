package io.datcp.it.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.it.jobs.WorkloadSpec.JobSpec;
import java.io.File;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class WorkloadSpecTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static WorkloadSpec parse(String json) throws Exception {
    return WorkloadSpec.parse(JSON.readTree(json.replace('\'', '"')));
  }

  private static String oneJob(String extra) {
    return "{'name': 's', 'hosts': 4, 'jobs': [{'name': 'j1', 'submit_s': 0, 'maps': 4, 'reduces': 2,"
        + " 'partition_bytes': 1000" + extra + "}]}";
  }

  @Test
  void defaultsAndBytes() throws Exception {
    WorkloadSpec spec = parse(oneJob(", 'map_seconds': 1.5, 'deadline_s': 9"));
    assertThat(spec.cluster()).isEqualTo("shared");
    assertThat(spec.barrier()).isFalse();
    JobSpec j = spec.jobs().get(0);
    assertThat(j.slowMaps()).isEqualTo(4);
    assertThat(j.queue()).isEqualTo("default");
    assertThat(j.deadlineS()).isEqualTo(9.0);
    assertThat(j.bytesPerReduce()).containsExactly(1000, 1000);
    assertThat(j.shuffleBytes()).isEqualTo(8000);
    JobSpec perReduce = parse(oneJob(", 'reduce_bytes': [5, 0]")).jobs().get(0);
    assertThat(perReduce.bytesPerReduce()).containsExactly(5, 0);
    assertThat(perReduce.shuffleBytes()).isEqualTo(20);
  }

  @Test
  void theCommittedAbSpecIsTheAbScenario() throws Exception {
    Path root = Path.of(System.getProperty("user.dir")).resolve("..");
    WorkloadSpec ab = WorkloadSpec.read(root.resolve("docker/workloads/ab.json").toFile());
    assertThat(ab.cluster()).isEqualTo("ab");
    assertThat(ab.barrier()).isTrue();
    JobSpec a = ab.jobs().get(0);
    JobSpec b = ab.jobs().get(1);
    assertThat(new int[] {a.maps(), a.reduces(), a.slowMaps(), b.maps(), b.reduces()})
        .containsExactly(4, 1, 2, 2, 1);
    assertThat(a.mapSeconds()).isEqualTo(5.0);
    assertThat(a.partitionBytes()).isEqualTo(10_000_000);
    assertThat(b.partitionBytes()).isEqualTo(10_000_000);
  }

  @Test
  void everyCommittedSpecParses() throws Exception {
    File dir = Path.of(System.getProperty("user.dir")).resolve("../docker/workloads").toFile();
    File[] specs = dir.listFiles((d, n) -> n.endsWith(".json"));
    assertThat(specs).isNotEmpty();
    for (File f : specs) {
      assertThat(WorkloadSpec.read(f).jobs()).as(f.getName()).isNotEmpty();
    }
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
    "{'jobs': []}|name: is required",
    "{'name': 's', 'jobs': []}|jobs: must be a non-empty list",
    "{'name': 's', 'jobs': [], 'colour': 1}|colour: unknown key",
    "{'name': 's', 'cluster': 'big', 'jobs': [{}]}|cluster: must be \"shared\" or \"ab\"",
    "{'name': 's', 'barrier': 1, 'jobs': [{}]}|barrier: must be true or false",
    "{'name': 's', 'hosts': 0, 'jobs': [{}]}|hosts: must be an integer >= 1",
    "{'name': 's', 'link_mbit': 0, 'jobs': [{}]}|link_mbit: must be a number > 0",
    "{'name': 's', 'jobs': [{'name': 'a b'}]}|jobs[0].name: must match",
    "{'name': 's', 'jobs': [{'name': 'a'}]}|jobs[0].submit_s: is required",
  })
  void badTopLevelIsRejectedNamingTheField(String json, String message) {
    assertThatThrownBy(() -> parse(json)).isInstanceOf(WorkloadSpec.SpecException.class)
        .hasMessageContaining(message);
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
    ", 'maps': 0|jobs[0].maps: must be an integer >= 1",
    ", 'speed': 3|jobs[0].speed: unknown key",
    ", 'map_seconds': -1|jobs[0].map_seconds: must be a number >= 0",
    ", 'slow_maps': 5|jobs[0].slow_maps: must be an integer in [0, maps]",
    ", 'deadline_s': 0|jobs[0].deadline_s: must be a number > 0",
    ", 'queue': 3|jobs[0].queue: must be a non-empty string",
    ", 'reduce_bytes': [1]|jobs[0].reduce_bytes: must be a list of 2 integers",
    ", 'reduce_bytes': [1, -1]|jobs[0].reduce_bytes[1]: must be an integer >= 0",
  })
  void badJobIsRejectedNamingTheField(String extra, String message) {
    // the later key wins in Jackson's tree: "maps": 0 replaces the 4 of oneJob
    assertThatThrownBy(() -> parse(oneJob(extra))).isInstanceOf(WorkloadSpec.SpecException.class)
        .hasMessageContaining(message);
  }

  @Test
  void placementIsCheckedAgainstHosts() throws Exception {
    String spec = "{'name': 's', 'hosts': 2, 'jobs': [{'name': 'j', 'submit_s': 0, 'maps': 2,"
        + " 'reduces': 1, 'partition_bytes': 1, 'map_hosts': [0, %s], 'reduce_hosts': [1]}]}";
    assertThat(parse(String.format(spec, "1")).hosts()).isEqualTo(2);
    assertThatThrownBy(() -> parse(String.format(spec, "2")))
        .hasMessageContaining("jobs[0].map_hosts[1]: must be an integer in [0, 1]");
  }

  @ParameterizedTest
  @CsvSource({"reduce_hosts", "reduce_bytes"})
  void placementFieldsNeedHosts(String field) {
    String spec = "{'name': 's', 'jobs': [{'name': 'j', 'submit_s': 0, 'maps': 1, 'reduces': 2,"
        + " 'partition_bytes': 1, '" + field + "': [0, 1]}]}";
    assertThatThrownBy(() -> parse(spec))
        .hasMessageContaining("jobs[0]." + field + ": needs the top-level \"hosts\"");
  }

  @Test
  void duplicateJobNamesAreRejected() {
    String job = "{'name': 'j', 'submit_s': 0, 'maps': 1, 'reduces': 1, 'partition_bytes': 1}";
    assertThatThrownBy(() -> parse("{'name': 's', 'jobs': [" + job + ", " + job + "]}"))
        .hasMessageContaining("jobs[1].name: \"j\" is not unique");
  }
}

package io.datcp.it.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * A workload spec (the JSON format of issue 16, validated in Python by
 * bench/datcpbench/workload.py): jobs submitted at offsets, each a {@link GeneratorJob} of known
 * shuffle bytes. Unknown keys, missing required keys and bad values are rejected with a message
 * naming the field, e.g. {@code jobs[3].maps: must be an integer >= 1}.
 */
public record WorkloadSpec(String name, List<JobSpec> jobs, boolean barrier, Integer hosts,
    String cluster) {
  public static final String SHARED = "shared";
  public static final String AB = "ab";
  private static final Set<String> TOP_KEYS = Set.of("name", "jobs", "barrier", "hosts",
      "cluster", "link_mbit");
  private static final Set<String> JOB_KEYS = Set.of("name", "submit_s", "maps", "reduces",
      "partition_bytes", "map_seconds", "slow_maps", "deadline_s", "queue", "user", "map_hosts",
      "reduce_hosts", "reduce_bytes");

  /** One job; {@code deadlineS} and {@code user} may be null. */
  public record JobSpec(String name, double submitS, int maps, int reduces,
      long partitionBytes, double mapSeconds, int slowMaps, Double deadlineS, String queue,
      String user, long[] reduceBytes) {
    /** Bytes each map writes for each reduce. */
    public long[] bytesPerReduce() {
      if (reduceBytes != null) {
        return reduceBytes.clone();
      }
      long[] b = new long[reduces];
      java.util.Arrays.fill(b, partitionBytes);
      return b;
    }

    /** Bytes the job's reduces receive in all: what its output must count. */
    public long shuffleBytes() {
      long sum = 0;
      for (long b : bytesPerReduce()) {
        sum += b;
      }
      return sum * maps;
    }
  }

  /** Thrown for a spec that breaks the format; the message names the field. */
  public static final class SpecException extends IllegalArgumentException {
    SpecException(String field, String problem) {
      super(field + ": " + problem);
    }
  }

  public static WorkloadSpec read(File file) throws IOException {
    return parse(new ObjectMapper().readTree(file));
  }

  public static WorkloadSpec parse(JsonNode root) {
    if (root == null || !root.isObject()) {
      throw new SpecException("(top level)", "must be a JSON object");
    }
    unknownKeys(root, TOP_KEYS, "");
    String name = string(root, "name", "name", true);
    boolean barrier = false;
    if (root.has("barrier")) {
      if (!root.get("barrier").isBoolean()) {
        throw new SpecException("barrier", "must be true or false");
      }
      barrier = root.get("barrier").asBoolean();
    }
    Integer hosts = root.has("hosts") ? (int) integer(root.get("hosts"), "hosts", 1) : null;
    String cluster = root.has("cluster") ? string(root, "cluster", "cluster", true) : SHARED;
    if (!cluster.equals(SHARED) && !cluster.equals(AB)) {
      throw new SpecException("cluster", "must be \"shared\" or \"ab\", not \"" + cluster + "\"");
    }
    if (root.has("link_mbit")) {
      // the runner sets the cluster's ports to it; the jobs do not depend on it
      number(root.get("link_mbit"), "link_mbit", 0, true);
    }
    JsonNode list = root.get("jobs");
    if (list == null || !list.isArray() || list.isEmpty()) {
      throw new SpecException("jobs", "must be a non-empty list");
    }
    List<JobSpec> jobs = new ArrayList<>();
    Set<String> names = new HashSet<>();
    for (int i = 0; i < list.size(); i++) {
      JobSpec job = job(list.get(i), "jobs[" + i + "]", hosts);
      if (!names.add(job.name())) {
        throw new SpecException("jobs[" + i + "].name", "\"" + job.name() + "\" is not unique");
      }
      jobs.add(job);
    }
    return new WorkloadSpec(name, List.copyOf(jobs), barrier, hosts, cluster);
  }

  private static JobSpec job(JsonNode j, String at, Integer hosts) {
    if (!j.isObject()) {
      throw new SpecException(at, "must be a JSON object");
    }
    unknownKeys(j, JOB_KEYS, at + ".");
    String name = string(j, "name", at + ".name", true);
    if (!name.matches("[A-Za-z0-9_.-]+")) {
      throw new SpecException(at + ".name", "must match [A-Za-z0-9_.-]+");
    }
    double submit = number(required(j, "submit_s", at), at + ".submit_s", 0, false);
    int maps = (int) integer(required(j, "maps", at), at + ".maps", 1);
    int reduces = (int) integer(required(j, "reduces", at), at + ".reduces", 1);
    long partition = integer(required(j, "partition_bytes", at), at + ".partition_bytes", 1);
    double mapSeconds = j.has("map_seconds")
        ? number(j.get("map_seconds"), at + ".map_seconds", 0, false) : 0;
    int slowMaps = maps;
    if (j.has("slow_maps")) {
      slowMaps = (int) integer(j.get("slow_maps"), at + ".slow_maps", 0);
      if (slowMaps > maps) {
        throw new SpecException(at + ".slow_maps", "must be an integer in [0, maps]");
      }
    }
    Double deadline = null;
    if (j.has("deadline_s") && !j.get("deadline_s").isNull()) {
      deadline = number(j.get("deadline_s"), at + ".deadline_s", 0, true);
    }
    String queue = j.has("queue") ? string(j, "queue", at + ".queue", true) : "default";
    String user = j.has("user") ? string(j, "user", at + ".user", true) : null;
    for (String placement : List.of("map_hosts", "reduce_hosts")) {
      if (j.has(placement)) {
        if (hosts == null) {
          throw new SpecException(at + "." + placement, "needs the top-level \"hosts\"");
        }
        ints(j.get(placement), at + "." + placement, placement.startsWith("map") ? maps : reduces,
            0, hosts - 1);
      }
    }
    long[] reduceBytes = null;
    if (j.has("reduce_bytes")) {
      // a placement field, as bench/datcpbench/workload.py has it (the replay's per-host bytes)
      if (hosts == null) {
        throw new SpecException(at + ".reduce_bytes", "needs the top-level \"hosts\"");
      }
      reduceBytes = ints(j.get("reduce_bytes"), at + ".reduce_bytes", reduces, 0, Long.MAX_VALUE);
    }
    return new JobSpec(name, submit, maps, reduces, partition, mapSeconds, slowMaps, deadline,
        queue, user, reduceBytes);
  }

  private static void unknownKeys(JsonNode node, Set<String> allowed, String prefix) {
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!allowed.contains(key)) {
        throw new SpecException(prefix + key, "unknown key (accepted: "
            + String.join(", ", allowed.stream().sorted().toList()) + ")");
      }
    }
  }

  private static JsonNode required(JsonNode node, String key, String at) {
    if (!node.has(key)) {
      throw new SpecException(at + "." + key, "is required");
    }
    return node.get(key);
  }

  private static String string(JsonNode node, String key, String field, boolean nonEmpty) {
    JsonNode v = node.get(key);
    if (v == null) {
      throw new SpecException(field, "is required");
    }
    if (!v.isTextual() || (nonEmpty && v.asText().isEmpty())) {
      throw new SpecException(field, "must be a non-empty string");
    }
    return v.asText();
  }

  private static long integer(JsonNode v, String field, long min) {
    if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < min) {
      throw new SpecException(field, "must be an integer >= " + min);
    }
    return v.asLong();
  }

  private static double number(JsonNode v, String field, double min, boolean exclusive) {
    if (!v.isNumber() || Double.isNaN(v.asDouble()) || Double.isInfinite(v.asDouble())
        || v.asDouble() < min || (exclusive && v.asDouble() == min)) {
      throw new SpecException(field, "must be a number " + (exclusive ? "> " : ">= ") + min);
    }
    return v.asDouble();
  }

  private static long[] ints(JsonNode v, String field, int length, long min, long max) {
    if (!v.isArray() || v.size() != length) {
      throw new SpecException(field, "must be a list of " + length + " integers");
    }
    long[] out = new long[length];
    for (int i = 0; i < length; i++) {
      JsonNode e = v.get(i);
      if (!e.isIntegralNumber() || !e.canConvertToLong() || e.asLong() < min
          || e.asLong() > max) {
        throw new SpecException(field + "[" + i + "]", max == Long.MAX_VALUE
            ? "must be an integer >= " + min : "must be an integer in [" + min + ", " + max + "]");
      }
      out[i] = e.asLong();
    }
    return out;
  }
}

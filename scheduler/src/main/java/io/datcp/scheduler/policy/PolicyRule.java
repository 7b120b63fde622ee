package io.datcp.scheduler.policy;

import static io.datcp.scheduler.common.InvalidFieldException.require;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.datcp.scheduler.common.InvalidFieldException;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * An operator rule giving matching jobs' flows an importance, phi, mode and quench mode. A job
 * matches when every non-empty criterion matches. Importance comes only from these rules, never
 * from the job, so a user cannot raise the importance of their own flows.
 *
 * @param importance I of Algorithm 1 (§3.1), dimensionless in [0, 10]
 * @param phi share of importance in precedence P = phi * I + (1 - phi) * U (§3.1), in [0, 1]
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PolicyRule(
    String name,
    Integer order,
    String queue,
    String user,
    String jobNamePattern,
    JobPriority minPriority,
    Double importance,
    Double phi,
    FlowMode mode,
    QuenchMode quenchMode) {

  public static final double MAX_IMPORTANCE = 10.0;
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");
  private static final int MAX_TEXT = 256;

  /** Checks every field; the first bad one is named in the exception. */
  public PolicyRule validate() {
    require(name != null && NAME.matcher(name).matches(), "name",
        "must match [A-Za-z0-9._-]{1,64}");
    require(order != null, "order", "is required (lower orders are evaluated first)");
    require(queue == null || queue.length() <= MAX_TEXT, "queue", "longer than 256 characters");
    require(user == null || user.length() <= MAX_TEXT, "user", "longer than 256 characters");
    require(jobNamePattern == null || jobNamePattern.length() <= MAX_TEXT, "jobNamePattern",
        "longer than 256 characters");
    if (jobNamePattern != null && !jobNamePattern.isEmpty()) {
      try {
        Pattern.compile(jobNamePattern);
      } catch (PatternSyntaxException e) {
        throw new InvalidFieldException("jobNamePattern",
            "not a valid regular expression: " + e.getDescription());
      }
    }
    require(importance != null && importance >= 0 && importance <= MAX_IMPORTANCE, "importance",
        "is required, a number in [0, 10]");
    require(phi != null && phi >= 0 && phi <= 1, "phi", "is required, a number in [0, 1]");
    require(mode != null, "mode", "is required: datcp|pd2tcp|d2tcp|dctcp|off");
    require(quenchMode != null, "quenchMode", "is required: suspend|kill|off");
    return this;
  }

  /** True when every non-empty criterion matches the job. */
  public boolean matches(JobConf job) {
    return (isEmpty(queue) || queue.equals(job.queue()))
        && (isEmpty(user) || user.equals(job.user()))
        && (minPriority == null
            || (job.priority() != null && job.priority().compareTo(minPriority) >= 0))
        && (isEmpty(jobNamePattern)
            || (job.jobName() != null && Pattern.matches(jobNamePattern, job.jobName())));
  }

  /** The same rule under another name. */
  public PolicyRule withName(String newName) {
    return new PolicyRule(newName, order, queue, user, jobNamePattern, minPriority, importance, phi,
        mode, quenchMode);
  }

  private static boolean isEmpty(String s) {
    return s == null || s.isEmpty();
  }
}

package io.datcp.scheduler.policy;

/** The job configuration values that operator policy rules match on. */
public record JobConf(String queue, String user, String jobName, JobPriority priority) {}

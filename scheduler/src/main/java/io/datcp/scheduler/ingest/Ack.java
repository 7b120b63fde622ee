package io.datcp.scheduler.ingest;

/** What a report batch did. */
public record Ack(int accepted, boolean duplicate) {}

package io.datcp.scheduler.ingest;

import java.util.List;

/**
 * What a report batch did: events applied, whether it was a repeat, and the events refused one
 * by one (in batch order).
 */
public record Ack(int accepted, boolean duplicate, List<Refused> refused) {}

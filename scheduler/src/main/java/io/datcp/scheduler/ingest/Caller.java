package io.datcp.scheduler.ingest;

/**
 * Who is calling: the host of its node credential ({@code authenticated}), or in development
 * mode without credentials the host the message names. The authentication result the adapters
 * hand in.
 */
public record Caller(String host, boolean authenticated) {}

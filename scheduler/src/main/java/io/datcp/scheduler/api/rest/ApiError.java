package io.datcp.scheduler.api.rest;

/** Body of every 4xx answer: what went wrong and which field (or header) caused it. */
public record ApiError(String error, String field) {}

package io.datcp.scheduler.common;

/**
 * A request message as it arrived: parsed already when small, its bytes when large (to be parsed
 * off the event loop that read it). What a node's services receive, so that the byte budget can
 * charge its size and the heavy-host lane can decide where it runs.
 *
 * @param parsed the message, or null when it is still {@code bytes}
 * @param bytes the message's bytes when not parsed yet, else null
 * @param size the message's size in bytes
 */
public record ReceivedMessage(Object parsed, byte[] bytes, int size) {}

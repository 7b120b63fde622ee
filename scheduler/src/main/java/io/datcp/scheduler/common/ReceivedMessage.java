package io.datcp.scheduler.common;

/**
 * A request message as it arrived, not yet parsed: what a node's services receive, so that the
 * byte budget can charge it and a large one can be parsed off the event loop that read it.
 */
public record ReceivedMessage(byte[] bytes) {
  public int size() {
    return bytes.length;
  }
}

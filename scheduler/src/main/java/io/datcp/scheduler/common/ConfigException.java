package io.datcp.scheduler.common;

/** A configuration key or value the scheduler cannot start with. */
public final class ConfigException extends IllegalArgumentException {

  public ConfigException(String message) {
    super(message);
  }

  public ConfigException(String key, String value, String accepted) {
    super("bad value '" + value + "' for configuration key '" + key + "'; accepted: " + accepted);
  }
}

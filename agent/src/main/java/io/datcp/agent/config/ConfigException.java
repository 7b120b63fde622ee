package io.datcp.agent.config;

/** A configuration key or value the agent cannot start with. */
public final class ConfigException extends IllegalArgumentException {

  ConfigException(String message) {
    super(message);
  }

  ConfigException(String key, String value, String accepted) {
    super("bad value '" + value + "' for configuration key '" + key + "'; accepted: " + accepted);
  }
}

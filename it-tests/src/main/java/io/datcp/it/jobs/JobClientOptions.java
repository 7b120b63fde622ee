package io.datcp.it.jobs;

import java.io.PrintWriter;
import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.DefaultParser;
import org.apache.commons.cli.HelpFormatter;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

/**
 * The job clients' own options, after Hadoop's generic ones ({@code -D k=v}, taken first by
 * {@code GenericOptionsParser}): commons-cli, as Hadoop's tools parse theirs.
 */
final class JobClientOptions {
  private JobClientOptions() {}

  /** A bad command line: its message names the option. */
  static final class UsageException extends Exception {
    UsageException(String message) {
      super(message);
    }
  }

  static Option required(String name, String arg, String description) {
    return Option.builder().longOpt(name).hasArg().argName(arg).required().desc(description)
        .build();
  }

  static Option optional(String name, String arg, String description) {
    return Option.builder().longOpt(name).hasArg().argName(arg).desc(description).build();
  }

  static CommandLine parse(Options options, String[] args) throws UsageException {
    try {
      CommandLine line = new DefaultParser().parse(options, args);
      if (!line.getArgList().isEmpty()) {
        throw new UsageException("unexpected argument: " + line.getArgList().get(0));
      }
      return line;
    } catch (ParseException e) {
      throw new UsageException(e.getMessage());
    }
  }

  /** An integer option in [min, max], or {@code dflt} when absent. */
  static long integer(CommandLine line, String name, long dflt, long min, long max)
      throws UsageException {
    if (!line.hasOption(name)) {
      return dflt;
    }
    String v = line.getOptionValue(name);
    try {
      long n = Long.parseLong(v);
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // not a number: the same answer as out of range
    }
    throw new UsageException("--" + name + ": must be an integer in [" + min + ", " + max
        + "], not '" + v + "'");
  }

  /** Prints the error and the usage to stderr and exits with 2. */
  static void exit(String client, Options options, UsageException e) {
    System.err.println(client + ": " + e.getMessage());
    PrintWriter err = new PrintWriter(System.err, true);
    new HelpFormatter().printHelp(err, 100, client + " [-D k=v]...", null, options, 2, 2, null,
        true);
    err.flush();
    System.exit(2);
  }
}

package io.datcp.it.jobs;

import org.apache.hadoop.conf.Configuration;

/** The job clients' configuration for the test cluster. */
final class ClientConf {
  private ClientConf() {}

  /**
   * No JobHistoryServer runs in the test cluster: with an empty history address a client asking
   * about a job whose AM has exited takes its final state from the ResourceManager instead of
   * retrying 0.0.0.0:10020 and failing (a site file cannot set an empty value, so it is set here).
   */
  static Configuration create() {
    Configuration conf = new Configuration();
    conf.set("mapreduce.jobhistory.address", "");
    return conf;
  }
}

package io.datcp.it.jobs;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.junit.jupiter.api.Test;

class WordCountTest {
  @Test
  void mapsCombineByDefault() throws Exception {
    Job job = WordCount.create(new Configuration(false), new Path("/in"), new Path("/out"), 2);
    assertThat(job.getCombinerClass()).isEqualTo(WordCount.SumReducer.class);
  }

  @Test
  void withoutCombiningEveryTokenIsShuffled() throws Exception {
    Configuration conf = new Configuration(false);
    conf.setBoolean(WordCount.COMBINE, false);
    Job job = WordCount.create(conf, new Path("/in"), new Path("/out"), 2);
    assertThat(job.getCombinerClass()).isNull();
    assertThat(job.getNumReduceTasks()).isEqualTo(2);
  }
}

package io.datcp.it.jobs;

import java.io.IOException;
import java.util.StringTokenizer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.util.GenericOptionsParser;

/**
 * Word count, the correctness job: its output must be byte-identical with DATCP on and off.
 * Usage: {@code WordCount [-D k=v]... INPUT OUTPUT REDUCES}; exits 0 when the job succeeded.
 * {@code -D datcp.wordcount.combine=false} leaves out the combiner, so that every token
 * crosses the shuffle (the fault tests need a shuffle that lasts seconds).
 */
public final class WordCount {
  /** Whether maps combine their counts before the shuffle (default true). */
  public static final String COMBINE = "datcp.wordcount.combine";

  private WordCount() {}

  public static void main(String[] args) throws Exception {
    Configuration conf = ClientConf.create();
    String[] rest = new GenericOptionsParser(conf, args).getRemainingArgs();
    if (rest.length != 3) {
      System.err.println("usage: WordCount [-D k=v]... INPUT OUTPUT REDUCES");
      System.exit(2);
    }
    Job job = create(conf, new Path(rest[0]), new Path(rest[1]), Integer.parseInt(rest[2]));
    System.exit(job.waitForCompletion(true) ? 0 : 1);
  }

  static Job create(Configuration conf, Path input, Path output, int reduces) throws IOException {
    Job job = Job.getInstance(conf, "datcp-wordcount");
    job.setJarByClass(WordCount.class);
    job.setMapperClass(TokenMapper.class);
    if (conf.getBoolean(COMBINE, true)) {
      job.setCombinerClass(SumReducer.class);
    }
    job.setReducerClass(SumReducer.class);
    job.setOutputKeyClass(Text.class);
    job.setOutputValueClass(IntWritable.class);
    job.setNumReduceTasks(reduces);
    FileInputFormat.addInputPath(job, input);
    FileOutputFormat.setOutputPath(job, output);
    return job;
  }

  /** (word, 1) per token. */
  public static final class TokenMapper extends Mapper<Object, Text, Text, IntWritable> {
    private static final IntWritable ONE = new IntWritable(1);
    private final Text word = new Text();

    @Override
    protected void map(Object key, Text value, Context context)
        throws IOException, InterruptedException {
      StringTokenizer tokens = new StringTokenizer(value.toString());
      while (tokens.hasMoreTokens()) {
        word.set(tokens.nextToken());
        context.write(word, ONE);
      }
    }
  }

  /** Sum of the counts of a word. */
  public static final class SumReducer extends Reducer<Text, IntWritable, Text, IntWritable> {
    @Override
    protected void reduce(Text key, Iterable<IntWritable> values, Context context)
        throws IOException, InterruptedException {
      int sum = 0;
      for (IntWritable v : values) {
        sum += v.get();
      }
      context.write(key, new IntWritable(sum));
    }
  }
}

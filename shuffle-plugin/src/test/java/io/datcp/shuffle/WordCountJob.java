package io.datcp.shuffle;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.StringTokenizer;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.TextInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;

/** Word count over generated text; the expected counts are computed without Hadoop. */
public final class WordCountJob {
  private WordCountJob() { }

  /** Writes `files` text files of pseudo-random words (fixed seed) and returns the counts. */
  public static Map<String, Integer> writeInput(Path dir, int files, int wordsPerFile)
      throws IOException {
    Files.createDirectories(dir);
    Map<String, Integer> counts = new TreeMap<>();
    long seed = 42;
    for (int f = 0; f < files; f++) {
      StringBuilder text = new StringBuilder();
      for (int w = 0; w < wordsPerFile; w++) {
        seed = seed * 6364136223846793005L + 1442695040888963407L;
        String word = "w" + Long.toString(Math.floorMod(seed >>> 33, 5000L), 36);
        counts.merge(word, 1, Integer::sum);
        text.append(word).append(w % 12 == 11 ? '\n' : ' ');
      }
      Files.writeString(dir.resolve("part-" + f + ".txt"), text);
    }
    return counts;
  }

  public static List<String> expectedLines(Map<String, Integer> counts) {
    List<String> lines = new ArrayList<>();
    counts.forEach((w, c) -> lines.add(w + "\t" + c));
    lines.sort(null);
    return lines;
  }

  public static Job create(Configuration conf, Path input, Path output, int reduces)
      throws IOException {
    Job job = Job.getInstance(conf, "datcp-wordcount");
    job.setJarByClass(WordCountJob.class);
    job.setInputFormatClass(TextInputFormat.class);
    job.setMapperClass(Tokenize.class);
    job.setCombinerClass(Sum.class);
    job.setReducerClass(Sum.class);
    job.setNumReduceTasks(reduces);
    job.setOutputKeyClass(Text.class);
    job.setOutputValueClass(IntWritable.class);
    FileInputFormat.addInputPath(job, new org.apache.hadoop.fs.Path(input.toUri()));
    FileOutputFormat.setOutputPath(job, new org.apache.hadoop.fs.Path(output.toUri()));
    return job;
  }

  public static final class Tokenize extends Mapper<LongWritable, Text, Text, IntWritable> {
    private static final IntWritable ONE = new IntWritable(1);
    private final Text word = new Text();

    @Override
    protected void map(LongWritable offset, Text line, Context context)
        throws IOException, InterruptedException {
      StringTokenizer words = new StringTokenizer(line.toString());
      while (words.hasMoreTokens()) {
        word.set(words.nextToken());
        context.write(word, ONE);
      }
    }
  }

  public static final class Sum extends Reducer<Text, IntWritable, Text, IntWritable> {
    @Override
    protected void reduce(Text word, Iterable<IntWritable> ones, Context context)
        throws IOException, InterruptedException {
      int sum = 0;
      for (IntWritable one : ones) {
        sum += one.get();
      }
      context.write(word, new IntWritable(sum));
    }
  }
}

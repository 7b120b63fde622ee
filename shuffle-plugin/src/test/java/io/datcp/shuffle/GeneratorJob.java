package io.datcp.shuffle;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.mapreduce.InputFormat;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Partitioner;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;

/**
 * A test job with a known shuffle: every map emits, for every reduce, the same number of records
 * with values of a fixed size derived from the key; each reduce writes "key TAB crc32(value)".
 * The expected output is computed without Hadoop by {@link #expectedOutput}.
 */
public final class GeneratorJob {
  static final String MAPS = "datcp.test.generator.maps";
  static final String RECORDS = "datcp.test.generator.records-per-partition";
  static final String VALUE_BYTES = "datcp.test.generator.value-bytes";
  /** Index of a map whose first attempt fails (before writing anything); none when unset. */
  static final String FAIL_FIRST_ATTEMPT_OF = "datcp.test.generator.fail-first-attempt-of-map";

  private GeneratorJob() { }

  public static Job create(Configuration conf, int maps, int reduces, int records, int valueBytes,
      Path output) throws IOException {
    Job job = Job.getInstance(conf, "datcp-generator");
    job.getConfiguration().setInt(MAPS, maps);
    job.getConfiguration().setInt(RECORDS, records);
    job.getConfiguration().setInt(VALUE_BYTES, valueBytes);
    job.setJarByClass(GeneratorJob.class);
    job.setInputFormatClass(SyntheticInput.class);
    job.setMapperClass(Generate.class);
    job.setPartitionerClass(ByKey.class);
    job.setReducerClass(Checksum.class);
    job.setNumReduceTasks(reduces);
    job.setMapOutputKeyClass(IntWritable.class);
    job.setMapOutputValueClass(BytesWritable.class);
    job.setOutputKeyClass(IntWritable.class);
    job.setOutputValueClass(LongWritable.class);
    job.setOutputFormatClass(TextOutputFormat.class);
    TextOutputFormat.setOutputPath(job, output);
    return job;
  }

  /** key = (map * records + i) * reduces + reduce, so key % reduces is the reduce. */
  static int key(int map, int i, int reduce, int records, int reduces) {
    return (map * records + i) * reduces + reduce;
  }

  static byte[] value(int key, int size) {
    byte[] v = new byte[size];
    Arrays.fill(v, (byte) (key % 251));
    v[0] = (byte) key;
    return v;
  }

  static long crc(byte[] v) {
    CRC32 c = new CRC32();
    c.update(v);
    return c.getValue();
  }

  /** Lines the job must write (all reduces together, sorted). */
  public static List<String> expectedOutput(int maps, int reduces, int records, int valueBytes) {
    List<String> lines = new ArrayList<>();
    for (int m = 0; m < maps; m++) {
      for (int i = 0; i < records; i++) {
        for (int r = 0; r < reduces; r++) {
          int k = key(m, i, r, records, reduces);
          lines.add(k + "\t" + crc(value(k, valueBytes)));
        }
      }
    }
    lines.sort(null);
    return lines;
  }

  /** One split per map, carrying only the map's index. */
  public static final class IndexSplit extends InputSplit implements Writable {
    int index;

    public IndexSplit() { }

    IndexSplit(int index) {
      this.index = index;
    }

    @Override
    public long getLength() {
      return 0;
    }

    @Override
    public String[] getLocations() {
      return new String[0];
    }

    @Override
    public void write(DataOutput out) throws IOException {
      out.writeInt(index);
    }

    @Override
    public void readFields(DataInput in) throws IOException {
      index = in.readInt();
    }
  }

  public static final class SyntheticInput extends InputFormat<IntWritable, NullWritable> {
    @Override
    public List<InputSplit> getSplits(JobContext context) {
      List<InputSplit> splits = new ArrayList<>();
      for (int m = 0; m < context.getConfiguration().getInt(MAPS, 1); m++) {
        splits.add(new IndexSplit(m));
      }
      return splits;
    }

    @Override
    public RecordReader<IntWritable, NullWritable> createRecordReader(InputSplit split,
        TaskAttemptContext context) {
      return new RecordReader<>() {
        private boolean done;
        private int index;

        @Override
        public void initialize(InputSplit s, TaskAttemptContext c) {
          index = ((IndexSplit) s).index;
        }

        @Override
        public boolean nextKeyValue() {
          boolean has = !done;
          done = true;
          return has;
        }

        @Override
        public IntWritable getCurrentKey() {
          return new IntWritable(index);
        }

        @Override
        public NullWritable getCurrentValue() {
          return NullWritable.get();
        }

        @Override
        public float getProgress() {
          return done ? 1 : 0;
        }

        @Override
        public void close() { }
      };
    }
  }

  public static final class Generate
      extends Mapper<IntWritable, NullWritable, IntWritable, BytesWritable> {
    @Override
    protected void map(IntWritable map, NullWritable ignored, Context context)
        throws IOException, InterruptedException {
      Configuration conf = context.getConfiguration();
      if (map.get() == conf.getInt(FAIL_FIRST_ATTEMPT_OF, -1)
          && context.getTaskAttemptID().getId() == 0) {
        throw new IOException("the first attempt of map " + map.get() + " fails (test)");
      }
      int records = conf.getInt(RECORDS, 1);
      int size = conf.getInt(VALUE_BYTES, 1);
      int reduces = context.getNumReduceTasks();
      for (int i = 0; i < records; i++) {
        for (int r = 0; r < reduces; r++) {
          int k = key(map.get(), i, r, records, reduces);
          context.write(new IntWritable(k), new BytesWritable(value(k, size)));
        }
      }
    }
  }

  public static final class ByKey extends Partitioner<IntWritable, BytesWritable> {
    @Override
    public int getPartition(IntWritable key, BytesWritable value, int reduces) {
      return key.get() % reduces;
    }
  }

  public static final class Checksum
      extends Reducer<IntWritable, BytesWritable, IntWritable, LongWritable> {
    @Override
    protected void reduce(IntWritable key, Iterable<BytesWritable> values, Context context)
        throws IOException, InterruptedException {
      for (BytesWritable v : values) {
        context.write(key, new LongWritable(crc(v.copyBytes())));
      }
    }
  }
}

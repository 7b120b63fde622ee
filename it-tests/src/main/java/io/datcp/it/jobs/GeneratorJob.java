package io.datcp.it.jobs;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
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
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;

/**
 * A job whose shuffle is known exactly: {@code maps} maps, no input, each writing exactly
 * {@code bytesPerPartition} bytes of incompressible values to every reduce partition (or, with
 * {@link #REDUCE_BYTES}, its own number of bytes to each partition). The
 * last {@code slowMaps} maps run {@code slowMillis} longer, so a job can be caught with some
 * maps done and some still running (DATCP §4.4, job A).
 *
 * <p>Start barrier: when {@link #READY_DIR} is set, every map marks itself ready there and
 * then waits for {@link #RELEASE_FILE} before it writes, so a driver can release the maps of
 * several jobs at one instant once all their containers run.
 */
public final class GeneratorJob {
  public static final String MAPS = "datcp.gen.maps";
  public static final String BYTES_PER_PARTITION = "datcp.gen.bytes-per-partition";
  /** Bytes each map writes for partition 0, 1, ... (comma-separated); overrides the above. */
  public static final String REDUCE_BYTES = "datcp.gen.reduce-bytes";
  public static final String SLOW_MAPS = "datcp.gen.slow-maps";
  public static final String SLOW_MILLIS = "datcp.gen.slow-millis";
  public static final String READY_DIR = "datcp.gen.ready-dir";
  public static final String RELEASE_FILE = "datcp.gen.release-file";

  /** Values are written in records of this size (the last one of a partition is shorter). */
  static final int RECORD_BYTES = 64 * 1024;

  private GeneratorJob() {}

  /** A job of {@code maps} maps and {@code reduces} reduces writing to {@code output}. */
  public static Job create(Configuration base, String name, int maps, int reduces,
      long bytesPerPartition, Path output) throws IOException {
    Configuration conf = new Configuration(base);
    conf.setInt(MAPS, maps);
    conf.setLong(BYTES_PER_PARTITION, bytesPerPartition);
    Job job = Job.getInstance(conf, name);
    job.setJarByClass(GeneratorJob.class);
    job.setInputFormatClass(SyntheticInput.class);
    job.setMapperClass(GenMapper.class);
    job.setPartitionerClass(ByKey.class);
    job.setReducerClass(ByteCountReducer.class);
    job.setMapOutputKeyClass(IntWritable.class);
    job.setMapOutputValueClass(BytesWritable.class);
    job.setOutputKeyClass(IntWritable.class);
    job.setOutputValueClass(LongWritable.class);
    job.setOutputFormatClass(TextOutputFormat.class);
    job.setNumReduceTasks(reduces);
    FileOutputFormat.setOutputPath(job, output);
    return job;
  }

  /** As above, each map writing {@code bytesPerReduce[r]} bytes for reduce r. */
  public static Job create(Configuration base, String name, int maps, long[] bytesPerReduce,
      Path output) throws IOException {
    Configuration conf = new Configuration(base);
    String[] bytes = new String[bytesPerReduce.length];
    for (int r = 0; r < bytes.length; r++) {
      bytes[r] = Long.toString(bytesPerReduce[r]);
    }
    conf.setStrings(REDUCE_BYTES, bytes);
    return create(conf, name, maps, bytesPerReduce.length, 0, output);
  }

  /** Writes the partitions' bytes; see the class comment for the barrier and slow maps. */
  public static final class GenMapper
      extends Mapper<IntWritable, NullWritable, IntWritable, BytesWritable> {
    @Override
    protected void map(IntWritable mapIndex, NullWritable ignored, Context context)
        throws IOException, InterruptedException {
      Configuration conf = context.getConfiguration();
      awaitRelease(conf, mapIndex.get(), context);
      int maps = conf.getInt(MAPS, 1);
      if (mapIndex.get() >= maps - conf.getInt(SLOW_MAPS, 0)) {
        sleepWithProgress(conf.getLong(SLOW_MILLIS, 0), context);
      }
      long perPartition = conf.getLong(BYTES_PER_PARTITION, 0);
      String[] perReduce = conf.getTrimmedStrings(REDUCE_BYTES);
      Random random = new Random(mapIndex.get());
      byte[] record = new byte[RECORD_BYTES];
      for (int p = 0; p < context.getNumReduceTasks(); p++) {
        IntWritable key = new IntWritable(p);
        long bytes = perReduce.length > 0 ? Long.parseLong(perReduce[p]) : perPartition;
        for (long left = bytes; left > 0; left -= RECORD_BYTES) {
          int n = (int) Math.min(RECORD_BYTES, left);
          random.nextBytes(record);
          context.write(key, new BytesWritable(record.length == n ? record : copy(record, n)));
        }
      }
    }

    private static byte[] copy(byte[] b, int n) {
      byte[] out = new byte[n];
      System.arraycopy(b, 0, out, 0, n);
      return out;
    }

    private static void awaitRelease(Configuration conf, int index, Context context)
        throws IOException, InterruptedException {
      String ready = conf.get(READY_DIR);
      if (ready == null) {
        return;
      }
      Path release = new Path(conf.get(RELEASE_FILE));
      FileSystem fs = release.getFileSystem(conf);
      fs.create(new Path(ready, context.getJobID() + "-m" + index), true).close();
      while (!fs.exists(release)) {
        context.progress();
        Thread.sleep(20);
      }
    }

    private static void sleepWithProgress(long millis, Context context)
        throws InterruptedException {
      long end = System.currentTimeMillis() + millis;
      for (long left = millis; left > 0; left = end - System.currentTimeMillis()) {
        context.progress();
        Thread.sleep(Math.min(left, 100));
      }
    }
  }

  /** Partition = the key (the partition a map wrote the record for). */
  public static final class ByKey extends Partitioner<IntWritable, BytesWritable> {
    @Override
    public int getPartition(IntWritable key, BytesWritable value, int partitions) {
      return key.get() % partitions;
    }
  }

  /** Writes "partition TAB value bytes received", so the output proves every byte arrived. */
  public static final class ByteCountReducer
      extends Reducer<IntWritable, BytesWritable, IntWritable, LongWritable> {
    @Override
    protected void reduce(IntWritable key, Iterable<BytesWritable> values, Context context)
        throws IOException, InterruptedException {
      long bytes = 0;
      for (BytesWritable v : values) {
        bytes += v.getLength();
      }
      context.write(key, new LongWritable(bytes));
    }
  }

  /** One split per map, no input: the record is the map's index. */
  public static final class SyntheticInput extends InputFormat<IntWritable, NullWritable> {
    @Override
    public List<InputSplit> getSplits(JobContext context) {
      List<InputSplit> splits = new ArrayList<>();
      for (int i = 0; i < context.getConfiguration().getInt(MAPS, 1); i++) {
        splits.add(new IndexSplit(i));
      }
      return splits;
    }

    @Override
    public RecordReader<IntWritable, NullWritable> createRecordReader(InputSplit split,
        TaskAttemptContext context) {
      return new RecordReader<>() {
        private boolean done;

        @Override
        public void initialize(InputSplit s, TaskAttemptContext c) {}

        @Override
        public boolean nextKeyValue() {
          boolean first = !done;
          done = true;
          return first;
        }

        @Override
        public IntWritable getCurrentKey() {
          return new IntWritable(((IndexSplit) split).index);
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
        public void close() {}
      };
    }
  }

  /** A split that is only a map index. */
  public static final class IndexSplit extends InputSplit implements Writable {
    private int index;

    public IndexSplit() {}

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
}

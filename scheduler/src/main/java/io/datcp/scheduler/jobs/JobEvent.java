package io.datcp.scheduler.jobs;

import static io.datcp.scheduler.common.InvalidFieldException.require;

import io.datcp.scheduler.policy.JobConf;
import java.util.List;

/**
 * Job and shuffle progress reported by the reduce-side plugin. Times are nanoseconds since the
 * Unix epoch, durations nanoseconds, sizes bytes. Each event checks itself before any event of
 * its batch is applied, naming the bad field under {@code prefix}.
 */
public sealed interface JobEvent {
  String jobId();

  long timeUnixNanos();

  void validate(String prefix);

  /** A reduce task started its shuffle on {@code host}. */
  record ReduceStarted(long timeUnixNanos, String jobId, int reduceId, String host, int totalMaps,
      int totalReduces, JobConf conf, long jobSubmitTimeUnixNanos) implements JobEvent {
    @Override
    public void validate(String prefix) {
      common(prefix, timeUnixNanos, jobId, reduceId);
      require(host != null && !host.isEmpty() && host.length() <= 255, prefix, "host",
          "must be a host name of 1-255 characters");
      require(totalMaps > 0, prefix, "totalMaps", "must be positive (maps)");
      require(totalReduces > reduceId, prefix, "totalReduces", "must exceed reduceId (reduces)");
      require(jobSubmitTimeUnixNanos >= 0, prefix, "jobSubmitTimeUnixNanos",
          "must be 0 (unknown) or nanoseconds since the epoch");
    }
  }

  /**
   * A map finished; {@code outputBytes} is its partition for {@code reduceId}, -1 if unknown;
   * {@code attempt} the attempt number of the map task attempt that produced it;
   * {@code runningMapsSinceUnixNanos} when the earliest of the {@code mapsRunning} maps started,
   * 0 if unknown; {@code runningMapStartsUnixNanos} when each of them started (any order, empty
   * if unknown), at most {@code mapsRunning} and {@link #MAX_RUNNING_MAP_STARTS}.
   */
  record MapCompleted(long timeUnixNanos, String jobId, int reduceId, int mapId, String host,
      long runTimeNanos, long outputBytes, int mapsRunning, int attempt,
      long runningMapsSinceUnixNanos, List<Long> runningMapStartsUnixNanos) implements JobEvent {
    /**
     * Most running maps' starts one report may carry (the proto's bound): a job holds the latest
     * report's, 8 bytes each, so at most 8 KB a job (80 MB at jobs.maxRunning).
     */
    public static final int MAX_RUNNING_MAP_STARTS = 1_000;

    /** By a map's first attempt (0), as reporters built before the attempt field say. */
    public MapCompleted(long timeUnixNanos, String jobId, int reduceId, int mapId, String host,
        long runTimeNanos, long outputBytes, int mapsRunning) {
      this(timeUnixNanos, jobId, reduceId, mapId, host, runTimeNanos, outputBytes, mapsRunning,
          0);
    }

    /** Not saying when the running maps started, as reporters built before that field. */
    public MapCompleted(long timeUnixNanos, String jobId, int reduceId, int mapId, String host,
        long runTimeNanos, long outputBytes, int mapsRunning, int attempt) {
      this(timeUnixNanos, jobId, reduceId, mapId, host, runTimeNanos, outputBytes, mapsRunning,
          attempt, 0);
    }

    /** Saying only when the earliest running map started, as reporters before the list. */
    public MapCompleted(long timeUnixNanos, String jobId, int reduceId, int mapId, String host,
        long runTimeNanos, long outputBytes, int mapsRunning, int attempt,
        long runningMapsSinceUnixNanos) {
      this(timeUnixNanos, jobId, reduceId, mapId, host, runTimeNanos, outputBytes, mapsRunning,
          attempt, runningMapsSinceUnixNanos, List.of());
    }

    @Override
    public void validate(String prefix) {
      common(prefix, timeUnixNanos, jobId, reduceId);
      require(mapId >= 0, prefix, "mapId", "must be >= 0");
      require(attempt >= 0, prefix, "attempt", "must be >= 0 (an attempt number)");
      require(runTimeNanos >= 0, prefix, "runTimeNanos",
          "must be >= 0 (nanoseconds; 0 = unknown)");
      require(outputBytes >= -1, prefix, "outputBytes", "must be >= 0 bytes, or -1 when unknown");
      require(mapsRunning >= -1, prefix, "mapsRunning", "must be >= 0, or -1 when unknown");
      require(runningMapsSinceUnixNanos >= 0, prefix, "runningMapsSinceUnixNanos",
          "must be 0 (unknown) or nanoseconds since the epoch");
      int starts = runningMapStartsUnixNanos.size();
      require(starts <= MAX_RUNNING_MAP_STARTS && starts <= Math.max(0, mapsRunning), prefix,
          "runningMapStartsUnixNanos", "must hold at most mapsRunning starts, and at most "
              + MAX_RUNNING_MAP_STARTS);
      for (long start : runningMapStartsUnixNanos) {
        require(start > 0, prefix, "runningMapStartsUnixNanos",
            "must be nanoseconds since the epoch (> 0)");
      }
    }
  }

  /**
   * Attempt {@code attempt} of map {@code mapId} on {@code host} failed, was killed or its
   * output went obsolete, as reduce {@code reduceId} learnt: that output cannot be fetched.
   */
  record MapLost(long timeUnixNanos, String jobId, int reduceId, int mapId, String host,
      int attempt) implements JobEvent {
    @Override
    public void validate(String prefix) {
      common(prefix, timeUnixNanos, jobId, reduceId);
      require(mapId >= 0, prefix, "mapId", "must be >= 0");
      require(host != null && !host.isEmpty() && host.length() <= 255, prefix, "host",
          "must be a host name of 1-255 characters");
      require(attempt >= 0, prefix, "attempt", "must be >= 0 (an attempt number)");
    }
  }

  /** A fetch of {@code mapIds} from {@code sourceHost} began. */
  record FetchStarted(long timeUnixNanos, String jobId, int reduceId, String sourceHost,
      List<Integer> mapIds, long bytes) implements JobEvent {
    @Override
    public void validate(String prefix) {
      common(prefix, timeUnixNanos, jobId, reduceId);
      require(bytes >= -1, prefix, "bytes", "must be >= 0 bytes, or -1 when unknown");
      require(mapIds.stream().allMatch(m -> m >= 0), prefix, "mapIds", "must be >= 0");
    }
  }

  /** A fetch completed: {@code bytes} arrived in {@code durationNanos}. */
  record FetchFinished(long timeUnixNanos, String jobId, int reduceId, String sourceHost,
      List<Integer> mapIds, long bytes, long durationNanos) implements JobEvent {
    @Override
    public void validate(String prefix) {
      common(prefix, timeUnixNanos, jobId, reduceId);
      require(bytes >= 0, prefix, "bytes", "must be >= 0 (bytes)");
      require(durationNanos >= 0, prefix, "durationNanos", "must be >= 0 (nanoseconds)");
      require(mapIds.stream().allMatch(m -> m >= 0), prefix, "mapIds", "must be >= 0");
    }
  }

  /** A reduce has all its map outputs. */
  record ShuffleFinished(long timeUnixNanos, String jobId, int reduceId) implements JobEvent {
    @Override
    public void validate(String prefix) {
      common(prefix, timeUnixNanos, jobId, reduceId);
    }
  }

  /** The job ended. */
  record JobFinished(long timeUnixNanos, String jobId, boolean succeeded) implements JobEvent {
    @Override
    public void validate(String prefix) {
      common(prefix, timeUnixNanos, jobId, 0);
    }
  }

  /**
   * Map side: the size of every partition of a map's output, read from its index on the map's
   * host; {@code partitionBytes.get(r)} is the bytes reduce r will fetch from this map.
   */
  record MapOutputIndexed(long timeUnixNanos, String jobId, int mapId, String host,
      List<Long> partitionBytes) implements JobEvent {
    @Override
    public void validate(String prefix) {
      common(prefix, timeUnixNanos, jobId, 0);
      require(mapId >= 0, prefix, "mapId", "must be >= 0");
      require(host != null && !host.isEmpty() && host.length() <= 255, prefix, "host",
          "must be a host name of 1-255 characters");
      require(!partitionBytes.isEmpty() && partitionBytes.size() <= 100_000,
          prefix, "partitionBytes", "must have one entry per reduce (1-100000)");
      // An indexed loop, not a stream: the JIT can then drop the boxing of up to 100,000 sizes.
      for (int r = 0; r < partitionBytes.size(); r++) {
        require(partitionBytes.get(r) >= 0, prefix, "partitionBytes", "must be >= 0 (bytes)");
      }
    }
  }

  /** Map side: containers of the job running on {@code host} now (with the AM and reduces). */
  record ContainersRunning(long timeUnixNanos, String jobId, String host, int running)
      implements JobEvent {
    @Override
    public void validate(String prefix) {
      common(prefix, timeUnixNanos, jobId, 0);
      require(host != null && !host.isEmpty() && host.length() <= 255, prefix, "host",
          "must be a host name of 1-255 characters");
      require(running >= 0, prefix, "running", "must be >= 0 (containers)");
    }
  }

  private static void common(String prefix, long timeUnixNanos, String jobId, int reduceId) {
    require(timeUnixNanos > 0, prefix, "timeUnixNanos", "must be nanoseconds since the epoch");
    require(jobId != null && !jobId.isEmpty() && jobId.length() <= 128, prefix, "jobId",
        "must be a job id of 1-128 characters");
    require(reduceId >= 0, prefix, "reduceId", "must be >= 0");
  }
}

package io.datcp.scheduler.jobs;

import io.datcp.scheduler.common.InvalidFieldException;
import java.util.List;

/**
 * Bounds on what reports may make the job model hold (README "Limits"); each names its config
 * key. Sizes of one event are checked here ({@link #check}: INVALID_ARGUMENT); capacities that
 * fill up as events are applied are checked by {@link JobRegistry} (RESOURCE_EXHAUSTED).
 *
 * @param maxRunning jobs.maxRunning: running jobs
 * @param maxMaps jobs.maxMaps: a job's maps; every map id is below it
 * @param maxReduces jobs.maxReduces: a job's reduces and a map output's partition sizes
 * @param maxReducesPerHost jobs.maxReducesPerHost: reduces of running jobs on one host
 * @param maxShuffleEntries jobs.maxShuffleEntries: completed maps, partition sizes and reported
 *     output sizes over all running jobs and held map outputs
 * @param maxShuffleEntriesPerHost jobs.maxShuffleEntriesPerHost: those one reporting host's
 *     events added, so that one host cannot fill the whole budget
 * @param maxMapIds flows.maxMapIds: map ids one fetch, lookup or flow key names
 */
public record JobLimits(int maxRunning, int maxMaps, int maxReduces, int maxReducesPerHost,
    int maxShuffleEntries, int maxShuffleEntriesPerHost, int maxMapIds) {

  /**
   * Checks the sizes one event carries against the limits, naming field and key. Every event of
   * every report passes here, a hostile one's too: messages are built only on failure.
   */
  public void check(JobEvent event, String prefix) {
    if (event instanceof JobEvent.ReduceStarted e) {
      if (e.totalMaps() > maxMaps) {
        throw new InvalidFieldException(prefix + "totalMaps",
            "must be at most jobs.maxMaps (" + maxMaps + ")");
      }
      if (e.totalReduces() > maxReduces) {
        throw new InvalidFieldException(prefix + "totalReduces",
            "must be at most jobs.maxReduces (" + maxReduces + ")");
      }
    } else if (event instanceof JobEvent.MapCompleted e) {
      mapId(e.mapId(), prefix);
    } else if (event instanceof JobEvent.MapLost e) {
      mapId(e.mapId(), prefix);
    } else if (event instanceof JobEvent.MapOutputIndexed e) {
      mapId(e.mapId(), prefix);
      if (e.partitionBytes().size() > maxReduces) {
        throw new InvalidFieldException(prefix + "partitionBytes", "has "
            + e.partitionBytes().size() + " sizes, more than jobs.maxReduces (" + maxReduces
            + ")");
      }
    } else if (event instanceof JobEvent.FetchStarted e) {
      mapIds(e.mapIds(), prefix, "mapIds");
    } else if (event instanceof JobEvent.FetchFinished e) {
      mapIds(e.mapIds(), prefix, "mapIds");
    }
  }

  /** A list of map ids: at most flows.maxMapIds, each below jobs.maxMaps. */
  public void mapIds(List<Integer> ids, String field) {
    mapIds(ids, "", field);
  }

  /** The same, naming field {@code prefix + field} (joined only on failure). */
  public void mapIds(List<Integer> ids, String prefix, String field) {
    if (ids.size() > maxMapIds) {
      throw new InvalidFieldException(prefix + field, "names " + ids.size()
          + " maps, more than flows.maxMapIds (" + maxMapIds + ")");
    }
    for (int m : ids) {
      if (m >= maxMaps) {
        throw new InvalidFieldException(prefix + field,
            "map id " + m + " is not below jobs.maxMaps (" + maxMaps + ")");
      }
    }
  }

  private void mapId(int mapId, String prefix) {
    if (mapId >= maxMaps) {
      throw new InvalidFieldException(prefix + "mapId",
          "must be below jobs.maxMaps (" + maxMaps + ")");
    }
  }
}

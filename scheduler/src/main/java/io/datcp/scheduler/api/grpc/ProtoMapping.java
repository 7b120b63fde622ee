package io.datcp.scheduler.api.grpc;

import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.scheduler.InvalidFieldException;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.FlowPolicy;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.jobs.JobConf;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobPriority;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.PolicyRule;
import io.datcp.scheduler.policy.QuenchMode;
import java.util.List;

/** Translation between datcp.v1 messages and the domain types; nothing else. */
final class ProtoMapping {
  private ProtoMapping() {}

  static JobEvent event(ShuffleEvent e, int index) {
    long t = e.getTimeUnixNanos();
    switch (e.getEventCase()) {
      case REDUCE_STARTED: {
        var r = e.getReduceStarted();
        return new JobEvent.ReduceStarted(t, r.getJobId(), r.getReduceId(), r.getHost(),
            r.getTotalMaps(), r.getTotalReduces(),
            new JobConf(r.getQueue(), r.getUser(), r.getJobName(), priority(r.getPriority())),
            r.getJobSubmitTimeUnixNanos());
      }
      case MAP_COMPLETED: {
        var m = e.getMapCompleted();
        return new JobEvent.MapCompleted(t, m.getJobId(), m.getReduceId(), m.getMapId(),
            m.getHost(), m.getRunTimeNanos(), m.getOutputBytes(), m.getMapsRunning());
      }
      case FETCH_STARTED: {
        var f = e.getFetchStarted();
        return new JobEvent.FetchStarted(t, f.getJobId(), f.getReduceId(), f.getSourceHost(),
            List.copyOf(f.getMapIdsList()), f.getBytes());
      }
      case FETCH_FINISHED: {
        var f = e.getFetchFinished();
        return new JobEvent.FetchFinished(t, f.getJobId(), f.getReduceId(), f.getSourceHost(),
            List.copyOf(f.getMapIdsList()), f.getBytes(), f.getDurationNanos());
      }
      case SHUFFLE_FINISHED: {
        var s = e.getShuffleFinished();
        return new JobEvent.ShuffleFinished(t, s.getJobId(), s.getReduceId());
      }
      case JOB_FINISHED: {
        var j = e.getJobFinished();
        return new JobEvent.JobFinished(t, j.getJobId(), j.getSucceeded());
      }
      default:
        throw new InvalidFieldException("events[" + index + "].event", "is not set");
    }
  }

  static JobPriority priority(io.datcp.proto.v1.JobPriority p) {
    switch (p) {
      case JOB_PRIORITY_VERY_LOW: return JobPriority.VERY_LOW;
      case JOB_PRIORITY_LOW: return JobPriority.LOW;
      case JOB_PRIORITY_HIGH: return JobPriority.HIGH;
      case JOB_PRIORITY_VERY_HIGH: return JobPriority.VERY_HIGH;
      case JOB_PRIORITY_NORMAL: return JobPriority.NORMAL;
      default: return null;
    }
  }

  static io.datcp.proto.v1.JobPriority priority(JobPriority p) {
    if (p == null) {
      return io.datcp.proto.v1.JobPriority.JOB_PRIORITY_UNSPECIFIED;
    }
    return io.datcp.proto.v1.JobPriority.valueOf("JOB_PRIORITY_" + p.name());
  }

  static FlowMode mode(io.datcp.proto.v1.FlowMode m) {
    switch (m) {
      case FLOW_MODE_DATCP: return FlowMode.DATCP;
      case FLOW_MODE_PD2TCP: return FlowMode.PD2TCP;
      case FLOW_MODE_D2TCP: return FlowMode.D2TCP;
      case FLOW_MODE_DCTCP: return FlowMode.DCTCP;
      case FLOW_MODE_OFF: return FlowMode.OFF;
      default: return null;
    }
  }

  static io.datcp.proto.v1.FlowMode mode(FlowMode m) {
    return m == null ? io.datcp.proto.v1.FlowMode.FLOW_MODE_UNSPECIFIED
        : io.datcp.proto.v1.FlowMode.valueOf("FLOW_MODE_" + m.name());
  }

  static QuenchMode quench(io.datcp.proto.v1.QuenchMode q) {
    switch (q) {
      case QUENCH_MODE_SUSPEND: return QuenchMode.SUSPEND;
      case QUENCH_MODE_KILL: return QuenchMode.KILL;
      default: return null;
    }
  }

  static io.datcp.proto.v1.QuenchMode quench(QuenchMode q) {
    return q == null ? io.datcp.proto.v1.QuenchMode.QUENCH_MODE_UNSPECIFIED
        : io.datcp.proto.v1.QuenchMode.valueOf("QUENCH_MODE_" + q.name());
  }

  static FlowOutcome outcome(io.datcp.proto.v1.FlowOutcome o) {
    QuenchOutcome q;
    switch (o.getQuench()) {
      case QUENCH_OUTCOME_SUSPENDED: q = QuenchOutcome.SUSPENDED; break;
      case QUENCH_OUTCOME_KILLED: q = QuenchOutcome.KILLED; break;
      default: q = QuenchOutcome.NONE;
    }
    return new FlowOutcome(o.getJobId(), o.getReduceId(), o.getSourceHost(),
        o.getDestinationHost(), o.getBytes(), o.getStartUnixNanos(), o.getDeadlineUnixNanos(),
        o.getFinishUnixNanos(), o.getMet(), q);
  }

  static io.datcp.proto.v1.FlowPolicy policy(FlowPolicy p) {
    return io.datcp.proto.v1.FlowPolicy.newBuilder()
        .setJobId(p.jobId())
        .setReduceId(p.reduceId())
        .setDeadlineUnixNanos(p.deadlineUnixNanos())
        .setDeadlineNanos(p.deadlineNanos())
        .setDesiredRateBitsPerSecond(p.desiredRateBitsPerSecond())
        .setImportance(p.importance())
        .setPhi(p.phi())
        .setMode(mode(p.mode()))
        .setQuenchMode(quench(p.quenchMode()))
        .setReason(p.reason())
        .setRule(p.rule())
        .build();
  }

  /**
   * A rule from its message. proto3 has no presence for scalars, so importance and phi of 0 are
   * taken as given; enum fields left UNSPECIFIED become missing and fail validation by name.
   */
  static PolicyRule rule(io.datcp.proto.v1.PolicyRule r) {
    return new PolicyRule(r.getName(), r.getOrder(), r.getQueue(), r.getUser(),
        r.getJobNamePattern(), priority(r.getMinPriority()), r.getImportance(), r.getPhi(),
        mode(r.getMode()), quench(r.getQuenchMode()));
  }

  static io.datcp.proto.v1.PolicyRule rule(PolicyRule r) {
    return io.datcp.proto.v1.PolicyRule.newBuilder()
        .setName(r.name())
        .setOrder(r.order())
        .setQueue(nullToEmpty(r.queue()))
        .setUser(nullToEmpty(r.user()))
        .setJobNamePattern(nullToEmpty(r.jobNamePattern()))
        .setMinPriority(priority(r.minPriority()))
        .setImportance(r.importance())
        .setPhi(r.phi())
        .setMode(mode(r.mode()))
        .setQuenchMode(quench(r.quenchMode()))
        .build();
  }

  private static String nullToEmpty(String s) {
    return s == null ? "" : s;
  }
}

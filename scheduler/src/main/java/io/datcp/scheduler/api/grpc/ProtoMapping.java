package io.datcp.scheduler.api.grpc;

import io.datcp.proto.v1.RefusedEvent;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.flows.FlowKey;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.ingest.Ack;
import io.datcp.scheduler.ingest.Refused;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import io.datcp.scheduler.policy.PolicyRule;
import io.datcp.scheduler.policy.QuenchMode;
import io.datcp.scheduler.serve.FlowPolicy;
import io.datcp.scheduler.switches.MarkMode;
import io.datcp.scheduler.switches.SwitchBook;
import io.datcp.scheduler.switches.SwitchPort;
import io.grpc.Status;
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
            m.getHost(), m.getRunTimeNanos(), m.getOutputBytes(), m.getMapsRunning(),
            m.getAttempt(), m.getRunningMapsSinceUnixNanos(),
            m.getRunningMapStartsUnixNanosList());
      }
      case MAP_LOST: {
        var m = e.getMapLost();
        return new JobEvent.MapLost(t, m.getJobId(), m.getReduceId(), m.getMapId(), m.getHost(),
            m.getAttempt());
      }
      case FETCH_STARTED: {
        var f = e.getFetchStarted();
        return new JobEvent.FetchStarted(t, f.getJobId(), f.getReduceId(), f.getSourceHost(),
            f.getMapIdsList(), f.getBytes());
      }
      case FETCH_FINISHED: {
        var f = e.getFetchFinished();
        return new JobEvent.FetchFinished(t, f.getJobId(), f.getReduceId(), f.getSourceHost(),
            f.getMapIdsList(), f.getBytes(), f.getDurationNanos());
      }
      case SHUFFLE_FINISHED: {
        var s = e.getShuffleFinished();
        return new JobEvent.ShuffleFinished(t, s.getJobId(), s.getReduceId());
      }
      case JOB_FINISHED: {
        var j = e.getJobFinished();
        return new JobEvent.JobFinished(t, j.getJobId(), j.getSucceeded());
      }
      case MAP_OUTPUT_INDEXED: {
        var m = e.getMapOutputIndexed();
        // the parsed message's own list (immutable, backed by a long[]): a boxed copy of up to
        // jobs.maxReduces sizes per event was most of what a flood of indexes allocated
        return new JobEvent.MapOutputIndexed(t, m.getJobId(), m.getMapId(), m.getHost(),
            m.getPartitionBytesList());
      }
      case CONTAINERS_RUNNING: {
        var c = e.getContainersRunning();
        return new JobEvent.ContainersRunning(t, c.getJobId(), c.getHost(), c.getRunning());
      }
      default:
        throw new InvalidFieldException("events[" + index + "].event", "is not set");
    }
  }

  static ReportAck ack(Ack ack) {
    ReportAck.Builder b = ReportAck.newBuilder().setAccepted(ack.accepted())
        .setDuplicate(ack.duplicate());
    for (Refused r : ack.refused()) {
      b.addRefused(RefusedEvent.newBuilder().setIndex(r.index()).setMessage(r.message())
          .setCode((switch (r.reason()) {
            case INVALID -> Status.INVALID_ARGUMENT;
            case NOT_PERMITTED -> Status.PERMISSION_DENIED;
            case LIMIT -> Status.RESOURCE_EXHAUSTED;
          }).getCode().value()));
    }
    return b.build();
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
      case QUENCH_MODE_OFF: return QuenchMode.OFF;
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
        o.getFinishUnixNanos(), o.getMet(), q, o.hasFlow() ? flow(o.getFlow()) : null);
  }

  /** A flow key; its job and reduce default to the enclosing message's when left empty. */
  static FlowKey flow(io.datcp.proto.v1.FlowKey k, String jobId, int reduceId) {
    return new FlowKey(k.getJobId().isEmpty() ? jobId : k.getJobId(),
        k.getJobId().isEmpty() ? reduceId : k.getReduceId(), k.getSourceHost(),
        k.getMapIdsList(), k.getSourceAddress(), k.getSourcePort(),
        k.getDestinationAddress(), k.getDestinationPort(), k.getEpoch() & 0xffffffffL);
  }

  static FlowKey flow(io.datcp.proto.v1.FlowKey k) {
    return flow(k, k.getJobId(), k.getReduceId());
  }

  static io.datcp.proto.v1.FlowKey flow(FlowKey k) {
    return io.datcp.proto.v1.FlowKey.newBuilder()
        .setJobId(k.jobId())
        .setReduceId(k.reduceId())
        .setSourceHost(k.sourceHost())
        .addAllMapIds(k.mapIds())
        .setSourceAddress(k.sourceAddress())
        .setSourcePort(k.sourcePort())
        .setDestinationAddress(k.destinationAddress())
        .setDestinationPort(k.destinationPort())
        .setEpoch((int) k.epoch())
        .build();
  }

  static io.datcp.proto.v1.SwitchConfig switchConfig(SwitchBook.SwitchConfig c) {
    io.datcp.proto.v1.SwitchConfig.Builder b = io.datcp.proto.v1.SwitchConfig.newBuilder()
        .setSwitchName(c.name()).setTimeUnixNanos(c.timeUnixNanos());
    for (SwitchPort p : c.ports()) {
      b.addPorts(io.datcp.proto.v1.SwitchPort.newBuilder()
          .setInterface(p.iface())
          .setRateBitsPerSecond(p.rateBitsPerSecond())
          .setBufferBytes(p.bufferBytes())
          .setMark(io.datcp.proto.v1.MarkMode.valueOf("MARK_MODE_" + p.mark().name()))
          .setRedMinBytes(p.redMinBytes())
          .setRedMaxBytes(p.redMaxBytes())
          .setRedMaxP(p.redMaxP())
          .setKBytes(p.kBytes())
          .putAllDscpBand(p.dscpBand()));
    }
    return b.build();
  }

  static List<SwitchPort> ports(io.datcp.proto.v1.SwitchConfig c) {
    return c.getPortsList().stream().map(p -> new SwitchPort(p.getInterface(),
        p.getRateBitsPerSecond(), p.getBufferBytes(), mark(p.getMark()), p.getRedMinBytes(),
        p.getRedMaxBytes(), p.getRedMaxP(), p.getKBytes(), p.getDscpBandMap())).toList();
  }

  private static MarkMode mark(io.datcp.proto.v1.MarkMode m) {
    switch (m) {
      case MARK_MODE_NONE: return MarkMode.NONE;
      case MARK_MODE_RED: return MarkMode.RED;
      case MARK_MODE_STEP: return MarkMode.STEP;
      case MARK_MODE_PFDCT: return MarkMode.PFDCT;
      default: return null;
    }
  }

  static io.datcp.proto.v1.FlowPolicy policy(FlowPolicy p) {
    io.datcp.proto.v1.FlowPolicy.Builder b = io.datcp.proto.v1.FlowPolicy.newBuilder()
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
        .setRule(p.rule());
    if (p.flow() != null) {
      b.setFlow(flow(p.flow()));
    }
    return b.build();
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

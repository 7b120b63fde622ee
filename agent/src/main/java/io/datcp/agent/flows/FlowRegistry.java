package io.datcp.agent.flows;

import io.datcp.agent.config.AgentConf;
import io.datcp.agent.failopen.Outage;
import io.datcp.agent.kernel.FlowMeta;
import io.datcp.agent.kernel.FlowStats;
import io.datcp.agent.kernel.FlowTuple;
import io.datcp.agent.kernel.Kernel;
import io.datcp.agent.kernel.KernelEvent;
import io.datcp.agent.kernel.KernelException;
import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowKey;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.QuenchMode;
import io.datcp.proto.v1.QuenchOutcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;
import java.util.regex.Pattern;

/**
 * The agent's flows: registrations from the shuffle plugin, their kernel entries, the kernel's
 * events, the scheduler's policies, and the quench orders that follow.
 *
 * <p>A registration is answered from what is at hand (cached policy or the default) and written
 * into the kernel at once; the scheduler's answer, when it comes, replaces the kernel entry.
 * A flow is forgotten, and its kernel entry deleted, when the kernel reports its last byte
 * acknowledged, when the plugin aborts it, or after a timeout. When the kernel reports the
 * socket closed, the flow is forgotten without a delete: the kernel has removed the entry.
 */
public final class FlowRegistry {
  private static final Logger LOG = Logger.getLogger(FlowRegistry.class.getName());
  /** Hadoop job ids: job_<cluster timestamp>_<sequence>. */
  private static final Pattern JOB_ID = Pattern.compile("job_[0-9]{1,20}_[0-9]{1,10}");
  private static final Pattern HOST = Pattern.compile("[A-Za-z0-9._-]{0,253}");
  /** Reduce indexes beyond this are not a real job's. */
  private static final int MAX_REDUCE_ID = 1_000_000;
  /** The bound OrdersRequest.subscriber_id has. */
  private static final int MAX_SUBSCRIBER_BYTES = 256;

  private final Kernel kernel;
  private final PolicySource policies;
  private final FlowListener listener;
  private final PolicyTranslator translator;
  private final String hostName;
  private final TokenBucket registerRate;
  private final int maxLiveFlows;
  private final int maxFlowsPerOwner;
  private final long maxFlowBytes;
  private final int maxMaps;
  private final long finishTimeoutNanos;
  private final long maxAgeNanos;
  private final long maxSuspendNanos;
  private final long connectionIdleNanos;

  private final ConcurrentHashMap<FlowTuple, Connection> connections = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<Long, Flow> flows = new ConcurrentHashMap<>();
  private final AtomicInteger liveCount = new AtomicInteger();
  /** Live flows per owner (local.maxFlowsPerPeer); an owner without flows has no entry. */
  private final ConcurrentHashMap<Owner, Integer> liveByOwner = new ConcurrentHashMap<>();
  /** Flows suspended and neither resumed nor forgotten. */
  private final AtomicInteger suspendedCount = new AtomicInteger();
  private final AtomicLong nextId = new AtomicLong(1);
  /** Suspended flows to resume once no connection monitor is held (lock order). */
  private final ConcurrentLinkedQueue<Flow> toResume = new ConcurrentLinkedQueue<>();
  private final Outage kernelOutage;
  /** Registrations written ahead for a crash; null when off. */
  private volatile FlowJournal journal;

  private final Counter registered;
  private final Counter invalid;
  private final Counter conflicts;
  private final Counter rateLimited;
  private final Counter full;
  private final Counter kernelWriteFailures;
  private final Counter policyUpdates;
  private final Counter unknownEvents;

  public FlowRegistry(AgentConf conf, String hostName, Kernel kernel, PolicySource policies,
      FlowListener listener, MeterRegistry meters) {
    this.kernel = kernel;
    this.policies = policies;
    this.listener = listener;
    this.hostName = hostName;
    translator = new PolicyTranslator(conf);
    registerRate = new TokenBucket(conf.get(AgentConf.REGISTER_RATE),
        conf.get(AgentConf.REGISTER_BURST), System::nanoTime);
    maxLiveFlows = conf.get(AgentConf.MAX_LIVE_FLOWS);
    maxFlowsPerOwner = conf.get(AgentConf.MAX_FLOWS_PER_PEER);
    maxFlowBytes = conf.get(AgentConf.MAX_FLOW_BYTES);
    maxMaps = conf.get(AgentConf.MAX_MAPS_PER_FLOW);
    finishTimeoutNanos = conf.get(AgentConf.FINISH_TIMEOUT_MS) * 1_000_000L;
    maxAgeNanos = conf.get(AgentConf.MAX_FLOW_AGE_MS) * 1_000_000L;
    maxSuspendNanos = conf.get(AgentConf.MAX_SUSPEND_MS) * 1_000_000L;
    connectionIdleNanos = conf.get(AgentConf.CONNECTION_IDLE_MS) * 1_000_000L;
    kernelOutage = new Outage(LOG, "kernel flow table (libdatcp)",
        "flows run as plain TCP");
    registered = Counter.builder("datcp.agent.registrations").tag("result", "ok")
        .description("RegisterFlow calls by result").register(meters);
    invalid = Counter.builder("datcp.agent.registrations").tag("result", "invalid")
        .register(meters);
    conflicts = Counter.builder("datcp.agent.registrations").tag("result", "conflict")
        .register(meters);
    rateLimited = Counter.builder("datcp.agent.registrations").tag("result", "rate_limited")
        .register(meters);
    full = Counter.builder("datcp.agent.registrations").tag("result", "full").register(meters);
    kernelWriteFailures = Counter.builder("datcp.agent.kernel.write.failures")
        .description("kernel writes that failed (the flow ran as plain TCP)").register(meters);
    policyUpdates = Counter.builder("datcp.agent.policy.applied")
        .description("scheduler policies written into live flows' kernel entries")
        .register(meters);
    unknownEvents = Counter.builder("datcp.agent.kernel.events.unknown")
        .description("kernel events for flows this agent does not track").register(meters);
    Gauge.builder("datcp.agent.flows.live", liveCount, AtomicInteger::get)
        .description("flows tracked").register(meters);
  }

  // ---- RegisterFlow ----

  /** Registers a flow of the agent's own process (tests, benches): see the owner's overload. */
  public FlowRegistered register(FlowRegistration r) throws Rejected {
    return register(r, Owner.IN_PROCESS);
  }

  /**
   * Registers one flow of owner and writes it into the kernel. Never waits for the scheduler.
   *
   * @throws Rejected with nothing changed
   */
  public FlowRegistered register(FlowRegistration r, Owner owner) throws Rejected {
    if (!registerRate.tryAcquire()) {
      rateLimited.increment();
      throw new Rejected(Rejected.Reason.RESOURCE_EXHAUSTED,
          "registration rate limit exceeded (local.registerRatePerSecond); retry later");
    }
    FlowTuple tuple = validate(r);
    if (liveCount.get() >= maxLiveFlows) {
      full.increment();
      throw new Rejected(Rejected.Reason.RESOURCE_EXHAUSTED, "agent tracks " + maxLiveFlows
          + " flows already (local.maxLiveFlows); end flows first");
    }
    if (liveByOwner.getOrDefault(owner, 0) >= maxFlowsPerOwner) {
      full.increment();
      throw new Rejected(Rejected.Reason.RESOURCE_EXHAUSTED, "the registering process (" + owner
          + ") has " + maxFlowsPerOwner + " live flows already (local.maxFlowsPerPeer); end"
          + " flows first");
    }
    long nowUnix = unixNanos(Instant.now());
    long nowMono = kernel.nowNs();
    FlowPolicy cached = policies.cached(r.getJobId(), r.getReduceId());
    FlowPolicy policy = cached != null ? translator.sanitize(cached, nowUnix)
        : translator.defaultPolicy(r.getJobId(), r.getReduceId());
    Flow flow;
    Flow superseded;
    while (true) {
      Connection c = connections.computeIfAbsent(tuple, Connection::new);
      synchronized (c) {
        if (connections.get(tuple) != c) {
          continue; // the sweep dropped it (idle) between the lookup and the lock: look again
        }
        Flow cur = c.current;
        if (cur != null && cur.live() && !cur.registration.getJobId().equals(r.getJobId())) {
          conflicts.increment();
          throw new Rejected(Rejected.Reason.ALREADY_EXISTS, "4-tuple " + tuple
              + " is owned by live flow " + cur.id + " of " + cur.registration.getJobId());
        }
        int epoch = c.nextEpoch();
        flow = new Flow(nextId.getAndIncrement(), tuple, epoch, r, owner, nowUnix, nowMono,
            policy);
        flow.meta = write(tuple, translator.meta(policy, r.getBytes(), epoch, nowMono, nowMono,
            nowUnix));
        superseded = cur != null && flows.containsKey(cur.id) ? cur : null;
        c.lastEpoch = epoch;
        c.current = flow;
        c.lastUsedMonoNanos = nowMono;
        track(flow);
        FlowJournal j = journal;
        if (j != null) {
          j.append(flow); // after the put: a compaction that misses the flow sees it live
        }
        if (superseded != null) {
          // the next response started on this connection before the kernel saw the last byte
          // of the previous one acknowledged: that response is over on the sender
          finish(superseded, nowMono, true, false);
        }
        break;
      }
    }
    drainResumes();
    registered.increment();
    Flow registeredFlow = flow;
    policies.lookup(() -> lookupOf(registeredFlow), this::applyPolicy);
    FlowRegistered.Builder out = FlowRegistered.newBuilder().setFlowId(flow.id)
        .setEpoch(flow.epoch).setPolicy(policy.toBuilder().setFlow(flow.key(hostName)))
        .setInKernel(flow.meta != null);
    return out.build();
  }

  private FlowTuple validate(FlowRegistration r) throws Rejected {
    String problem = null;
    if (!JOB_ID.matcher(r.getJobId()).matches()) {
      problem = "job_id: '" + clip(r.getJobId()) + "' is not a job id (job_<digits>_<digits>)";
    } else if (r.getReduceId() < 0 || r.getReduceId() >= MAX_REDUCE_ID) {
      problem = "reduce_id: " + r.getReduceId() + " is not in 0.." + (MAX_REDUCE_ID - 1);
    } else if (r.getMapIdsCount() == 0) {
      problem = "map_ids: empty; a response carries at least one map output";
    } else if (r.getMapIdsCount() > maxMaps) {
      problem = "map_ids: " + r.getMapIdsCount() + " maps, at most " + maxMaps
          + " (local.maxMapsPerFlow)";
    } else if (r.getBytes() < 1 || r.getBytes() > maxFlowBytes) {
      problem = "bytes: " + r.getBytes() + " is not in 1.." + maxFlowBytes
          + " (local.maxFlowBytes)";
    } else if (r.getSubscriberIdBytes().size() > MAX_SUBSCRIBER_BYTES) {
      problem = "subscriber_id: " + r.getSubscriberIdBytes().size() + " bytes, at most "
          + MAX_SUBSCRIBER_BYTES;
    } else if (!HOST.matcher(r.getDestinationHost()).matches()) {
      problem = "destination_host: '" + clip(r.getDestinationHost()) + "' is not a host name";
    } else {
      for (int i = 0; i < r.getMapIdsCount(); i++) {
        if (r.getMapIds(i) < 0) {
          problem = "map_ids[" + i + "]: " + r.getMapIds(i) + " is negative";
          break;
        }
      }
    }
    if (problem == null) {
      try {
        return FlowTuple.of(r.getSourceAddress(), r.getSourcePort(), r.getDestinationAddress(),
            r.getDestinationPort());
      } catch (IllegalArgumentException e) {
        problem = clip(e.getMessage());
      }
    }
    invalid.increment();
    throw new Rejected(Rejected.Reason.INVALID_ARGUMENT, problem);
  }

  private static String clip(String s) {
    return s.length() <= 80 ? s : s.substring(0, 80) + "...";
  }

  private PolicyLookup lookupOf(Flow f) {
    FlowRegistration r = f.registration;
    return PolicyLookup.newBuilder().setAgentHost(hostName).setJobId(r.getJobId())
        .setReduceId(r.getReduceId()).setBytes(r.getBytes()).addAllMapIds(r.getMapIdsList())
        .setFlow(f.key(hostName)).build();
  }

  /** Writes meta on tuple; null (and one log line per outage) when the kernel refuses. */
  private FlowMeta write(FlowTuple tuple, FlowMeta meta) {
    try {
      kernel.setFlow(tuple, meta);
      kernelOutage.up();
      return meta;
    } catch (KernelException e) {
      kernelWriteFailures.increment();
      kernelOutage.down(e.getMessage());
      return null;
    }
  }

  // ---- EndFlow ----

  /**
   * EndFlow of a local process: as {@link #end(long, FlowEndReason)}, for a flow that caller
   * registered.
   *
   * @throws Rejected PERMISSION_DENIED when caller is not the process that registered it
   */
  public boolean end(long flowId, FlowEndReason reason, Owner caller) throws Rejected {
    Flow f = flows.get(flowId);
    if (f != null && !f.owner.equals(caller)) {
      throw new Rejected(Rejected.Reason.PERMISSION_DENIED, "flow " + flowId + " was"
          + " registered by another process (" + f.owner + "); the caller (" + caller
          + ") may end only the flows it registered");
    }
    return end(flowId, reason);
  }

  /**
   * The response was finished (or abandoned), whoever registered it (the agent's own call;
   * tests, benches). Returns false for a flow the agent does not track.
   */
  public boolean end(long flowId, FlowEndReason reason) {
    Flow f = flows.get(flowId);
    if (f == null) {
      return false;
    }
    Connection c = connections.get(f.tuple);
    synchronized (c) {
      if (!flows.containsKey(flowId) || f.ended) {
        return flows.containsKey(flowId);
      }
      f.ended = true;
      f.endedMonoNanos = kernel.nowNs();
      if (reason != FlowEndReason.FLOW_END_REASON_WRITTEN) {
        finish(f, f.endedMonoNanos, false, false);
      } else if (f.finished) {
        forget(f);
      } else if (f.meta == null) {
        // not in the kernel (plain TCP): no completion event will come; written is the best
        // estimate of finished there is
        finish(f, f.endedMonoNanos, true, false);
      }
    }
    drainResumes();
    return true;
  }

  // ---- kernel events ----

  /** One event of the kernel's ring (on the event thread). */
  public void onKernelEvent(KernelEvent e) {
    Connection c = connections.get(e.key());
    if (c == null) {
      unknownEvents.increment();
      return;
    }
    synchronized (c) {
      Flow f = c.current;
      if (f == null || f.epoch != e.epoch() || !flows.containsKey(f.id)) {
        unknownEvents.increment();
        return;
      }
      if (e.type() == KernelEvent.Type.FINISHED && !f.finished) {
        reportOutcome(f, f.startUnixNanos + e.fctNs(), e.met());
        f.finished = true;
        deleteKernelEntry(c, f);
        if (f.ended) {
          forget(f);
        }
        resumeYielded(f);
      } else if (e.type() == KernelEvent.Type.QUENCH) {
        quench(f, e);
      } else if (e.type() == KernelEvent.Type.RESUME) {
        resumedByKernel(f, e);
      } else if (e.type() == KernelEvent.Type.CLOSED) {
        closed(f, e);
      }
    }
    drainResumes();
  }

  /**
   * The socket closed (the response was killed, the connection dropped, or it closed after
   * its last byte): the kernel has already deleted registration and statistics.
   */
  private void closed(Flow f, KernelEvent e) {
    if (!f.finished) {
      long finishUnix = e.finished() ? f.startUnixNanos + e.fctNs() : 0;
      reportOutcome(f, finishUnix, e.finished() && e.met());
      f.finished = true;
    }
    f.meta = null; // nothing left in the kernel to delete
    forget(f);
    resumeYielded(f);
  }

  /** The kernel lifted the flow's quench (destination quiet, or quench timeout). */
  private void resumedByKernel(Flow f, KernelEvent e) {
    if (f.killed || !f.live()) {
      return;
    }
    if (f.suspended) {
      f.suspended = false;
      suspendedCount.decrementAndGet();
      f.yieldedTo.clear();
    }
    f.resumed = true;
    String why = e.resumeReason() == KernelEvent.ResumeReason.QUIET
        ? "resumed by the kernel: no congestion towards the destination"
        : "resumed by the kernel: quench timeout";
    listener.order(f.id, f.owner, f.registration.getSubscriberId(), FlowAction.FLOW_ACTION_RESUME, why);
  }

  /** DATCP Algorithm 2: the kernel found the flow cannot meet its deadline. */
  private void quench(Flow f, KernelEvent e) {
    String why = String.format("quenched: cannot meet deadline at precedence %.2f",
        e.precedence());
    if (e.quenched() == FlowMeta.Quench.KILL && !f.killed) {
      f.killed = true;
      listener.order(f.id, f.owner, f.registration.getSubscriberId(), FlowAction.FLOW_ACTION_KILL, why);
      resumeYielded(f); // a killed flow leaves the link: nobody waits for it
    } else if (e.quenched() == FlowMeta.Quench.SUSPEND && !f.suspended && !f.killed) {
      f.suspended = true;
      suspendedCount.incrementAndGet();
      f.suspendedMonoNanos = kernel.nowNs();
      // it resumes once the deadline flows it yields to are done (or after maxSuspend)
      for (Flow o : flows.values()) {
        if (o != f && o.live() && o.hasDeadline() && !o.suspended && !o.killed) {
          f.yieldedTo.add(o);
        }
      }
      listener.order(f.id, f.owner, f.registration.getSubscriberId(), FlowAction.FLOW_ACTION_SUSPEND,
          why);
    }
  }

  /** done has finished or ended: suspended flows waiting only for it resume. */
  private void resumeYielded(Flow done) {
    if (suspendedCount.get() == 0) {
      return; // the common case: nothing to scan
    }
    for (Flow s : flows.values()) {
      if (s.suspended && s.yieldedTo.remove(done) && s.yieldedTo.isEmpty()) {
        toResume.add(s);
      }
    }
  }

  private void drainResumes() {
    for (Flow s = toResume.poll(); s != null; s = toResume.poll()) {
      resume(s, "the flows it yielded to are done");
    }
  }

  private void resume(Flow s, String why) {
    Connection c = connections.get(s.tuple);
    synchronized (c) {
      if (!s.suspended) {
        return;
      }
      s.suspended = false;
      suspendedCount.decrementAndGet();
      s.resumed = true;
      s.yieldedTo.clear();
      if (s.meta != null && c.current == s && s.live()) {
        // a resume order (not quench off): Algorithm 2 may quench the flow again
        try {
          kernel.resumeFlow(s.tuple);
          kernelOutage.up();
        } catch (KernelException e) {
          kernelWriteFailures.increment();
          kernelOutage.down(e.getMessage());
        }
      }
      listener.order(s.id, s.owner, s.registration.getSubscriberId(), FlowAction.FLOW_ACTION_RESUME,
          "resumed: " + why);
    }
  }

  // ---- scheduler policies ----

  /**
   * A policy from the scheduler (a lookup's answer or a watched update): written into the
   * kernel entry of the flow it names, if that flow is still live.
   */
  public void applyPolicy(FlowPolicy raw) {
    if (!raw.hasFlow()) {
      return;
    }
    FlowKey k = raw.getFlow();
    FlowTuple tuple;
    try {
      tuple = FlowTuple.of(k.getSourceAddress(), k.getSourcePort(), k.getDestinationAddress(),
          k.getDestinationPort());
    } catch (IllegalArgumentException e) {
      return;
    }
    Connection c = connections.get(tuple);
    if (c == null) {
      return;
    }
    Flow unquenched = null;
    synchronized (c) {
      Flow f = c.current;
      if (f == null || f.epoch != k.getEpoch() || !f.live() || !flows.containsKey(f.id)) {
        return;
      }
      long nowUnix = unixNanos(Instant.now());
      long nowMono = kernel.nowNs();
      FlowPolicy p = translator.sanitize(raw, nowUnix);
      FlowMeta next = translator.meta(p, f.registration.getBytes(), f.epoch, f.startMonoNanos,
          nowMono, nowUnix);
      // carry the kernel's resume counter: a changed counter would be read as a resume order
      FlowMeta current = f.meta == null ? null : kernel.flowMeta(tuple).orElse(null);
      next = next.withResume(current != null ? current.resume() : 0);
      f.policy = p;
      if (f.meta == null || !next.equals(f.meta.withResume(next.resume()))) {
        f.meta = write(tuple, next);
        policyUpdates.increment();
      }
      if (f.suspended && p.getQuenchMode() == QuenchMode.QUENCH_MODE_OFF) {
        unquenched = f;
      }
    }
    if (unquenched != null) {
      // the scheduler put this flow's job first: a pause from before would only delay it
      resume(unquenched, "quenching turned off by the scheduler");
    }
  }

  // ---- ending flows ----

  /**
   * Ends f without the kernel's completion event: reports its outcome (finished at now when
   * doneNow, i.e. a later response superseded it or it was written outside the kernel; else
   * never, unless after a time-out the kernel's statistics say otherwise) and deletes its
   * kernel entry. Caller holds f's connection.
   */
  private void finish(Flow f, long nowMono, boolean doneNow, boolean timedOut) {
    if (!f.finished) {
      long finishUnix = doneNow ? f.startUnixNanos + (nowMono - f.startMonoNanos) : 0;
      FlowStats st = timedOut && f.meta != null ? kernel.flowStats(f.tuple).orElse(null) : null;
      if (st != null && st.epoch() == f.epoch && st.finished()) {
        finishUnix = f.startUnixNanos + st.fctNs(); // completion event lost (ring full)
      }
      reportOutcome(f, finishUnix, finishUnix != 0 && meetsDeadline(f, finishUnix));
      f.finished = true;
    }
    Connection c = connections.get(f.tuple);
    deleteKernelEntry(c, f);
    forget(f);
    resumeYielded(f);
  }

  private boolean meetsDeadline(Flow f, long finishUnix) {
    long d = f.policy.getDeadlineUnixNanos();
    return d == 0 || finishUnix <= d;
  }

  private void deleteKernelEntry(Connection c, Flow f) {
    if (c.current == f && f.meta != null) {
      kernel.deleteFlow(f.tuple);
      f.meta = null;
    }
  }

  /** Counts f as live (its owner's count too); caller holds f's connection. */
  private void track(Flow f) {
    flows.put(f.id, f);
    liveCount.incrementAndGet();
    liveByOwner.merge(f.owner, 1, Integer::sum);
  }

  private void forget(Flow f) {
    if (flows.remove(f.id) != null) {
      liveCount.decrementAndGet();
      liveByOwner.computeIfPresent(f.owner, (o, n) -> n == 1 ? null : n - 1);
    }
    f.ended = true;
    if (f.suspended) {
      f.suspended = false;
      suspendedCount.decrementAndGet();
    }
  }

  private void reportOutcome(Flow f, long finishUnix, boolean met) {
    FlowRegistration r = f.registration;
    QuenchOutcome q = f.killed ? QuenchOutcome.QUENCH_OUTCOME_KILLED
        : f.suspended || f.resumed ? QuenchOutcome.QUENCH_OUTCOME_SUSPENDED
        : QuenchOutcome.QUENCH_OUTCOME_NONE;
    listener.outcome(FlowOutcome.newBuilder().setJobId(r.getJobId())
        .setReduceId(r.getReduceId()).setSourceHost(hostName)
        .setDestinationHost(r.getDestinationHost()).setBytes(r.getBytes())
        .setStartUnixNanos(f.startUnixNanos)
        .setDeadlineUnixNanos(f.policy.getDeadlineUnixNanos()).setFinishUnixNanos(finishUnix)
        .setMet(met).setQuench(q).setFlow(f.key(hostName)).build());
  }

  /**
   * Time-outs: flows written but never reported acknowledged, flows never ended, suspensions
   * past quench.maxSuspendMillis, idle connections. Called periodically.
   */
  public void sweep() {
    long now = kernel.nowNs();
    List<Flow> resume = new ArrayList<>();
    for (Flow f : flows.values()) {
      Connection c = connections.get(f.tuple);
      synchronized (c) {
        if (!flows.containsKey(f.id)) {
          continue;
        }
        if (f.ended && now - f.endedMonoNanos > finishTimeoutNanos) {
          finish(f, now, false, true);
        } else if (now - f.startMonoNanos > maxAgeNanos) {
          finish(f, now, false, true);
        } else if (f.suspended && now - f.suspendedMonoNanos > maxSuspendNanos) {
          resume.add(f);
        }
      }
    }
    for (Flow f : resume) {
      resume(f, "suspended for quench.maxSuspendMillis");
    }
    drainResumes();
    for (Connection c : connections.values()) {
      // removed under its lock (removeIf would remove after the test, unlocked), so that a
      // registration holding the lock sees whether it is still the tuple's connection
      synchronized (c) {
        if ((c.current == null || !flows.containsKey(c.current.id))
            && now - c.lastUsedMonoNanos > connectionIdleNanos) {
          connections.remove(c.tuple, c);
        }
      }
    }
  }

  /** Flows tracked now. */
  public int liveFlows() {
    return liveCount.get();
  }

  /** The kernel outage tracker (tests, metrics). */
  public Outage kernelOutage() {
    return kernelOutage;
  }

  // ---- restart ----

  /** What a restarted agent needs to carry on: every tracked flow and connection. */
  public Snapshot snapshot() {
    List<Snapshot.FlowState> fs = new ArrayList<>();
    List<Snapshot.ConnState> cs = new ArrayList<>();
    for (Connection c : connections.values()) {
      synchronized (c) {
        cs.add(new Snapshot.ConnState(c.tuple, c.lastEpoch));
        Flow f = c.current;
        if (f != null && flows.containsKey(f.id)) {
          fs.add(new Snapshot.FlowState(f.id, f.epoch, f.registration, f.owner, f.policy,
              f.startUnixNanos, f.startMonoNanos, f.ended, f.finished, f.meta != null));
        }
      }
    }
    return new Snapshot(nextId.get(), fs, cs);
  }

  /**
   * Takes over the flows of a previous agent process. A flow whose kernel entry is gone (or
   * carries another epoch) finished meanwhile and is dropped.
   */
  public int restore(Snapshot s) {
    nextId.set(Math.max(nextId.get(), s.nextFlowId()));
    long now = kernel.nowNs();
    for (Snapshot.ConnState cs : s.connections()) {
      Connection c = connections.computeIfAbsent(cs.tuple(), Connection::new);
      c.lastEpoch = cs.lastEpoch();
      c.lastUsedMonoNanos = now;
    }
    int adopted = 0;
    for (Snapshot.FlowState fs : s.flows()) {
      FlowRegistration r = fs.registration();
      FlowTuple t = FlowTuple.of(r.getSourceAddress(), r.getSourcePort(),
          r.getDestinationAddress(), r.getDestinationPort());
      FlowMeta m = kernel.flowMeta(t).orElse(null);
      if (fs.inKernel() && (m == null || m.epoch() != fs.epoch())) {
        continue;
      }
      Flow f = new Flow(fs.id(), t, fs.epoch(), r, fs.owner(), fs.startUnixNanos(),
          fs.startMonoNanos(), fs.policy());
      f.meta = fs.inKernel() ? m : null;
      f.ended = fs.ended();
      f.endedMonoNanos = now;
      f.finished = fs.finished();
      Connection c = connections.computeIfAbsent(t, Connection::new);
      synchronized (c) {
        c.current = f;
        c.lastEpoch = Math.max(c.lastEpoch, fs.epoch());
        track(f);
      }
      adopted++;
    }
    return adopted;
  }

  /**
   * Takes over the flows a previous agent process registered and could not hand over (it was
   * killed): those in the journal in dir whose 4-tuple the kernel still holds at the same
   * epoch. Their policy is what the kernel entry says (deadline, importance, φ) until the
   * scheduler's watch stream resends it. Connections continue their epoch count.
   */
  public int recover(Path dir) {
    FlowJournal.Contents j = FlowJournal.read(dir);
    nextId.set(Math.max(nextId.get(), j.maxId() + 1));
    Map<FlowTuple, FlowJournal.Entry> latest = new HashMap<>();
    for (FlowJournal.Entry e : j.entries()) {
      latest.merge(e.tuple(), e, (a, b) -> b.id() > a.id() ? b : a);
    }
    long now = kernel.nowNs();
    int adopted = 0;
    for (FlowJournal.Entry e : latest.values()) {
      FlowTuple t = e.tuple();
      FlowMeta m = kernel.flowMeta(t).orElse(null);
      Connection c = connections.computeIfAbsent(t, Connection::new);
      synchronized (c) {
        c.lastEpoch = Math.max(c.lastEpoch, e.epoch());
        c.lastUsedMonoNanos = now;
        if (m == null || m.epoch() != e.epoch()
            || c.current != null && flows.containsKey(c.current.id)) {
          continue; // finished meanwhile (the entry is gone), or a later flow holds it
        }
        FlowRegistration r = e.registration();
        FlowPolicy p = translator.defaultPolicy(r.getJobId(), r.getReduceId()).toBuilder()
            .setImportance(m.importance()).setPhi(m.phi())
            .setDeadlineUnixNanos(m.deadlineNs() == 0 ? 0
                : e.startUnixNanos() + (m.deadlineNs() - e.startMonoNanos()))
            .setReason("recovered from the flow journal: the previous agent stopped without"
                + " handing its flows over")
            .build();
        Flow f = new Flow(e.id(), t, e.epoch(), r, e.owner(), e.startUnixNanos(),
            e.startMonoNanos(), p);
        f.meta = m;
        c.current = f;
        track(f);
        adopted++;
      }
    }
    return adopted;
  }

  /**
   * Journals every registration from now on in dir (files of fileBytes), starting with the
   * flows tracked now; call after {@link #restore} or {@link #recover}, before serving.
   */
  public void startJournal(Path dir, int fileBytes) throws IOException {
    journal = FlowJournal.open(dir, fileBytes, nextId.get() - 1,
        () -> new ArrayList<>(flows.values()));
  }

  /** Stops journaling (the agent is stopping; the snapshot takes over). */
  public void stopJournal() {
    FlowJournal j = journal;
    journal = null;
    if (j != null) {
      j.close();
    }
  }

  /** Connections known (tests, metrics). */
  public int connections() {
    return connections.size();
  }

  static long unixNanos(Instant t) {
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }
}

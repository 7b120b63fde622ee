package io.datcp.agent.kernel;

import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The kernel's flow table and event ring as the agent uses them. {@link DatcpKernel} is the
 * real one (libdatcp); {@link #absent(String)} is the fail-open stand-in when datcp cannot be
 * loaded: every write fails, so every flow runs as plain TCP.
 */
public interface Kernel {

  /** False when the kernel data path is not in use (see {@link #absent(String)}). */
  boolean available();

  /** CLOCK_MONOTONIC now, nanoseconds: the clock of deadlines and start times. */
  long nowNs();

  /** Registers or replaces the flow on key; a new epoch starts a new flow on the connection. */
  void setFlow(FlowTuple key, FlowMeta meta) throws KernelException;

  /**
   * Lifts the flow's quench (datcp_flow_resume: bumps the resume counter; the quench mode
   * stays armed, so Algorithm 2 may quench it again).
   */
  void resumeFlow(FlowTuple key) throws KernelException;

  /** Deletes the flow's registration and statistics; false when there was none. */
  boolean deleteFlow(FlowTuple key);

  /** The registration on key, if any. */
  Optional<FlowMeta> flowMeta(FlowTuple key);

  /** The statistics on key, if any. */
  Optional<FlowStats> flowStats(FlowTuple key);

  /**
   * Every registration of this agent's network namespace (agents of other namespaces on the
   * kernel have their own entries, even on the same 4-tuple).
   */
  Map<FlowTuple, FlowMeta> flows() throws KernelException;

  /** Number of registered flows on the kernel, of every network namespace. */
  int flowCount() throws KernelException;

  /**
   * Opens the event ring of this process's network namespace (replacing an earlier agent's
   * there); events go to sink on the thread that polls.
   */
  Events openEvents(Consumer<KernelEvent> sink) throws KernelException;

  /** An open event ring. Not thread-safe: one thread polls. */
  interface Events extends AutoCloseable {
    /** Waits up to timeoutMs for events and hands them to the sink; returns how many. */
    int poll(int timeoutMs) throws KernelException;

    @Override
    void close();
  }

  /** A kernel that refuses every write with reason, for fail-open operation. */
  static Kernel absent(String reason) {
    return absent(reason, System::nanoTime);
  }

  /** As {@link #absent(String)}, on the given clock (a test's clock far from the machine's). */
  static Kernel absent(String reason, LongSupplier clock) {
    return new Kernel() {
      @Override
      public boolean available() {
        return false;
      }

      @Override
      public long nowNs() {
        return clock.getAsLong();
      }

      @Override
      public void setFlow(FlowTuple key, FlowMeta meta) throws KernelException {
        throw new KernelException(19, "kernel data path not in use: " + reason);
      }

      @Override
      public void resumeFlow(FlowTuple key) throws KernelException {
        throw new KernelException(19, "kernel data path not in use: " + reason);
      }

      @Override
      public boolean deleteFlow(FlowTuple key) {
        return false;
      }

      @Override
      public Optional<FlowMeta> flowMeta(FlowTuple key) {
        return Optional.empty();
      }

      @Override
      public Optional<FlowStats> flowStats(FlowTuple key) {
        return Optional.empty();
      }

      @Override
      public Map<FlowTuple, FlowMeta> flows() {
        return Map.of();
      }

      @Override
      public int flowCount() {
        return 0;
      }

      @Override
      public Events openEvents(Consumer<KernelEvent> sink) throws KernelException {
        throw new KernelException(19, "kernel data path not in use: " + reason);
      }
    };
  }
}

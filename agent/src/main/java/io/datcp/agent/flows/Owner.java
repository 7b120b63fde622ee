package io.datcp.agent.flows;

/**
 * The local process that registered a flow, as the kernel names it (SO_PEERCRED of the
 * connection it registered on): only it may end the flow, and its live flows count against
 * local.maxFlowsPerPeer. A process, not a user: the NodeManager's tasks may run as its user,
 * and a task must not end the shuffle service's flows. The pid is the one in the agent's pid
 * namespace (0 for a process outside it and its children).
 */
public record Owner(int uid, int pid) {
  /** Callers inside the agent's own JVM (tests, benches); pid 0 is no process of its own. */
  public static final Owner IN_PROCESS = new Owner(0, 0);

  @Override
  public String toString() {
    return "uid " + Integer.toUnsignedString(uid) + " pid " + pid;
  }
}

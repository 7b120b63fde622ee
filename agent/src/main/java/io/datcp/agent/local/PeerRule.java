package io.datcp.agent.local;

import io.datcp.agent.flows.Owner;
import java.util.OptionalInt;

/**
 * Who may use a local socket, judged by the connecting process's SO_PEERCRED: root and the
 * NodeManager's user (local.nodeManagerUser), or anyone the socket file lets connect.
 */
public final class PeerRule {
  /** Every process the socket file's group and mode let connect (local.eventsSocketPeers=any). */
  public static final PeerRule ANYONE = new PeerRule(OptionalInt.empty(), true);

  private final OptionalInt nodeManagerUid;
  private final boolean anyone;

  private PeerRule(OptionalInt nodeManagerUid, boolean anyone) {
    this.nodeManagerUid = nodeManagerUid;
    this.anyone = anyone;
  }

  /** Root and nodeManagerUid (empty: root only). */
  public static PeerRule nodeManager(OptionalInt nodeManagerUid) {
    return new PeerRule(nodeManagerUid, false);
  }

  /** Null when peer may connect; else why not, naming the key that would allow it. */
  String refusal(Owner peer) {
    if (anyone || peer.uid() == 0
        || nodeManagerUid.isPresent() && nodeManagerUid.getAsInt() == peer.uid()) {
      return null;
    }
    return "uid " + Integer.toUnsignedString(peer.uid()) + " (pid " + peer.pid() + ") may not"
        + " use the agent's socket: only root and the NodeManager's user (local.nodeManagerUser="
        + (nodeManagerUid.isPresent() ? Integer.toUnsignedString(nodeManagerUid.getAsInt())
            : "<unset: root only>")
        + ") register and end flows, follow orders and send reports";
  }
}

#!/usr/bin/env bash
# Puts this host behind the ToR: everything in the fabric prefix goes via the ToR (the
# host's own link is a Docker network shared only with the ToR), with the paper's
# rto_min of 10 ms, and segmentation offloads off so the ToR's AQM sees MTU-sized packets.
# The fabric routes also carry the congestion control of this host's connections (the
# per-netns default cannot be set in a container: /proc/sys is read-only there, and the
# host's default may be bbr); the DATCP sockops program still moves shuffle sockets to datcp
# and asks for ECN in their SYN (the route's congctl applies after its CONNECT_CB).
# Env: DATCP_TOR_IP (required), DATCP_FABRIC (default 10.213.0.0/16), DATCP_CC (default cubic).
set -euo pipefail
: "${DATCP_TOR_IP:?set DATCP_TOR_IP to the address of the ToR on this link}"
fabric=${DATCP_FABRIC:-10.213.0.0/16}
dev=$(ip -o route get "$DATCP_TOR_IP" | sed -E 's/.* dev ([^ ]+).*/\1/')
ethtool -K "$dev" tso off gso off gro off >/dev/null 2>&1 || echo "fabric-net: cannot turn offloads off on $dev" >&2
cc=${DATCP_CC:-cubic}
ip route replace "$fabric" via "$DATCP_TOR_IP" dev "$dev" rto_min 10ms congctl "$cc"
# the connected /24 (the ToR itself) gets the same rto_min
net=$(ip -o -4 route show dev "$dev" proto kernel scope link | awk '{print $1}')
src=$(ip -o -4 route show dev "$dev" proto kernel scope link | sed -E 's/.* src ([^ ]+).*/\1/')
ip route replace "$net" dev "$dev" proto kernel scope link src "$src" rto_min 10ms congctl "$cc"
# and so do connections to this host's own address (a reduce fetching a map output of its own
# host: it never crosses the ToR, but would otherwise run the machine's default, e.g. bbr)
ip route replace local "$src" dev "$dev" table local proto kernel scope host src "$src" congctl "$cc"


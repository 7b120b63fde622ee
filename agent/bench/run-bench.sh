#!/usr/bin/env bash
# Registration benchmark (not a test): starts the packaged agent pinned to one core (taskset -c
# 0), registers flows over its Unix socket from another core with RegistrationBench, one
# RegisterFlow call per flow ("unary"), one item per message on a RegisterFlows stream
# ("stream") and batched on a RegisterFlowBatches stream as the plugin does ("batch") side by
# side, and prints registrations/s, p50/p99/max latency from the call to the answer (sent after
# the kernel entry is written) and the agent's CPU per registration for 1, 8, 16 and 64 in
# flight and at 20,000 and 50,000 offered per second, the load average with each row, and the
# ratios to unary. Then runs the kernel-map churn check with a million flows (KernelChurnTest;
# SKIP_CHURN=1 skips it).
# Profile the agent: AGENT_JAVA_OPTS='-XX:StartFlightRecording=filename=/tmp/agent.jfr'.
# BENCH_NICE=-10 runs the agent and the client at that nice value (default 0): on a machine
# shared with other work, it shows the path's own latency apart from waiting for a CPU.
# Needs root, bpffs and kmod/build/libdatcp.so. Build first, from the repository root:
#   make -C kmod && mvn -q package -pl proto,agent -am -DskipTests
# Extra arguments go to RegistrationBench, e.g. --flows 500000 --in-flight 1,64 --rates 80000.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/.." && pwd)"
jar="$here/target/datcp-agent.jar"
classes="$here/target/test-classes"
lib="$root/kmod/build/libdatcp.so"
[[ -f "$jar" && -d "$classes" && -f "$lib" ]] || {
	echo "build first: make -C kmod && mvn package -pl proto,agent -am -DskipTests" >&2; exit 1; }
work="$(mktemp -d)"
cat > "$work/agent.properties" <<PROPS
agent.host=bench-host
local.socketPath=$work/agent.sock
state.dir=$work/state
kernel.library=$lib
scheduler.target=
metrics.port=-1
PROPS

exec 9>/tmp/datcp-kernel.lock
flock 9
pid=
cleanup() {
	[[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	"$root/kmod/build/datcpctl" unload >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

taskset -c 0 nice -n "${BENCH_NICE:-0}" java -Xmx1g ${AGENT_GC:--XX:+UseParallelGC} -XX:ActiveProcessorCount=1 ${AGENT_JAVA_OPTS:-} -jar "$jar" \
	--config "$work/agent.properties" > "$work/agent.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [[ -S "$work/agent.sock" ]] && break; sleep 0.1; done
[[ -S "$work/agent.sock" ]] || { cat "$work/agent.log"; exit 1; }
echo "$(date -u '+%Y-%m-%d %H:%M UTC'); agent (pid $pid) pinned to CPU 0, client to CPU 1;" \
	"$(nproc) CPUs, $(uname -r); nice ${BENCH_NICE:-0}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c 1 nice -n "${BENCH_NICE:-0}" java -Xmx1g ${BENCH_JAVA_OPTS:-} -cp "$jar:$classes" io.datcp.agent.bench.RegistrationBench \
	--socket "$work/agent.sock" --agent-pid "$pid" "$@"
kill "$pid"; wait "$pid" 2>/dev/null || true
pid=
flock -u 9
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[[ "${SKIP_CHURN:-}" == 1 ]] && exit 0

echo
echo "kernel-map churn: 1,000,000 flows registered and ended through the flow registry"
cd "$root"
mvn -o -q -pl agent surefire:test -Dtest=KernelChurnTest -Ddatcp.churn.flows=1000000 \
	-Dsurefire.failIfNoSpecifiedTests=false 2>&1 | grep -E 'churn:|Tests run|FAIL' || true

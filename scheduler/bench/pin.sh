# Sourced by run-load.sh and run-hostile.sh. PIN=1: the scheduler on CPU 0, the benchmark
# clients (and a fake RM they serve) on CPU 1, each JVM still sized for 2 CPUs: the clients' work
# no longer takes the scheduler's CPU, nor the scheduler the clients' clocks. Sets server_cpu and
# client_cpu (command prefixes) and adds to SCHEDULER_JAVA_OPTS and BENCH_JAVA_OPTS.
# FAVOUR=1: the benchmark (this shell and all it starts) runs in a cgroup-v1 cpu group with 100x
# the CPU shares of any other process, so builds and tests that share the machine take little of
# its CPU and seldom delay its wake-ups; unfavour (from the caller's exit trap) removes the group.
server_cpu=()
client_cpu=()
if [[ "${PIN:-0}" == 1 ]]; then
  server_cpu=(taskset -c 0)
  client_cpu=(taskset -c 1)
  # G1 as on 2 CPUs (a JVM that sees one CPU picks the serial collector) unless one is asked for
  [[ "${SCHEDULER_JAVA_OPTS:-}" == *-XX:+Use*GC* ]] || SCHEDULER_JAVA_OPTS="-XX:+UseG1GC ${SCHEDULER_JAVA_OPTS:-}"
  SCHEDULER_JAVA_OPTS="-XX:ActiveProcessorCount=2 ${SCHEDULER_JAVA_OPTS}"
  BENCH_JAVA_OPTS="-XX:ActiveProcessorCount=2 -XX:+UseG1GC ${BENCH_JAVA_OPTS:-}"
fi

favour_group=/sys/fs/cgroup/cpu/datcp-bench
if [[ "${FAVOUR:-0}" == 1 ]]; then
  [[ -d /sys/fs/cgroup/cpu ]] || { echo "FAVOUR=1 needs the cgroup-v1 cpu controller at /sys/fs/cgroup/cpu" >&2; exit 1; }
  mkdir -p "$favour_group"
  echo 102400 > "$favour_group/cpu.shares"
  echo $$ > "$favour_group/cgroup.procs"
fi
unfavour() {
  if [[ "${FAVOUR:-0}" == 1 && -d "$favour_group" ]]; then
    echo $$ > /sys/fs/cgroup/cpu/cgroup.procs
    rmdir "$favour_group" 2>/dev/null || true
  fi
}

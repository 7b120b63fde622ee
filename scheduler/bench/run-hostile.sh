#!/usr/bin/env bash
# Hostile-load benchmark (issue 18 item 5): the load benchmark's honest traffic of 10,000 hosts
# (LoadBenchmark, at a set job rate) against the packaged scheduler, run with -Xmx1g; after its
# measured window a second one of --hostile-seconds (60 by default) while HostileClient, a node
# with a valid token of its own (host evil), sends the worst valid messages as fast as it can.
# Prints both windows, the honest p99 of each call kind with/without the attacker and the ratio,
# and the scheduler's heap from its GC log: the most used before a collection (what the heap
# peaked at) and the most left after one (what it held), over each window.
# Build first: mvn -q package -pl proto,scheduler -am -DskipTests   (from the repository root)
# Extra arguments go to the benchmark; defaults: --hosts 10000 --jobs-per-second 20 --seconds 30
# --hostile-seconds 60. SCHEDULER_JAVA_OPTS / BENCH_JAVA_OPTS add JVM options; GRPC_PORT and
# HTTP_PORT override the ports (19090, 18080); ATTACKER_JAVA_OPTS sets the attacker's own JVM's
# options (default -XX:TieredStopAtLevel=1, see below; ATTACKER_JAVA_OPTS= for the JVM's
# default compilers); KEEP_LOGS=DIR keeps the scheduler's GC log and log
# there; SCHEDULER_JAR=path runs that scheduler jar instead (an older one: the same attack
# before the bounds), the clients still from this tree; EXTRA_CONF='key=value ...' adds scheduler
# settings (e.g. reports.maxBytesPerSecondPerHost=1048576); PIN=1 runs the scheduler on CPU 0 and
# the clients (honest and hostile) on CPU 1, as run-load.sh does, so the clients' own CPU no
# longer delays the scheduler (nor the scheduler the clients' clocks); FAVOUR=1 gives the
# whole benchmark 100x the CPU shares of other work on the machine (bench/pin.sh). The honest hosts send no node tokens, so the
# scheduler runs with auth.nodes.required=false and jobs.attributesFrom=reports; the attacker's
# calls carry its token and are checked as in production.
# The attacker runs in a JVM of its own, not the honest clients' (on the same CPU as they, the
# clients' one under PIN=1): a real attacker's machine is not the honest nodes', and in the
# benchmark's JVM the attack's start has its compiler and message building take the core whose
# event loops time the honest calls. ATTACKER_JVM=SECONDS (25 by default): before the measured
# scheduler starts,
# that JVM attacks a throwaway scheduler of its own (another process on the scheduler's CPU,
# ports WARM_GRPC_PORT and WARM_HTTP_PORT, by default GRPC_PORT+1 and HTTP_PORT+1, its own data
# directory, the same settings but no start-up drill) for SECONDS, so that its sending path is
# compiled; the throwaway is then killed, and the attacker waits (idle) until the benchmark
# starts its attacked window (LoadBenchmark --hostile-signal-dir: files, see AttackSignals).
# ATTACKER_JVM=0: its own JVM without a warm-up. ATTACKER_JVM=in-process: the attacker in the
# benchmark's JVM, as every run before 2026-11-27's tenth session (bench/results, hostile-load).
# Every process started here is killed on exit, failure or signal.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
jar="$here/target/scheduler.jar"
classes="$here/target/test-classes"
[[ -f "$jar" && -d "$classes" ]] || { echo "build first: mvn package -pl proto,scheduler -am" >&2; exit 1; }
grpc_port="${GRPC_PORT:-19090}"
http_port="${HTTP_PORT:-18080}"
attacker_warmup="${ATTACKER_JVM:-25}"  # empty: in the benchmark's JVM
# C1 only: the scheduler's refusals, not its code, pace the attacker (7 calls/s answered either
# way), and C2's recompiles in the attack's first seconds took the honest clients' core (2.4-3.3 s
# of JIT there), which a real attacker's machine does not share
attacker_opts="${ATTACKER_JAVA_OPTS--XX:TieredStopAtLevel=1}"
if [[ "$attacker_warmup" == in-process ]]; then
  attacker_warmup=""
elif [[ ! "$attacker_warmup" =~ ^[0-9]+$ ]]; then
  echo "ATTACKER_JVM must be the attacker's warm-up in seconds (0 or more; default 25) or in-process; got '$attacker_warmup'" >&2; exit 1
fi
pid=""           # the measured scheduler
warm_pid=""      # the attacker's throwaway scheduler
attacker_pid=""  # the attacker's own JVM
bench_pid=""     # the benchmark (honest clients)
view_pid=""      # what shows its output
data="$(mktemp -d)"
stop() {  # stop PID: kill it and reap it
  kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true
}
cleanup() {
  for p in "$bench_pid" "$view_pid" "$attacker_pid" "$warm_pid" "$pid"; do [[ -z "$p" ]] || stop "$p"; done
  if declare -F unfavour >/dev/null; then unfavour; fi
  if [[ -n "${KEEP_LOGS:-}" ]]; then
    mkdir -p "$KEEP_LOGS" && cp "$data/gc.log" "$data/scheduler.log" "$KEEP_LOGS/" || true
    [[ -z "$attacker_warmup" ]] || cp "$data"/attacker.* "$KEEP_LOGS/" 2>/dev/null || true
  fi
  rm -rf "$data"
}
trap cleanup EXIT
# a signal exits through the trap above too
trap 'exit 143' TERM
trap 'exit 130' INT
await_health() {  # await_health PORT PID: up to 60 s for the scheduler's /healthz
  for _ in $(seq 1 60); do
    curl -fs "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 1
  done
  echo "scheduler pid $2 did not come up on port $1" >&2; return 1
}

# shellcheck source=pin.sh
source "$here/bench/pin.sh"

printf 'auth.nodes.required=false\njobs.attributesFrom=reports\ntls.plaintext=true\n' > "$data/scheduler.properties"
for kv in ${EXTRA_CONF:-}; do echo "$kv" >> "$data/scheduler.properties"; done
server_jar="${SCHEDULER_JAR:-$jar}"
token="$(java -jar "$server_jar" --data-dir "$data" --mint-node-token evil)"
bench_args=(--target "127.0.0.1:$grpc_port" --hosts 10000 --jobs-per-second 20 --seconds 30
  --hostile-seconds 60 --hostile-token "$token" "$@")
signal_args=()
if [[ -n "$attacker_warmup" ]]; then
  signals="$data/signals"
  signal_args=(--hostile-signal-dir "$signals")
  warm_args=()
  if (( attacker_warmup > 0 )); then
    warm="$data/warm"
    warm_grpc="${WARM_GRPC_PORT:-$((grpc_port + 1))}"
    warm_http="${WARM_HTTP_PORT:-$((http_port + 1))}"
    mkdir -p "$warm"
    { cat "$data/scheduler.properties"; echo startup.drillSeconds=0; } > "$warm/scheduler.properties"
    warm_token="$(java -jar "$server_jar" --data-dir "$warm" --mint-node-token evil)"
    # only a target to send to: its JVM's settings do not matter
    ${server_cpu[@]+"${server_cpu[@]}"} java -Xmx1g -XX:+UseG1GC -jar "$server_jar" \
      --data-dir "$warm" --grpc-port "$warm_grpc" --http-port "$warm_http" \
      --config "$warm/scheduler.properties" > "$warm/scheduler.log" 2>&1 &
    warm_pid=$!
    await_health "$warm_http" "$warm_pid"
    warm_args=(--hostile-warmup-seconds "$attacker_warmup" --hostile-warmup-target
      "127.0.0.1:$warm_grpc" --hostile-warmup-token "$warm_token")
  fi
  # shellcheck disable=SC2086
  ${client_cpu[@]+"${client_cpu[@]}"} java -Xmx1g ${BENCH_JAVA_OPTS:-} $attacker_opts \
    -cp "$jar:$classes" io.datcp.scheduler.bench.LoadBenchmark "${bench_args[@]}" --hostile-attacker \
    "${signal_args[@]}" "${warm_args[@]+"${warm_args[@]}"}" \
    > "$data/attacker.out" 2> "$data/attacker.err" &
  attacker_pid=$!
  for _ in $(seq 1 $((attacker_warmup + 120))); do
    [[ -f "$signals/ready" ]] && break
    kill -0 "$attacker_pid" 2>/dev/null || break
    sleep 1
  done
  [[ -f "$signals/ready" ]] || {
    echo "the attacker's JVM did not get ready:" >&2; tail -n 20 "$data/attacker.err" >&2; exit 1; }
  if [[ -n "$warm_pid" ]]; then
    stop "$warm_pid"
    echo "== attacker in its own JVM (options: $attacker_opts), pid $attacker_pid, warmed up ${attacker_warmup} s on a throwaway scheduler (pid $warm_pid, port $warm_grpc, now stopped)"
    warm_pid=""
  else
    echo "== attacker in its own JVM (options: $attacker_opts), pid $attacker_pid, no warm-up"
  fi
  grep -v ' INFO ' "$data/attacker.out" || true
fi
# shellcheck disable=SC2086
${server_cpu[@]+"${server_cpu[@]}"} java -Xmx1g -Xlog:gc:file="$data/gc.log":uptime,timemillis ${SCHEDULER_JAVA_OPTS:-} -jar "$server_jar" \
  --data-dir "$data" --grpc-port "$grpc_port" --http-port "$http_port" \
  --config "$data/scheduler.properties" > "$data/scheduler.log" 2>&1 &
pid=$!
await_health "$http_port" "$pid"
echo "== scheduler ($server_jar), -Xmx1g, pid $pid"
out="$data/bench.out"
# in the background, so that a signal to this shell is handled at once (a foreground command
# would be waited for) and the trap stops the benchmark too
: > "$data/bench.raw"  # before tail opens it
# shellcheck disable=SC2086
${client_cpu[@]+"${client_cpu[@]}"} java -Xmx2g ${BENCH_JAVA_OPTS:-} -cp "$jar:$classes" io.datcp.scheduler.bench.LoadBenchmark \
  --server-pid "$pid" --server-gc-log "$data/gc.log" "${bench_args[@]}" \
  "${signal_args[@]+"${signal_args[@]}"}" > "$data/bench.raw" &
bench_pid=$!
tail -s 0.2 --pid="$bench_pid" -n +1 -f "$data/bench.raw" | grep --line-buffered -v ' INFO ' | tee "$out" &
view_pid=$!
wait "$bench_pid"
bench_pid=""
wait "$view_pid"
if [[ -n "$attacker_pid" ]]; then
  # it exits once it has handed over its last attack's summary
  wait "$attacker_pid" || echo "attacker JVM exited with status $?; its errors:" "$(tail -n 5 "$data/attacker.err")"
  attacker_pid=""
fi

# refusals over the whole run: the attacker's are counted by HostileClient above; any more
# were the honest hosts' (the defaults must refuse none of theirs)
echo
curl -fs "http://127.0.0.1:$http_port/metrics" | grep -E '^datcp_report_(events_refused|rejected)_total' \
  | sed 's/^/scheduler: /' || true

# heap over a window of scheduler uptime [from, to]: max used before and after a pause, MB, and
# the pauses' time (a call that arrives during one waits for it)
heap() {
  sed -n 's/^\[\([0-9.]*\)s\].* \([0-9]*\)M->\([0-9]*\)M(\([0-9]*\)M) \([0-9.]*\)ms$/\1 \2 \3 \4 \5/p' \
    "$data/gc.log" | awk -v from="$1" -v to="$2" '
      $1 + 0 >= from && $1 + 0 <= to {
        if ($2 + 0 > before) before = $2 + 0
        if ($3 + 0 > after) after = $3 + 0
        if ($4 + 0 > committed) committed = $4 + 0
        paused += $5; if ($5 + 0 > longest) longest = $5 + 0
        n++
      }
      END { f = "%5d MB peak used (before a collection), %5d MB most held after one, %5d MB"
            f = f " committed, %d pauses, %.0f ms paused (%.2f%% of the window), longest %.1f ms\n"
            printf f, before, after, committed, n, paused, to < 1e9 ? paused / (to - from) / 10 : 0,
              longest }'
}
window() {  # window LABEL: the uptimes the benchmark printed for that window
  sed -n "s/^-- $1 (scheduler uptime \([0-9.]*\) to \([0-9.]*\) s)$/\1 \2/p" "$out"
}
echo
read -r a0 a1 < <(window "honest load alone")
read -r b0 b1 < <(window "honest load with the attacker")
echo "scheduler heap, honest load alone     ($a0-$a1 s): $(heap "$a0" "$a1")"
echo "scheduler heap, with the attacker     ($b0-$b1 s): $(heap "$b0" "$b1")"
read -r c0 c1 < <(window "honest load with the attacker, round 2") || true
if [[ -n "${c0:-}" ]]; then
  echo "scheduler heap, attacker round 2      ($c0-$c1 s): $(heap "$c0" "$c1")"
fi
echo "scheduler heap, whole run                       : $(heap 0 1e9)"
if grep -q OutOfMemoryError "$data/scheduler.log"; then
  echo "scheduler: OutOfMemoryError (see its log)"
fi
echo "full collections: $(grep -c "Pause Full" "$data/gc.log" || true)"

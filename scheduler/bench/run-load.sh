#!/usr/bin/env bash
# Load benchmark: starts the packaged scheduler, runs LoadBenchmark (1,000 simulated hosts by
# default) against its gRPC port, prints reports/s, lookups/s and latency percentiles, stops it.
# Build first: mvn -q package -pl proto,scheduler -am -DskipTests   (from the repository root)
# Extra arguments go to the benchmark, e.g. --hosts 10000 --workers 64 --seconds 30.
# OLD_JAR=path/to/an/older/scheduler.jar runs the same benchmark against it first, so old and
# new numbers come from one run; it gets the same development config (OLD_DEV_CONFIG=0: no
# config file, for jars older than those keys, 7577081 and before); NEW_FIRST=1 runs the new one
# first (load on a shared machine drifts: alternate the order). SCHEDULER_JAVA_OPTS adds
# JVM options to the scheduler(s), e.g. "-XX:+UseZGC"; BENCH_JAVA_OPTS to the benchmark client.
# The simulated hosts send no node tokens, so the scheduler runs with auth.nodes.required=false
# and jobs.attributesFrom=reports (development mode); with tokens each call costs one SHA-256
# more. Client and scheduler share the loopback, so the new jar runs with tls.plaintext=true;
# an OLD_JAR gets it too with OLD_TLS=1 (jars that have the tls.* keys).
# RM_AB=1 instead runs the current jar twice with node tokens (every host its own, so the
# scheduler checks every claim): "old" without a ResourceManager (host checks only), "new" with
# a fake ResourceManager (port RM_PORT, default 18088; the benchmark starts it in a JVM of its own
# on the clients' CPU, or on RM_CPUS, a taskset list) that places each job's containers on its
# hosts, so each report is verified against YARN; compare shows the cost. The benchmark starts
# the fake RM and tells it each job's hosts in both runs, so the clients do the same work and
# the two differ only in the scheduler (and in the fake RM's answers to it).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
jar="$here/target/scheduler.jar"
classes="$here/target/test-classes"
[[ -f "$jar" && -d "$classes" ]] || { echo "build first: mvn package -pl proto,scheduler -am" >&2; exit 1; }
grpc_port="${GRPC_PORT:-19090}"
http_port="${HTTP_PORT:-18080}"
pid=""
data=""
# shellcheck source=pin.sh
source "$here/bench/pin.sh"
results="$(mktemp -d)"
trap 'cleanup; rm -rf "$results"' EXIT
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if declare -F unfavour >/dev/null; then unfavour; fi
  if [[ -n "$data" ]]; then rm -rf "$data"; fi
  pid=""
  data=""
}

# run LABEL JAR [--config FILE]: one scheduler, one benchmark run against it.
run() {
  local label="$1" server_jar="$2"
  shift 2
  data="$(mktemp -d)"
  local config=() bench=()
  if [[ "${1:-}" == "--dev-config" ]]; then
    printf 'auth.nodes.required=false\njobs.attributesFrom=reports\n' > "$data/scheduler.properties"
    config=(--config "$data/scheduler.properties")
    shift
  elif [[ "${1:-}" == "--tokens-rm-idle" || "${1:-}" == "--tokens-rm" ]]; then
    printf 'jobs.attributesFrom=reports\ntls.plaintext=true\n' > "$data/scheduler.properties"
    # both runs start the fake RM and tell it every job's hosts: only the scheduler differs
    bench=(--fake-rm-port "${RM_PORT:-18088}" --fake-rm-cpus "${RM_CPUS:-}")
    if [[ "$1" == "--tokens-rm" ]]; then
      printf 'yarn.rm.webappAddress=http://127.0.0.1:%s\n' "${RM_PORT:-18088}" \
        >> "$data/scheduler.properties"
    fi
    java -cp "$jar:$classes" io.datcp.scheduler.bench.LoadBenchmark --write-node-tokens "$data" \
      "${@:2}"
    config=(--config "$data/scheduler.properties")
    bench+=(--node-tokens)
    shift
  fi
  if [[ "${1:-}" == "--plaintext" ]]; then
    echo 'tls.plaintext=true' >> "$data/scheduler.properties"
    shift
  fi
  # shellcheck disable=SC2086
  ${server_cpu[@]+"${server_cpu[@]}"} java -Xmx2g ${SCHEDULER_JAVA_OPTS:-} -jar "$server_jar" --data-dir "$data" --grpc-port "$grpc_port" \
    --http-port "$http_port" "${config[@]}" > "$data/scheduler.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 60); do
    curl -fs "http://127.0.0.1:$http_port/healthz" >/dev/null 2>&1 && break
    sleep 1
  done
  echo "== $label scheduler ($server_jar)"
  # shellcheck disable=SC2086
  ${client_cpu[@]+"${client_cpu[@]}"} java -Xmx1g ${BENCH_JAVA_OPTS:-} -cp "$jar:$classes" \
    io.datcp.scheduler.bench.LoadBenchmark \
    --target "127.0.0.1:$grpc_port" --server-pid "$pid" "${bench[@]}" "$@" | grep -v ' INFO ' \
    | tee "$results/$label"
  cleanup
}

# field FILE LINE-PREFIX N: the Nth whitespace-separated field after the prefix.
field() {
  awk -v p="$2" -v n="$3" 'index($0, p) == 1 { sub(p, ""); split($0, f, " "); print f[n] }' "$1"
}

# Old and new side by side, with new/old ratios.
compare() {
  local o="$results/old" n="$results/new"
  printf '\n%-28s %12s %12s %10s\n' "" old new new/old
  local row name prefix col
  for row in "all requests/s|all requests|1" "all requests p50 ms|all requests|4" \
      "all requests p99 ms|all requests|7" "all but firsts p99 ms|all but firsts|7" \
      "policy lookups p99 ms|policy lookups|7" \
      "shuffle reports p99 ms|shuffle reports|7" \
      "job's first report p50 ms| job's first|4" "job's first report p99 ms| job's first|7" \
      "server CPU ms/1000 req|server CPU|1" "benchmark CPU ms/1000 req|benchmark CPU|1" \
      "benchmark GC ms in window|benchmark GC|3"; do
    IFS='|' read -r name prefix col <<< "$row"
    local a b
    a="$(field "$o" "$prefix" "$col")"
    b="$(field "$n" "$prefix" "$col")"
    awk -v name="$name" -v a="$a" -v b="$b" \
      'BEGIN { printf "%-28s %12s %12s %9.2fx\n", name, a, b, (a > 0 ? b / a : 0) }'
  done
  printf '%-28s %s | %s\n' "load average (1/5/15 min)" \
    "$(field "$o" "load average" 1) $(field "$o" "load average" 2) $(field "$o" "load average" 3)" \
    "$(field "$n" "load average" 1) $(field "$n" "load average" 2) $(field "$n" "load average" 3)"
}

run_old() {
  if [[ "${OLD_DEV_CONFIG:-1}" == 0 ]]; then
    run old "$OLD_JAR" "$@"
  elif [[ "${OLD_TLS:-0}" == 1 ]]; then
    run old "$OLD_JAR" --dev-config --plaintext "$@"
  else
    run old "$OLD_JAR" --dev-config "$@"
  fi
}

if [[ "${RM_AB:-0}" == 1 && "${NEW_FIRST:-0}" == 1 ]]; then
  run new "$jar" --tokens-rm "$@"
  run old "$jar" --tokens-rm-idle "$@"
  compare
elif [[ "${RM_AB:-0}" == 1 ]]; then
  run old "$jar" --tokens-rm-idle "$@"
  run new "$jar" --tokens-rm "$@"
  compare
elif [[ -z "${OLD_JAR:-}" ]]; then
  run new "$jar" --dev-config --plaintext "$@"
elif [[ "${NEW_FIRST:-0}" == 1 ]]; then
  run new "$jar" --dev-config --plaintext "$@"
  run_old "$@"
  compare
else
  run_old "$@"
  run new "$jar" --dev-config --plaintext "$@"
  compare
fi

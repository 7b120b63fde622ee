#!/usr/bin/env bash
# Load benchmark: starts the packaged scheduler, runs LoadBenchmark (1,000 simulated hosts by
# default) against its gRPC port, prints reports/s, lookups/s and latency percentiles, stops it.
# Build first: mvn -q package -pl proto,scheduler -am -DskipTests   (from the repository root)
# Extra arguments go to the benchmark, e.g. --hosts 10000 --workers 64 --seconds 30.
# OLD_JAR=path/to/an/older/scheduler.jar runs the same benchmark against it first (started
# without a config file), so old and new numbers come from one run. SCHEDULER_JAVA_OPTS adds
# JVM options to the scheduler(s), e.g. "-XX:+UseZGC".
# The simulated hosts send no node tokens, so the scheduler runs with auth.nodes.required=false
# and jobs.attributesFrom=reports (development mode); with tokens each call costs one SHA-256
# more.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
jar="$here/target/scheduler.jar"
classes="$here/target/test-classes"
[[ -f "$jar" && -d "$classes" ]] || { echo "build first: mvn package -pl proto,scheduler -am" >&2; exit 1; }
grpc_port="${GRPC_PORT:-19090}"
http_port="${HTTP_PORT:-18080}"
pid=""
data=""
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [[ -n "$data" ]]; then rm -rf "$data"; fi
  pid=""
  data=""
}
trap cleanup EXIT

# run LABEL JAR [--config FILE]: one scheduler, one benchmark run against it.
run() {
  local label="$1" server_jar="$2"
  shift 2
  data="$(mktemp -d)"
  local config=()
  if [[ "${1:-}" == "--dev-config" ]]; then
    printf 'auth.nodes.required=false\njobs.attributesFrom=reports\n' > "$data/scheduler.properties"
    config=(--config "$data/scheduler.properties")
    shift
  fi
  # shellcheck disable=SC2086
  java -Xmx2g ${SCHEDULER_JAVA_OPTS:-} -jar "$server_jar" --data-dir "$data" --grpc-port "$grpc_port" \
    --http-port "$http_port" "${config[@]}" > "$data/scheduler.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 60); do
    curl -fs "http://127.0.0.1:$http_port/healthz" >/dev/null 2>&1 && break
    sleep 1
  done
  echo "== $label scheduler ($server_jar)"
  java -Xmx1g -cp "$jar:$classes" io.datcp.scheduler.bench.LoadBenchmark \
    --target "127.0.0.1:$grpc_port" --server-pid "$pid" "$@"
  cleanup
}

if [[ -n "${OLD_JAR:-}" ]]; then
  run old "$OLD_JAR" "$@"
fi
run new "$jar" --dev-config "$@"

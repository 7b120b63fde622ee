#!/usr/bin/env bash
# Load benchmark: starts the packaged scheduler, runs LoadBenchmark (1,000 simulated hosts by
# default) against its gRPC port, prints reports/s, lookups/s and latency percentiles, stops it.
# Build first: mvn -q package -pl proto,scheduler -am -DskipTests   (from the repository root)
# Extra arguments go to the benchmark, e.g. --hosts 1000 --workers 64 --seconds 30.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
jar="$here/target/scheduler.jar"
classes="$here/target/test-classes"
[[ -f "$jar" && -d "$classes" ]] || { echo "build first: mvn package -pl proto,scheduler -am" >&2; exit 1; }
data="$(mktemp -d)"
grpc_port="${GRPC_PORT:-19090}"
http_port="${HTTP_PORT:-18080}"
java -Xmx2g -jar "$jar" --data-dir "$data" --grpc-port "$grpc_port" --http-port "$http_port" \
  > "$data/scheduler.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 1 60); do
  curl -fs "http://127.0.0.1:$http_port/healthz" >/dev/null 2>&1 && break
  sleep 1
done
java -Xmx1g -cp "$jar:$classes" io.datcp.scheduler.bench.LoadBenchmark \
  --target "127.0.0.1:$grpc_port" "$@"

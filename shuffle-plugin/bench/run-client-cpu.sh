#!/usr/bin/env bash
# CPU of the plugin's agent client in a fresh JVM (not a test): each sample is a child JVM that
# builds one client, sends --batches batches of --events small events to a fake agent (in the
# parent JVM) and closes it, printing its own CPU time (user + system, all threads) per step.
# gRPC (AgentClient, the Forward rpc: what reduce tasks used before the events socket) and the
# events socket (EventsClient: what they use now) alternate round by round; the medians are
# printed side by side with their ratio. Child JVM options default to the Docker cluster's
# reduce tasks' (-Xmx384m -XX:TieredStopAtLevel=1, docker/node/conf/mapred-site.xml).
# Arguments go to ClientCpuProbe: [--rounds 10] [--batches 50] [--events 5] [--child-opts '...'].
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# compiles, and writes the test class path as surefire has it (Hadoop's jars too, as a reduce
# task's has them); in one Maven session, so the reactor's proto module resolves to its classes
mvn -B -o -q -pl proto,shuffle-plugin test-compile \
	org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath \
	-Dmdep.includeScope=test -Dmdep.outputFile="$work/cp.txt" >/dev/null
echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs, $(uname -r); $(java -version 2>&1 | head -1);" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)"
java -Xmx512m -cp "shuffle-plugin/target/test-classes:shuffle-plugin/target/classes:$(cat "$work/cp.txt")" \
	io.datcp.shuffle.bench.ClientCpuProbe "$@"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

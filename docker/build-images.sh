#!/usr/bin/env bash
# Builds every image of the Docker cluster, offline (no registry): skips what is up to date.
#   datcp/base:bookworm     debootstrap --variant=minbase of Debian bookworm (packages in
#                           docker/base/packages), imported with docker import
#   datcp/hadoop:dev        ResourceManager / NodeManager: Hadoop jars from docker/hadoop,
#                           the test jobs, and the DATCP plugin, agent and libdatcp if built
#   datcp/scheduler:dev     scheduler/target/scheduler.jar
#   datcp/tor:dev           the ToR switch: datcpctl + libdatcp (kmod/build), agent if built
#   datcp/zookeeper:dev     a ZooKeeper server for the HA variant: jars from docker/zookeeper
# Env: DATCP_PLUGIN_JAR, DATCP_AGENT_JAR, DATCP_KMOD_BUILD override where those come from.
# Needs root and a running dockerd. Run after `mvn package` (it takes the jars from the
# modules' target/ folders) or let `mvn verify` run it (it-tests, pre-integration-test).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ctx=$root/docker/target/ctx
log() { echo "build-images: $*"; }
die() { echo "build-images: $*" >&2; exit 1; }

docker info >/dev/null 2>&1 || die "no Docker daemon (scripts/test.sh and scripts/demo.sh start one)"

# ---- base: rebuilt only when the package list changes
packages=$(grep -v '^#' "$root/docker/base/packages" | grep -v '^$' | paste -sd, -)
want=$(echo "$packages" | sha256sum | cut -c1-16)
have=$(docker image inspect datcp/base:bookworm --format '{{index .Config.Labels "datcp.base.packages"}}' 2>/dev/null || true)
if [ "$have" != "$want" ]; then
	log "debootstrap bookworm (minbase + $packages)"
	command -v debootstrap >/dev/null || die "debootstrap is missing (scripts/install-deps.sh installs it)"
	rootfs=$(mktemp -d /var/tmp/datcp-rootfs.XXXXXX)
	trap 'rm -rf "$rootfs"' EXIT
	debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" >"$rootfs.log" 2>&1 ||
		{ tail -n 20 "$rootfs.log" >&2; die "debootstrap failed (log $rootfs.log)"; }
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
	tar -C "$rootfs" -c . | docker import --change "LABEL datcp.base.packages=$want" - datcp/base:bookworm >/dev/null
	rm -rf "$rootfs" "$rootfs.log"
	trap - EXIT
else
	log "datcp/base:bookworm is up to date"
fi

# ---- inputs from the other modules
jobs_jar=$root/it-tests/target/datcp-test-jobs.jar
scheduler_jar=$root/scheduler/target/scheduler.jar
# overridable, to build images with another worktree's plugin, agent or kmod build
plugin_jar=${DATCP_PLUGIN_JAR:-$root/shuffle-plugin/target/datcp-shuffle-plugin.jar}
agent_jar=${DATCP_AGENT_JAR:-$root/agent/target/datcp-agent.jar}
kmod_build=${DATCP_KMOD_BUILD:-$root/kmod/build}
[ -f "$jobs_jar" ] || die "$jobs_jar is missing: run 'mvn package -DskipTests' first"
[ -f "$scheduler_jar" ] || die "$scheduler_jar is missing: run 'mvn package -DskipTests' first"
log "Hadoop jars (docker/hadoop)"
mvn -B -q -f "$root/docker/hadoop/pom.xml" package
log "ZooKeeper jars (docker/zookeeper)"
mvn -B -q -f "$root/docker/zookeeper/pom.xml" package
if [ -z "${DATCP_KMOD_BUILD:-}" ]; then
	make -s -C "$root/kmod" build/datcpctl build/libdatcp.so || die "kmod build failed"
fi

# dropins/: what each image gets under /opt/datcp; absent parts are simply not there
dropins() {
	local d=$1
	mkdir -p "$d/plugin" "$d/agent" "$d/kmod" "$d/jobs"
	cp "$kmod_build/datcpctl" "$kmod_build/libdatcp.so" "$d/kmod/"
	if [ -f "$plugin_jar" ]; then cp "$plugin_jar" "$d/plugin/"; fi
	if [ -f "$agent_jar" ]; then cp "$agent_jar" "$d/agent/"; fi
}
rm -rf "$ctx"
mkdir -p "$ctx/node" "$ctx/tor" "$ctx/scheduler" "$ctx/zookeeper"
cp -r "$root/docker/node/." "$ctx/node/"
cp -r "$root/docker/hadoop/target/lib" "$ctx/node/hadoop-lib"
dropins "$ctx/node/dropins"
cp "$jobs_jar" "$ctx/node/dropins/jobs/"
cp -r "$root/docker/tor/." "$ctx/tor/"
dropins "$ctx/tor/dropins"
cp "$root/docker/scheduler/"* "$scheduler_jar" "$root/docker/node/bin/fabric-net.sh" \
	"$root/scripts/tls-pki.sh" "$ctx/scheduler/"
cp "$root/docker/zookeeper/Dockerfile" "$root/docker/zookeeper/zookeeper-entrypoint.sh" \
	"$root/docker/node/bin/fabric-net.sh" "$root/scripts/tls-pki.sh" "$ctx/zookeeper/"
cp -r "$root/docker/zookeeper/target/lib" "$ctx/zookeeper/lib"

for img in node:hadoop tor:tor scheduler:scheduler zookeeper:zookeeper; do
	dir=${img%%:*} name=datcp/${img#*:}:dev
	log "$name"
	DOCKER_BUILDKIT=0 docker build -t "$name" "$ctx/$dir" >"$ctx/$dir.log" 2>&1 ||
		{ tail -n 30 "$ctx/$dir.log" >&2; die "building $name failed (log $ctx/$dir.log)"; }
done
log "plugin: $([ -f "$plugin_jar" ] && echo yes || echo no), agent: $([ -f "$agent_jar" ] && echo yes || echo no)"
docker image prune -f --filter label=datcp.base.packages >/dev/null
log "done"

# Sourced by scripts/test.sh and scripts/demo.sh: a Docker daemon for the cluster.
#   docker_up     starts dockerd when none answers (remembers that it did)
#   docker_down   stops the dockerd that docker_up started, nothing else
DATCP_DOCKERD_PID=""

docker_up() {
	if docker info >/dev/null 2>&1; then
		return 0
	fi
	echo "docker: starting dockerd (log /tmp/datcp-dockerd.log)"
	dockerd >/tmp/datcp-dockerd.log 2>&1 &
	DATCP_DOCKERD_PID=$!
	for _ in $(seq 60); do
		docker info >/dev/null 2>&1 && return 0
		sleep 1
	done
	echo "docker: dockerd did not answer within 60 s" >&2
	return 1
}

docker_down() {
	if [ -n "$DATCP_DOCKERD_PID" ]; then
		kill "$DATCP_DOCKERD_PID" 2>/dev/null
		wait "$DATCP_DOCKERD_PID" 2>/dev/null
		DATCP_DOCKERD_PID=""
	fi
}

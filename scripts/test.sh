#!/usr/bin/env bash
# The test command: installs what is missing, builds everything and runs
# every test (C unit tests of the core, kernel tests, dcudp's and fqcn's tests,
# namespace tests of bench/, Java tests). Runs all suites even when one fails, prints one line
# per suite and a total "N passed, N failed", and exits non-zero on any
# failure. Needs root (BPF, network namespaces).
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=$(mktemp -d /tmp/datcp-test.XXXXXX)
total_pass=0 total_fail=0 rc=0
summary=()

bash scripts/install-deps.sh || { echo "install-deps failed"; exit 1; }

# record NAME PASSED FAILED EXIT_STATUS
record() {
	summary+=("$(printf '%-22s %5s passed, %3s failed%s' "$1" "$2" "$3" "$([ "$4" -ne 0 ] && echo "  (exit $4)")")")
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
	if [ "$4" -ne 0 ]; then
		rc=1
		[ "$3" -eq 0 ] && total_fail=$((total_fail + 1)) # a suite that broke before counting
	fi
}

# "N passed, N failed" closing line of the C suites (the unit suite ends with "unit tests: N passed, N failed")
plain_counts() { tail -n 5 "$1" | grep -Eo '[0-9]+ passed, [0-9]+ failed' | tail -n 1 | awk '{print $1, $3}'; }

# c_suite NAME LOG COMMAND...: a suite whose output ends with "N passed, N failed"
c_suite() {
	local name=$1 log=$2 st p f
	shift 2
	"$@" 2>&1 | tee "$log"
	st=${PIPESTATUS[0]}; read -r p f <<<"$(plain_counts "$log")"
	record "$name" "${p:-0}" "${f:-0}" "$st"
}

# c_build NAME LOG COMMAND...: a build, recorded only when it fails
c_build() {
	local name=$1 log=$2 st
	shift 2
	"$@" 2>&1 | tee "$log"
	st=${PIPESTATUS[0]}
	[ "$st" -ne 0 ] && record "$name" 0 1 "$st"
}

echo "== kmod: build"
c_build "kmod build" "$LOGS/kmod-build.log" make -C kmod all

echo "== kmod: unit tests of the algorithm core"
c_suite "kmod unit (vectors)" "$LOGS/kmod-unit.log" make -s -C kmod unit-test

echo "== kmod: kernel tests"
# the kernel is one per machine: suites that load datcp take this lock (agent tests and it-tests too)
c_suite "kmod kernel" "$LOGS/kmod-kernel.log" flock /tmp/datcp-kernel.lock make -s -C kmod kernel-test

echo "== dcudp: build, unit tests of the control law"
c_build "dcudp build" "$LOGS/dcudp-build.log" make -s -C dcudp all
c_suite "dcudp unit (vectors)" "$LOGS/dcudp-unit.log" make -s -C dcudp unit-test

echo "== dcudp: transfers between namespaces (pacing, loss, ECN marking)"
# the marking case configures a switch port through the kernel's datcp: same lock as kmod
c_suite "dcudp loopback" "$LOGS/dcudp-loop.log" flock /tmp/datcp-kernel.lock make -s -C dcudp loop-test

echo "== fqcn: build, unit tests of QCN's and FQCN's arithmetic"
c_build "fqcn build" "$LOGS/fqcn-build.log" make -s -C fqcn all
c_suite "fqcn unit (vectors)" "$LOGS/fqcn-unit.log" make -s -C fqcn unit-test

echo "== fqcn: QCN between namespaces (a CBR source cut on congestion, recovering; a TCP flow paced at CR)"
# timing-sensitive: the pacer and the user-space congestion point need the CPUs
c_suite "fqcn namespaces" "$LOGS/fqcn-ns.log" flock /tmp/datcp-bench.lock make -s -C fqcn ns-test

if [ -d bench/tests ]; then
	echo "== bench: namespace tests"
	# the trace replay needs the Java jars: it runs after the Java modules, below
	flock /tmp/datcp-kernel.lock python3 -m pytest -q bench/tests --ignore=bench/tests/test_trace_replay.py 2>&1 | tee "$LOGS/bench.log"
	st=${PIPESTATUS[0]}
	p=$(tail -n 3 "$LOGS/bench.log" | grep -Eo '[0-9]+ passed' | awk '{print $1}')
	f=$(tail -n 3 "$LOGS/bench.log" | grep -Eo '[0-9]+ (failed|error)' | awk '{s+=$1} END {print s+0}')
	record "bench (pytest)" "${p:-0}" "${f:-0}" "$st"
fi

# mvn_counts LOG: passed and failed from surefire/failsafe "Tests run: N, Failures: F, Errors: E" totals
mvn_counts() {
	grep -E '^\[(INFO|WARNING|ERROR)\] Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$' "$1" |
		sed -E 's/.*Tests run: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+), Skipped: ([0-9]+)/\1 \2 \3 \4/' |
		awk '{run+=$1; bad+=$2+$3; skip+=$4} END {print run-bad-skip, bad}'
}

if grep -q '<module>' pom.xml; then
	echo "== Java modules: mvn verify (integration tests of the Docker cluster run below)"
	mvn -B -ntp verify -pl '!it-tests' 2>&1 | tee "$LOGS/mvn.log"
	st=${PIPESTATUS[0]}
	read -r p f <<<"$(mvn_counts "$LOGS/mvn.log")"
	record "java (mvn verify)" "${p:-0}" "${f:-0}" "$st"
fi

if [ -f bench/tests/test_trace_replay.py ]; then
	echo "== bench: trace replay (real scheduler and agents in namespaces)"
	# the jars mvn verify packaged; a unit-test failure there stops before packaging
	[ -f scheduler/target/scheduler.jar ] && [ -f agent/target/datcp-agent.jar ] ||
		mvn -B -ntp -q -DskipTests package -pl proto,scheduler,agent -am 2>&1 | tail -n 20
	flock /tmp/datcp-kernel.lock python3 -m pytest -q bench/tests/test_trace_replay.py 2>&1 | tee "$LOGS/bench-replay.log"
	st=${PIPESTATUS[0]}
	p=$(tail -n 3 "$LOGS/bench-replay.log" | grep -Eo '[0-9]+ passed' | awk '{print $1}')
	f=$(tail -n 3 "$LOGS/bench-replay.log" | grep -Eo '[0-9]+ (failed|error)' | awk '{s+=$1} END {print s+0}')
	record "bench trace replay" "${p:-0}" "${f:-0}" "$st"
fi

if [ -d it-tests ]; then
	echo "== Docker cluster: images + integration tests (it-tests)"
	# shellcheck source=docker-env.sh
	. scripts/docker-env.sh
	start=$(date +%s)
	# the images take the plugin, agent and scheduler jars from target/: package them even when
	# a unit test above failed, so the cluster suite still tests them
	if docker_up && mvn -B -ntp -q -DskipTests package -pl '!it-tests' 2>&1 | tee "$LOGS/it-package.log"; then
		flock /tmp/datcp-kernel.lock mvn -B -ntp -pl it-tests verify 2>&1 | tee "$LOGS/it.log"
		st=${PIPESTATUS[0]}
		read -r p f <<<"$(mvn_counts "$LOGS/it.log")"
		# a failed round or failover is gone with the cluster and the clone: keep their records
		cp -r it-tests/target/ab it-tests/target/ha it-tests/target/failsafe-reports "$LOGS/" 2>/dev/null || true
	else
		st=1 p=0 f=0
	fi
	docker_down
	echo "docker cluster suite: $(($(date +%s) - start)) s"
	record "docker cluster (IT)" "${p:-0}" "${f:-0}" "$st"
fi

echo
echo "== summary (logs in $LOGS)"
printf '%s\n' "${summary[@]}"
echo "total: $total_pass passed, $total_fail failed"
exit $rc

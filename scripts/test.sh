#!/usr/bin/env bash
# The whole check: dependencies, lint, unit tests, short fuzz runs, integration tests against real
# ZooKeeper (Java backend; Debian's 3.8, then the persistent watch and cache tests on 3.9), the contract suite again with the wire layer off, the Kerberos
# module against a real MIT KDC, then the Docker
# backend tests of zktest/docker (a Docker daemon started for them is stopped after them). Every stage runs even after a failure (except deps), and
# a summary with times closes the output. Exit status is non-zero when any stage failed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export ZK_TEST_IMAGE="${ZK_TEST_IMAGE:-zkrecipes/zookeeper:3.8-debian}"
# The whole suite runs as CI does: a test whose server or foreign peer (Curator, kazoo)
# cannot start here fails instead of skipping, so a missing dependency can never pass for
# a green run. Run a single package with plain `go test` to get the skips.
export CI="${CI:-1}"

# A Docker daemon the docker-engine stage starts is this run's: it is recorded in a
# file of this run's own and stopped once the Docker stages are over, or on any exit
# (an interrupt included). An engine that was already running is left alone.
export DOCKERD_PIDFILE="${TMPDIR:-/tmp}/zkrecipes-dockerd.$$.pid"
rm -f "$DOCKERD_PIDFILE"
stop_docker() {
	"$ROOT/integration/docker/stop-docker.sh" ||
		echo "test.sh: the Docker daemon this run started may still run (pid in $DOCKERD_PIDFILE)" >&2
}
trap stop_docker EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

names=() results=() times=()
stage() { # stage NAME CMD...
	local name="$1" t0 rc
	shift
	echo
	echo "=== $name"
	t0=$(date +%s)
	"$@"
	rc=$?
	names+=("$name")
	times+=("$(($(date +%s) - t0))s")
	if [ $rc -eq 0 ]; then results+=(PASS); else results+=("FAIL($rc)"); fi
	return $rc
}

T0=$(date +%s)
stage deps scripts/deps.sh || { echo "test.sh: deps failed, stopping" >&2; exit 1; }
stage lint scripts/lint.sh
stage unit go test -race -count=1 -skip '^TestZK' ./...
stage unit-zkr bash -c 'cd cmd/zkr && go test -race -count=1 ./...'
# Lean: 40,000 executions a target here (fuzz.sh's default, 100,000, took 179 s beside two busy
# loops, 60,000 138 s); scripts/fuzz.sh run alone, or FUZZTIME, runs more.
stage fuzz env FUZZTIME="${FUZZTIME:-40000x}" scripts/fuzz.sh
# Every test against real servers outside the contract suite (the integration module's
# other packages, the zktest harness and its Docker backend's module, the OpenTelemetry
# adapter, the Prometheus example) runs in integration.sh's "others" part, beside the two
# shards of the contract suite.
stage integration scripts/integration.sh
# The release as a user meets it: a clone tagged by scripts/release.sh, served by a file
# module proxy; go get otelzk and kerberos, go install zkr, a lock on a real ZooKeeper
# (integration/release), after the go.sum lines of tools/modproxy, which release.sh writes.
# Then the exported API against the last tag (scripts/apicheck.sh).
stage release bash -c 'cd tools/modproxy && go test -count=1 ./... && cd ../../integration && ZK_TEST_BACKEND="${ZK_TEST_BACKEND:-java}" go test -count=1 -timeout 8m ./release/'
stage api scripts/apicheck.sh
# zkr's release archives (make snapshot), only when asked for with ZKR_SNAPSHOT=1: GoReleaser
# itself is a build of about 13 minutes on a fresh machine, and the cross-compiles some more.
if [ -n "${ZKR_SNAPSHOT:-}" ]; then
	stage snapshot scripts/goreleaser.sh
fi
# The persistent watch and cache tests again against ZooKeeper 3.9 (Debian 13's jars,
# fetched by deps.sh): the typed removal of persistent watches runs there only.
stage zk39 scripts/test-zk39.sh -race
# The contract suite again with the wire layer off (zkrecipes.WithWireLayer(false)), without
# -race: with the layer off nothing orders go-zookeeper's reading of its last zxid for SetWatches
# against the goroutine that records each reply's zxid (go-zookeeper/zk#35, go-zookeeper's own
# race, which the wire layer removes: internal/wire/zxid.go). A loaded machine trips it at
# random; the race-clean modes are listed in docs/reliability.md.
stage contract-nowire bash -c 'cd integration && ZKRECIPES_WIRE=off ZK_TEST_BACKEND="${ZK_TEST_BACKEND:-java}" go test -count=1 -timeout 5m -run Contract ./recipes/'
stage chaos-leasetime bash -c 'cd integration && ZK_TEST_BACKEND="${ZK_TEST_BACKEND:-java}" go test -race -count=1 -timeout 5m -run Chaos ./chaos/ -chaos.lease-time=300ms -chaos.duration=15s -chaos.clients=3'
# The Kerberos (GSSAPI) module: its unit tests, then its tests against a real MIT KDC and a
# SASL-enforcing ZooKeeper (integration/kerberos, a module of its own, so not in ./... above).
stage kerberos bash -c 'cd kerberos && go test -race -count=1 ./... && cd ../integration/kerberos && ZK_TEST_BACKEND=java go test -race -count=1 -timeout 5m ./...'
# The robustness suite's short run (make robustness runs the long one). Without -race: its
# caches on one-shot watches run on Sessions without the wire layer, where go-zookeeper's own
# race can trip after a reconnection (docs/reliability.md); the recipes' races are the other
# stages' to find.
stage robustness bash -c 'cd integration && ZK_TEST_BACKEND="${ZK_TEST_BACKEND:-java}" go test -count=1 -timeout 5m -run "^TestRobustness_RecipesUnderFaults$" ./robustness/ -robustness.duration=20s'
if stage docker-engine integration/docker/ensure-docker.sh && stage docker-image integration/docker/build-image.sh; then
	stage docker-tests bash -c 'cd zktest/docker && ZK_TEST_BACKEND=docker go test -race -count=1 -timeout 10m ./...'
fi
stop_docker

echo
echo "=== summary"
fail=0
for i in "${!names[@]}"; do
	printf '  %-14s %-9s %s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
	[ "${results[$i]}" = PASS ] || fail=1
done
printf '  %-14s %-9s %ss\n' total "$([ $fail = 0 ] && echo PASS || echo FAIL)" "$(($(date +%s) - T0))"
exit $fail

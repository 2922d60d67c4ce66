#!/usr/bin/env bash
# The integration stage of scripts/test.sh (and `make integration`): every package of the
# integration module against real ZooKeeper (Java backend unless ZK_TEST_BACKEND says
# otherwise), under -race, and the other modules' tests against real servers (zktest and
# zktest/docker, whose Docker tests skip here and run in test.sh's docker stage; otelzk; the
# Prometheus example). The contract suite (./recipes/, about 13 minutes of tests one after
# another, most of it spent waiting on timeouts, reconnections and peers) runs as two shards
# side by side, split by test name (shardA below, the rest), each with its own server, beside
# the other packages ("others", one go test over the workspace's modules), so the stage takes
# about as long as its longest part. ZK_INTEGRATION_TIMEOUT
# (default 15m) is each part's test timeout. Each part's output is printed whole, with its
# time, once it ends; a closing line names the parts that failed, and the exit status is
# non-zero when any did. Ctrl-C or SIGTERM stops every part. Needs bash 5.1 (wait -p).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT/integration"
export ZK_TEST_BACKEND="${ZK_TEST_BACKEND:-java}"
timeout="${ZK_INTEGRATION_TIMEOUT:-15m}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# stop ends every part and exits with status $1. A background job of a script starts with
# SIGINT ignored and a Go test binary leaves it so, hence the explicit kill. go test passes
# no signal on to the test binaries it runs: they are killed while it is held stopped, so it
# cannot start the next one. The servers die with their test binary (zktest's Pdeathsig).
p0= p1= p2=
stop() {
	if [ -n "$p0" ]; then
		kill -STOP "$p0" 2>/dev/null
		pkill -P "$p0" 2>/dev/null
	fi
	kill "$p0" "$p1" "$p2" 2>/dev/null
	[ -z "$p0" ] || kill -CONT "$p0" 2>/dev/null
	wait
	exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM

bin="$out/recipes.test"
if ! go test -race -c -o "$bin" ./recipes/; then
	echo "integration.sh: the contract suite does not build" >&2
	exit 1
fi
if ! pkgs=$(go list ./...); then
	echo "integration.sh: go list failed" >&2
	exit 1
fi
# integration/release is a stage of its own in scripts/test.sh (release).
others=$(grep -v -e '/integration/recipes$' -e '/integration/release$' <<<"$pkgs")
M=github.com/zkrecipes/zkrecipes
others="$others $M/zktest/... $M/otelzk/... $M/examples/prometheus-metrics/..."

# The first shard's tests (the root package's suite against a real server, 44 s, evens the two
# out: 390 and 373 s of tests on a quiet machine, 2026-11-29).
shardA='^Test([A-M]|RootPackage)'
t0=$SECONDS
go test -race -count=1 -timeout "$timeout" $others >"$out/others" 2>&1 &
p0=$!
(cd recipes && exec "$bin" -test.count=1 -test.paniconexit0 -test.timeout="$timeout" -test.run "$shardA") >"$out/recipes-a" 2>&1 &
p1=$!
(cd recipes && exec "$bin" -test.count=1 -test.paniconexit0 -test.timeout="$timeout" -test.skip "$shardA") >"$out/recipes-b" 2>&1 &
p2=$!

declare -A names=(["$p0"]=others ["$p1"]=recipes-a ["$p2"]=recipes-b)
failed=()
for _ in 1 2 3; do
	wait -n -p pid
	r=$?
	name="${names[$pid]}"
	echo "--- integration.sh: $name (exit $r, $((SECONDS - t0))s)"
	cat "$out/$name"
	[ $r -eq 0 ] || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "--- integration.sh: FAIL: ${failed[*]} ($((SECONDS - t0))s)"
	exit 1
fi
echo "--- integration.sh: all parts passed ($((SECONDS - t0))s)"

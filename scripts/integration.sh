#!/usr/bin/env bash
# The integration stage of scripts/test.sh: every package of the integration module against
# real ZooKeeper (Java backend unless ZK_TEST_BACKEND says otherwise), under -race. The
# contract suite (./recipes/, about 9 minutes of tests one after another, most of it spent
# waiting on timeouts, reconnections and peers) runs as two shards side by side, split by
# test name (A-M, the rest), each with its own server, beside the other packages, so
# the stage takes about as long as its longest part. Each part's output is printed
# whole once it ends; the exit status is non-zero when any part failed. Ctrl-C or SIGTERM
# stops every part.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT/integration"
export ZK_TEST_BACKEND="${ZK_TEST_BACKEND:-java}"
TIMEOUT="${TIMEOUT:-15m}"
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
others=$(go list ./... | grep -v '/integration/recipes$')

go test -race -count=1 -timeout "$TIMEOUT" $others >"$out/others" 2>&1 &
p0=$!
(cd recipes && exec "$bin" -test.count=1 -test.timeout="$TIMEOUT" -test.run '^Test[A-M]') >"$out/recipes-a" 2>&1 &
p1=$!
(cd recipes && exec "$bin" -test.count=1 -test.timeout="$TIMEOUT" -test.skip '^Test[A-M]') >"$out/recipes-b" 2>&1 &
p2=$!

rc=0
for part in "others:$p0" "recipes-a:$p1" "recipes-b:$p2"; do
	name="${part%%:*}"
	wait "${part##*:}"
	r=$?
	echo "--- integration.sh: $name (exit $r)"
	cat "$out/$name"
	[ $r -eq 0 ] || rc=1
done
exit $rc

#!/usr/bin/env bash
# The persistent watch and cache tests against ZooKeeper 3.9 (the jars scripts/deps.sh
# keeps in .deps/zookeeper-3.9): every test of the integration/recipes files about watches
# and caches (named for a cache, a watch, discovery's ServiceCache, the group member's
# cache, the keepers' close) that use PersistentWatch, TreeCache or NodeCache, and
# root_test.go, which runs the root package's server tests (the caches' and the persistent
# watch's internals among them). Files that only touch them on the way (bad input,
# reconfiguration, TTL and gzip, refusals) run on 3.8 alone: this stage is lean, to keep
# make test under 20 minutes on a busy machine.
# On 3.9 a persistent watch is removed by its type and keeps its mode beside one-shot
# watches on its path; the 3.6-3.8 workaround (wire layer, shots.go) must not run there.
# The default integration stage runs the same tests against Debian's 3.8. Extra
# arguments go to go test (e.g. -race, -v).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT/integration"
tests="$(grep -l 'PersistentWatch\|TreeCache\|NodeCache' recipes/*_test.go |
	grep -E '/([a-z_]*(cache|watch)[a-z_]*|discovery|groupmember|keepers_close|root)_test\.go$' |
	xargs grep -ho '^func Test[A-Za-z0-9_]*' | sed 's/^func //' | sort -u | paste -sd'|')"
[ -n "$tests" ] || { echo "test-zk39.sh: no test found" >&2; exit 1; }
ZK_TEST_VERSION=3.9 ZK_TEST_BACKEND=java exec go test -count=1 -timeout 5m -run "^(${tests})\$" "$@" ./recipes/

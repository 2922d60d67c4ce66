#!/usr/bin/env bash
# Runs every fuzz target of the root package for a short fixed time each
# (FUZZTIME, default 10s): path validation, node-name parsing and sorting.
# Targets are listed with `go test -list`, so a new Fuzz* function is picked
# up without editing this script. A failing input is written under
# testdata/fuzz/ by the go tool; commit it as a regression case.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
FUZZTIME="${FUZZTIME:-10s}"
targets=$(go test -list '^Fuzz' . | grep '^Fuzz' || true)
[ -n "$targets" ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }
for f in $targets; do
	echo "fuzz.sh: $f for $FUZZTIME"
	go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" .
done

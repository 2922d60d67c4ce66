#!/usr/bin/env bash
# Runs every fuzz target of the root package for a short fixed time each
# (FUZZTIME, default 10s): path validation, node-name parsing and sorting.
# Targets are listed with `go test -list`, so a new Fuzz* function is picked
# up without editing this script. A failing input is written under
# testdata/fuzz/ by the go tool; commit it as a regression case.
#
# Minimizing each new interesting input may take up to a minute by default,
# and the progress line shows "0/sec" meanwhile (golang/go#51484): on a
# fresh machine that used most of a 10 s budget. FUZZMINIMIZE (default 1s)
# bounds it, so the budget goes to fuzzing.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
FUZZTIME="${FUZZTIME:-10s}"
FUZZMINIMIZE="${FUZZMINIMIZE:-1s}"
targets=$(go test -list '^Fuzz' . | grep '^Fuzz' || true)
[ -n "$targets" ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }
for f in $targets; do
	echo "fuzz.sh: $f for $FUZZTIME"
	go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZE" .
done

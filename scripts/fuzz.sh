#!/usr/bin/env bash
# Runs every fuzz target of the root package for a fixed budget each
# (FUZZTIME, default 100000x: 100,000 executions, a few seconds on a quiet
# 2-core machine and about 25 s beside two CPU hogs, where 300,000 took
# 70-90 s a target): path validation, node-name parsing and sorting, the
# SASL mechanism's errors. Longer runs: FUZZTIME=2000000x scripts/fuzz.sh.
# Targets are listed with `go test -list`, so a new Fuzz* function is picked
# up without editing this script. A failing input is written under
# testdata/fuzz/ by the go tool; commit it as a regression case.
#
# Minimizing each new interesting input may take up to a minute by default,
# and the progress line shows "0/sec" meanwhile (golang/go#51484): on a
# fresh machine that used most of a 10 s budget. FUZZMINIMIZE (default 1s)
# bounds it, so the budget goes to fuzzing.
#
# The budget is a count, not a duration: with a duration, Go before 1.27
# can fail a target with a bare "context deadline exceeded" and no failing
# input as the time runs out (golang/go#75804, a race in the fuzzing
# coordinator; seen here on FuzzSortNodes). A count sets no deadline.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
FUZZTIME="${FUZZTIME:-100000x}"
FUZZMINIMIZE="${FUZZMINIMIZE:-1s}"
targets=$(go test -list '^Fuzz' . | grep '^Fuzz' || true)
[ -n "$targets" ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }
for f in $targets; do
	echo "fuzz.sh: $f for $FUZZTIME"
	go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZE" .
done

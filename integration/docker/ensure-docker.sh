#!/usr/bin/env bash
# Makes sure a Docker engine answers on /var/run/docker.sock. If none does, starts
# dockerd in the background without any bridge, NAT or forwarding (containers of the
# test harness use the host network only), logs to $DOCKERD_LOG, and waits for it.
#
# A dockerd started here is recorded in $DOCKERD_PIDFILE (its pid), so that
# stop-docker.sh stops it and nothing else: an engine that already answered is never
# recorded. If the started dockerd does not answer in time, it is stopped before the
# script fails. Exit status: 0 when an engine answers, 1 otherwise.
set -euo pipefail

LOG="${DOCKERD_LOG:-/tmp/zkrecipes-dockerd.log}"
WAIT="${DOCKERD_WAIT:-60}"
PIDFILE="${DOCKERD_PIDFILE:-/run/zkrecipes-dockerd.pid}"
HERE="$(cd "$(dirname "$0")" && pwd)"

die() { echo "ensure-docker.sh: $*" >&2; exit 1; }

command -v docker >/dev/null || die "docker CLI not found; install it (Debian: apt-get install docker.io)"
if docker info >/dev/null 2>&1; then
	echo "ensure-docker.sh: Docker engine is up"
	exit 0
fi
DOCKERD="$(command -v dockerd || echo /usr/sbin/dockerd)"
[ -x "$DOCKERD" ] || die "no engine answers and dockerd is not installed (Debian: apt-get install docker.io)"
[ "$(id -u)" = 0 ] || die "no engine answers and starting dockerd needs root (or start Docker yourself)"

echo "ensure-docker.sh: starting $DOCKERD (log: $LOG)"
setsid nohup "$DOCKERD" --bridge=none --iptables=false --ip-forward=false --ip6tables=false \
	>>"$LOG" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$PIDFILE"
for _ in $(seq 1 "$((WAIT * 5))"); do
	if docker info >/dev/null 2>&1; then
		echo "ensure-docker.sh: Docker engine is up (dockerd pid $pid, recorded in $PIDFILE; stop it with $HERE/stop-docker.sh)"
		exit 0
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		tail -n 30 "$LOG" >&2 || true
		DOCKERD_PIDFILE="$PIDFILE" "$HERE/stop-docker.sh" >&2 || true # its containerd, if it left one
		die "dockerd exited during start; see $LOG"
	fi
	sleep 0.2
done
tail -n 30 "$LOG" >&2 || true
DOCKERD_PIDFILE="$PIDFILE" "$HERE/stop-docker.sh" >&2 || true
die "dockerd did not answer within ${WAIT}s; see $LOG"

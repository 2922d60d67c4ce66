#!/usr/bin/env bash
# Stops the dockerd that ensure-docker.sh started, as recorded in $DOCKERD_PIDFILE, and
# the processes it started (its containerd); does nothing when the file is absent, so
# an engine that was already running is left alone. SIGTERM first (dockerd stops its
# containers and its containerd), SIGKILL after $DOCKERD_STOP_WAIT seconds.
# Exit status: 0 when nothing recorded is left running, 1 otherwise.
set -euo pipefail

PIDFILE="${DOCKERD_PIDFILE:-/run/zkrecipes-dockerd.pid}"
WAIT="${DOCKERD_STOP_WAIT:-30}"

[ -f "$PIDFILE" ] || exit 0
pid="$(cat "$PIDFILE")"
[[ "$pid" =~ ^[0-9]+$ ]] || { echo "stop-docker.sh: $PIDFILE holds no pid; removed" >&2; rm -f "$PIDFILE"; exit 0; }

# The children of a process, from /proc (procps may be missing on a fresh machine).
children() {
	local f stat
	for f in /proc/[0-9]*/stat; do
		stat="$(cat "$f" 2>/dev/null)" || continue
		stat="${stat##*) }" # skip pid and comm: comm may hold spaces
		set -- $stat
		if [ "${2:-}" = "$pid" ]; then f="${f#/proc/}"; echo "${f%/stat}"; fi
	done
}
# Whether any of the pids runs (a zombie, which init has yet to reap, does not).
alive() {
	local p stat
	for p in "$@"; do
		stat="$(cat "/proc/$p/stat" 2>/dev/null)" || continue
		stat="${stat##*) }"
		[ "${stat%% *}" = Z ] || return 0
	done
	return 1
}

# A pid reused by another program since the start is not ours to stop.
exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
if [ -n "$exe" ] && [ "$(basename "${exe% (deleted)}")" != dockerd ]; then
	echo "stop-docker.sh: pid $pid is $exe now, not the dockerd that was started; left alone" >&2
	rm -f "$PIDFILE"
	exit 0
fi

mapfile -t kids < <(children)
if alive "$pid"; then
	echo "stop-docker.sh: stopping dockerd (pid $pid), which ensure-docker.sh started"
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 "$((WAIT * 5))"); do
		alive "$pid" || break
		sleep 0.2
	done
fi
left=()
for p in "$pid" "${kids[@]}"; do alive "$p" && left+=("$p"); done
if [ ${#left[@]} -gt 0 ]; then
	echo "stop-docker.sh: still running after ${WAIT}s, SIGKILL: ${left[*]}" >&2
	kill -KILL "${left[@]}" 2>/dev/null || true
	sleep 0.5
	# A killed dockerd leaves its own pidfile, which would stop the next one starting.
	[ "$(cat /var/run/docker.pid 2>/dev/null)" = "$pid" ] && rm -f /var/run/docker.pid
fi
rm -f "$PIDFILE"
for p in "$pid" "${kids[@]}"; do
	if alive "$p"; then echo "stop-docker.sh: pid $p still runs" >&2; exit 1; fi
done

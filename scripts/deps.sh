#!/usr/bin/env bash
# Installs what building and testing zkrecipes needs, only what is missing:
#   Debian packages (ZooKeeper server jars, Curator and kazoo for interop tests,
#   Docker, a JDK, the MIT Kerberos KDC for the Kerberos tests) and staticcheck in
#   the repo-local bin/.
# A machine that has everything makes no network call.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
STATICCHECK_VERSION="${STATICCHECK_VERSION:-v0.8.2}" # staticcheck 2026.2.2, supports Go 1.26
PKGS=(zookeeper libcurator-recipes-java libcurator-discovery-java python3-kazoo docker.io default-jdk-headless)
# The Kerberos stage's KDC (zktest.StartKDC): krb5kdc and kdb5_util, kadmin.local, kinit.
# The tests start their own KDC on 127.0.0.1 with its own configuration; the system's is unused.
PKGS+=(krb5-kdc krb5-admin-server krb5-user)

die() { echo "deps.sh: $*" >&2; exit 1; }

command -v go >/dev/null || die "Go is not installed; install Go >= 1.25 from https://go.dev/dl/"

# --- Debian packages ---
if command -v dpkg >/dev/null && command -v apt-get >/dev/null; then
	missing=()
	for p in "${PKGS[@]}"; do
		dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
	done
	if [ "${#missing[@]}" -gt 0 ]; then
		if [ "$(id -u)" = 0 ]; then
			SUDO=()
		elif command -v sudo >/dev/null; then
			SUDO=(sudo)
		else
			die "missing packages ${missing[*]}; run as root: apt-get update && apt-get install -y ${missing[*]}"
		fi
		echo "deps.sh: installing ${missing[*]}"
		"${SUDO[@]}" apt-get update
		DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
	else
		echo "deps.sh: Debian packages present (${PKGS[*]})"
	fi
else
	cat >&2 <<MSG
deps.sh: not a Debian-like system; install by hand:
  - a JDK 11+ (java on PATH or JAVA_HOME)
  - Apache ZooKeeper 3.8 (set ZOOKEEPER_HOME), Apache Curator 5.x recipes jars, Python kazoo
  - optionally Docker (for the docker backend tests)
then re-run with the tools in place, or set ZK_SERVERS to a loopback ensemble.
MSG
	exit 1
fi

# --- staticcheck, pinned, in ./bin ---
SC="$ROOT/bin/staticcheck"
if [ -x "$SC" ] && "$SC" -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
	echo "deps.sh: staticcheck ${STATICCHECK_VERSION} present"
else
	echo "deps.sh: installing staticcheck ${STATICCHECK_VERSION} into bin/"
	GOBIN="$ROOT/bin" go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"
fi

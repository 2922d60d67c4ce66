#!/usr/bin/env bash
# Installs what building and testing zkrecipes needs, only what is missing:
#   Debian packages (ZooKeeper server jars, Curator and kazoo for interop tests,
#   Docker, a JDK, the MIT Kerberos KDC for the Kerberos tests, jq) and staticcheck and
#   apidiff in the repo-local bin/, and ZooKeeper 3.9's jars in the repo-local .deps/ (from Debian 13).
# A machine that has everything makes no network call.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
STATICCHECK_VERSION="${STATICCHECK_VERSION:-v0.8.2}" # staticcheck 2026.2.2, supports Go 1.26
PKGS=(zookeeper libcurator-recipes-java libcurator-discovery-java python3-kazoo docker.io default-jdk-headless)
# The Kerberos stage's KDC (zktest.StartKDC): krb5kdc and kdb5_util, kadmin.local, kinit.
# The tests start their own KDC on 127.0.0.1 with its own configuration; the system's is unused.
PKGS+=(krb5-kdc krb5-admin-server krb5-user)
# scripts/release.sh and scripts/apicheck.sh read go.mod files as JSON (go mod edit -json).
PKGS+=(jq)

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

# --- ZooKeeper 3.9 server jars, in ./.deps/zookeeper-3.9 (git-ignored) ---
# The 3.9 stage of scripts/test.sh (ZK_TEST_VERSION=3.9, zktest) runs the
# persistent watch and cache tests against a 3.9 server: the typed removeWatches
# (ZOOKEEPER-4472) and the watches of both modes on one path (ZOOKEEPER-4466) only
# exist there. Debian 13 (trixie) packages ZooKeeper 3.9; its libzookeeper-java .deb
# is downloaded (not installed: this system keeps its 3.8) with apt-get under a
# configuration of its own, checked against Debian's archive keyring, and its two jars
# are kept. Their other dependencies (netty, slf4j, commons-io, metrics, snappy, jline,
# jetty, jackson) are the Debian 12 jars in /usr/share/java that the zookeeper package
# above brings (zookeeper.jar's manifest names them): ZooKeeper's standalone server
# with its default NIO connection factory runs on them.
ZK39_SUITE="${ZK39_SUITE:-trixie}"
ZK39="$ROOT/.deps/zookeeper-3.9"
if [ -f "$ZK39/zookeeper.jar" ] && [ -f "$ZK39/zookeeper-jute.jar" ] && [ -f "$ZK39/VERSION" ]; then
	echo "deps.sh: ZooKeeper $(cat "$ZK39/VERSION") jars present in .deps/zookeeper-3.9"
else
	echo "deps.sh: downloading ZooKeeper 3.9 (Debian $ZK39_SUITE's libzookeeper-java) into .deps/zookeeper-3.9"
	work="$(mktemp -d)"
	mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $ZK39_SUITE main" >"$work/sources.list"
	apt_own=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1
		-o APT::Sandbox::User=root -o Acquire::Languages=none -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false)
	if ! apt-get -q "${apt_own[@]}" update >"$work/update.log" 2>&1; then
		cat "$work/update.log" >&2
		rm -rf "$work"
		die "could not read Debian $ZK39_SUITE's package list for ZooKeeper 3.9"
	fi
	(cd "$work/deb" && apt-get -q "${apt_own[@]}" download libzookeeper-java) || { rm -rf "$work"; die "could not download libzookeeper-java from Debian $ZK39_SUITE"; }
	dpkg-deb -x "$work"/deb/libzookeeper-java_*.deb "$work/x"
	jar="$(ls "$work"/x/usr/share/java/zookeeper-3.9.*.jar 2>/dev/null | head -1)"
	jute="$(ls "$work"/x/usr/share/java/zookeeper-jute-3.9.*.jar 2>/dev/null | head -1)"
	[ -n "$jar" ] && [ -n "$jute" ] || { rm -rf "$work"; die "Debian $ZK39_SUITE's libzookeeper-java holds no ZooKeeper 3.9 jars"; }
	rm -rf "$ZK39" && mkdir -p "$ZK39"
	cp "$jar" "$ZK39/zookeeper.jar"
	cp "$jute" "$ZK39/zookeeper-jute.jar"
	v="${jar##*/zookeeper-}"
	echo "${v%.jar}" >"$ZK39/VERSION" # written last: the directory is whole
	rm -rf "$work"
	echo "deps.sh: ZooKeeper $(cat "$ZK39/VERSION") jars in .deps/zookeeper-3.9"
fi

# --- staticcheck, pinned, in ./bin ---
SC="$ROOT/bin/staticcheck"
if [ -x "$SC" ] && "$SC" -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
	echo "deps.sh: staticcheck ${STATICCHECK_VERSION} present"
else
	echo "deps.sh: installing staticcheck ${STATICCHECK_VERSION} into bin/"
	GOBIN="$ROOT/bin" go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"
fi

# --- apidiff (golang.org/x/exp), pinned, in ./bin: scripts/apicheck.sh ---
APIDIFF_VERSION="${APIDIFF_VERSION:-v0.0.0-20261113113407-e3970619a1a4}"
AD="$ROOT/bin/apidiff"
if [ -x "$AD" ] && go version -m "$AD" 2>/dev/null | awk '$1 == "mod" { print $3 }' | grep -qx -- "$APIDIFF_VERSION"; then
	echo "deps.sh: apidiff ${APIDIFF_VERSION} present"
else
	echo "deps.sh: installing apidiff (golang.org/x/exp ${APIDIFF_VERSION}) into bin/"
	GOBIN="$ROOT/bin" go install "golang.org/x/exp/cmd/apidiff@${APIDIFF_VERSION}"
fi

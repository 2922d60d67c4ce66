#!/usr/bin/env bash
# Builds zkrecipes/zookeeper:3.8-debian without any registry: a FROM-scratch image
# imported from a root filesystem made of this host's installed Debian files (the Java
# runtime, the ZooKeeper jars its manifest names, and the shared libraries they need).
# The build is skipped when an image built from the same inputs already exists.
#
# Env: ZK_IMAGE (tag, default zkrecipes/zookeeper:3.8-debian), FORCE=1 to rebuild.
set -euo pipefail

IMAGE="${ZK_IMAGE:-zkrecipes/zookeeper:3.8-debian}"
ZK_JAR=/usr/share/java/zookeeper.jar
LOGGER=/usr/share/java/slf4j-simple.jar

die() { echo "build-image.sh: $*" >&2; exit 1; }

command -v docker >/dev/null || die "docker CLI not found (apt-get install docker.io)"
docker info >/dev/null 2>&1 || die "no Docker engine answers (run integration/docker/ensure-docker.sh)"
[ -f "$ZK_JAR" ] || die "$ZK_JAR missing (apt-get install zookeeper)"
[ -f "$LOGGER" ] || die "$LOGGER missing (apt-get install libslf4j-java)"
JAVA="$(readlink -f "$(command -v java || true)")"
[ -x "$JAVA" ] || die "java not found (apt-get install default-jre-headless)"
JHOME="$(dirname "$(dirname "$JAVA")")"
JETC="$(find /etc -maxdepth 1 -name 'java-*-openjdk' -type d | head -n1)"

# Jars: zookeeper.jar plus the Class-Path of its manifest (wrapped at 72 columns).
mapfile -t JARS < <(
	echo "$ZK_JAR"; echo "$LOGGER"
	unzip -p "$ZK_JAR" META-INF/MANIFEST.MF | tr -d '\r' |
		awk '/^Class-Path:/{cp=1; sub(/^Class-Path: /,""); printf "%s", $0; next}
		     cp && /^ /{sub(/^ /,""); printf "%s", $0; next} {cp=0}' | tr ' ' '\n' | grep -v '^$' |
		while read -r j; do [ -f "$j" ] && echo "$j" || true; done # optional jars (jline) may be absent
)

# Shared libraries the JVM and its native libraries load, as ldd resolves them here.
mapfile -t LIBS < <(
	{ echo "$JAVA"; find "$JHOME/lib" -name '*.so' -type f; } |
		xargs -r ldd 2>/dev/null | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}' | sort -u
)

# Input hash: this script, file names, sizes and mtimes (content changes come with
# package upgrades, which change sizes or mtimes).
HASH="$(
	{
		sha256sum <"$0"
		for f in "${JARS[@]}" "${LIBS[@]}"; do stat -L -c '%n %s %Y' "$f"; done
		find "$JHOME" "$JETC" -path "$JHOME/jmods" -prune -o -printf '%p %s %T@\n' | sort
	} | sha256sum | cut -c1-16
)"
HASH_TAG="${IMAGE%%:*}:inputs-$HASH"
if [ -z "${FORCE:-}" ] && docker image inspect "$HASH_TAG" >/dev/null 2>&1 &&
	[ "$(docker image inspect -f '{{.Id}}' "$HASH_TAG")" = "$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)" ]; then
	echo "build-image.sh: $IMAGE is up to date (inputs $HASH)"
	exit 0
fi

ROOT="$(mktemp -d /tmp/zkrecipes-rootfs.XXXXXX)"
trap 'rm -rf "$ROOT"' EXIT
t0=$(date +%s)

# The JVM (without what only a JDK needs), keeping its own symlinks, and its /etc.
mkdir -p "$ROOT$JHOME"
tar -C "$JHOME" --exclude=./jmods --exclude=./include --exclude=./man --exclude=./demo \
	--exclude=./lib/src.zip -cf - . | tar -C "$ROOT$JHOME" -xf -
# put FILE: copy FILE's content (dereferenced) to the same path under $ROOT.
put() { mkdir -p "$ROOT$(dirname "$1")" && cp -L "$1" "$ROOT$1"; }
mkdir -p "$ROOT/etc"
if [ -n "$JETC" ]; then cp -a "$JETC" "$ROOT/etc/"; fi
# Jars and libraries by content, under their usual names.
for f in "${JARS[@]}" "${LIBS[@]}"; do put "$f"; done
if [ -f /etc/ld.so.cache ]; then put /etc/ld.so.cache; fi
# Optional trust store behind the JVM's cacerts symlink; absence is harmless here.
if [ -f /etc/ssl/certs/java/cacerts ]; then put /etc/ssl/certs/java/cacerts; fi

mkdir -p "$ROOT"/{tmp,conf,data,datalog,root,etc,usr/bin}
chmod 1777 "$ROOT/tmp"
ln -s "$JAVA" "$ROOT/usr/bin/java"
cat >"$ROOT/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/nonexistent
nobody:x:65534:65534:nobody:/nonexistent:/nonexistent
PASSWD
printf 'root:x:0:\nnogroup:x:65534:\n' >"$ROOT/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$ROOT/etc/nsswitch.conf"

CP="$ZK_JAR:$LOGGER"
ENTRY="[\"$JAVA\",\"-Xmx256m\",\"-XX:+UseSerialGC\",\"-Xshare:auto\",\"-XX:TieredStopAtLevel=1\",\"-XX:-UsePerfData\",\"-Djava.net.preferIPv4Stack=true\",\"-Dzookeeper.log.dir=/tmp\",\"-Dzookeeper.admin.enableServer=false\",\"-Dorg.slf4j.simpleLogger.showDateTime=true\",\"-cp\",\"$CP\",\"org.apache.zookeeper.server.quorum.QuorumPeerMain\",\"/conf/zoo.cfg\"]"

tar -C "$ROOT" -cf - . | docker import \
	--change "ENTRYPOINT $ENTRY" \
	--change "ENV JAVA_HOME=$JHOME LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu" \
	--change "WORKDIR /data" \
	- "$IMAGE" >/dev/null
docker tag "$IMAGE" "$HASH_TAG"
echo "build-image.sh: built $IMAGE (inputs $HASH, $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%d MB", $1/1048576}')) in $(($(date +%s) - t0))s"

#!/usr/bin/env bash
# zkr's archives as a release makes them (.goreleaser.yaml), without publishing anything:
# goreleaser release --snapshot --clean into dist/, then checks that there is an archive
# for each of linux/darwin/windows on amd64/arm64, a checksum for each, and that the
# linux/amd64 archive's zkr runs `zkr version` and `zkr help`. The SBOMs need syft on PATH;
# without it they are skipped, and the output says so.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# GoReleaser, pinned, in ./bin. Not installed by deps.sh: built from source it took about
# 13 minutes (804 s) on a busy 2-core machine (a one-time cost per clone's bin/).
GORELEASER_VERSION="${GORELEASER_VERSION:-v2.15.1}"
GR="$ROOT/bin/goreleaser"
if ! { [ -x "$GR" ] && "$GR" --version 2>/dev/null | grep -q "${GORELEASER_VERSION#v}"; }; then
	echo "goreleaser.sh: installing GoReleaser ${GORELEASER_VERSION} into bin/ (a long build)"
	GOBIN="$ROOT/bin" go install "github.com/goreleaser/goreleaser/v2@${GORELEASER_VERSION}"
fi

skip=()
if command -v syft >/dev/null || [ -x "$ROOT/bin/syft" ]; then
	PATH="$ROOT/bin:$PATH"
else
	echo "goreleaser.sh: syft is not installed: the SBOMs are skipped (--skip=sbom)"
	skip=(--skip=sbom)
fi
"$GR" check
"$GR" release --snapshot --clean "${skip[@]}"

fail=0
for os in linux darwin windows; do
	ext=tar.gz
	[ "$os" = windows ] && ext=zip
	for arch in amd64 arm64; do
		a="$(ls dist/zkr_*_${os}_${arch}.${ext} 2>/dev/null | head -1)"
		if [ -z "$a" ]; then
			echo "goreleaser.sh: no archive for $os/$arch" >&2
			fail=1
		elif ! grep -q " ${a#dist/}\$" dist/checksums.txt; then
			echo "goreleaser.sh: $a has no line in checksums.txt" >&2
			fail=1
		fi
		if [ ${#skip[@]} -eq 0 ] && [ -n "$a" ] && [ ! -s "$a.sbom.json" ]; then
			echo "goreleaser.sh: $a has no SBOM" >&2
			fail=1
		fi
	done
done
(cd dist && sha256sum --quiet -c checksums.txt) || fail=1

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
tar -xzf dist/zkr_*_linux_amd64.tar.gz -C "$tmp"
v="$("$tmp/zkr" version)"
echo "goreleaser.sh: zkr version: $v"
[[ "$v" == "zkr "*-snapshot* ]] || { echo "goreleaser.sh: zkr version does not name the snapshot version" >&2; fail=1; }
"$tmp/zkr" help | grep -q '^usage:' || { echo "goreleaser.sh: zkr help printed no usage" >&2; fail=1; }
[ $fail = 0 ] && echo "goreleaser.sh: 6 archives, checksums, zkr version and help: ok"
exit $fail

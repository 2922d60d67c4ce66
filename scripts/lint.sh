#!/usr/bin/env bash
# gofmt, go vet and staticcheck over every Go module of the repository: the root
# module, integration/, otelzk/, zktest/, zktest/docker/, and examples/, cmd/zkr/, kerberos/,
# integration/kerberos/ tools/modproxy and each examples/*/ when they are modules of their own. They resolve each
# other through go.work (the workspace), as every go command run in this repository does.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
SC="$ROOT/bin/staticcheck"
[ -x "$SC" ] || SC="$(command -v staticcheck || true)"
[ -n "$SC" ] || { echo "lint.sh: staticcheck missing; run scripts/deps.sh" >&2; exit 1; }

mods=(.)
for d in integration examples cmd/zkr kerberos integration/kerberos otelzk zktest zktest/docker tools/modproxy examples/*/; do
	d="${d%/}"
	[ -f "$d/go.mod" ] && mods+=("$d")
done
rc=0
unformatted="$(gofmt -l . || true)"
if [ -n "$unformatted" ]; then
	echo "lint.sh: gofmt would change:" >&2
	echo "$unformatted" >&2
	rc=1
fi
# One go vet and one staticcheck over the packages of every module: in the workspace a
# module path pattern reaches them all, and one run loads the dependencies they share once
# (a run per module took 97 s beside two busy loops). The loop checks that the pattern
# reached every module.
M=github.com/zkrecipes/zkrecipes
pkgs="$(go list "$M/...")" || exit 1
for m in "${mods[@]}"; do
	p="$M"; [ "$m" = . ] || p="$M/$m"
	grep -qx -e "$p" -e "$p/.*" <<<"$pkgs" || { echo "lint.sh: no package of module $m in $M/..." >&2; rc=1; }
done
echo "lint.sh: vet + staticcheck in ${mods[*]}"
go vet "$M/..." || rc=1
"$SC" "$M/..." || rc=1
# zkr's release archives include darwin and windows (.goreleaser.yaml): it must build there.
for os in darwin windows; do
	echo "lint.sh: vet cmd/zkr for $os"
	(cd cmd/zkr && GOOS=$os go vet ./...) || rc=1
done
exit $rc

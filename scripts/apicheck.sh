#!/usr/bin/env bash
# The exported API against the last release (docs/versioning.md): apidiff
# (golang.org/x/exp/cmd/apidiff, installed by deps.sh) compares each published library
# module, as this tree has it, with the module at its newest release tag (vX.Y.Z for the
# core, otelzk/vX.Y.Z, kerberos/vX.Y.Z, zktest/vX.Y.Z, zktest/docker/vX.Y.Z), and fails on any incompatible change that
# scripts/apicheck-accepted.txt does not list.
#
#   scripts/apicheck.sh [BASE]
#
# BASE, a git revision, replaces the tags (scripts/apicheck.sh main: what this branch
# breaks). A module with no release tag yet, and no BASE, is reported and passes: nothing
# was released that a change could break. APICHECK_MODULES (default ". otelzk kerberos zktest zktest/docker")
# narrows the modules checked.
#
# A deliberate break (v0: in a minor release only) is listed in apicheck-accepted.txt, one
# line as apidiff prints it ("MODULE: - Name: removed"), with a CHANGELOG.md entry; the
# release that ships it empties the list.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
APIDIFF="$ROOT/bin/apidiff"
[ -x "$APIDIFF" ] || APIDIFF="$(command -v apidiff || true)"
[ -n "$APIDIFF" ] || { echo "apicheck.sh: apidiff missing; run scripts/deps.sh" >&2; exit 1; }
ACCEPTED="$ROOT/scripts/apicheck-accepted.txt"

base="${1:-}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# -trimpath: the export data of a tree does not depend on the directory it is in, so a
# revision already compiled once (here or in another checkout) comes from the build cache.
export GOFLAGS="${GOFLAGS:-} -trimpath"

rc=0
for d in ${APICHECK_MODULES:-. otelzk kerberos zktest zktest/docker}; do
	mod="$(cd "$d" && go mod edit -json | jq -r .Module.Path)"
	prefix=""
	[ "$d" = . ] || prefix="$d/"
	rev="$base"
	if [ -z "$rev" ]; then
		rev="$(git tag -l "${prefix}v*" | sed -n "s|^${prefix}\(v[0-9]*\.[0-9]*\.[0-9]*\(-[0-9A-Za-z.-]*\)\{0,1\}\)$|\1|p" |
			sort -V | tail -1)"
		if [ -z "$rev" ]; then
			echo "apicheck.sh: $mod: no release tag (${prefix}vX.Y.Z) yet, so no released API to compare with: passing without a comparison"
			continue
		fi
		rev="$prefix$rev"
	fi
	if ! git cat-file -e "$rev:${prefix}go.mod" 2>/dev/null; then
		echo "apicheck.sh: $mod: no such module at $rev: nothing to compare with"
		continue
	fi
	old="$tmp/old-$(echo "$rev" | tr / _)"
	if [ ! -d "$old" ]; then
		mkdir -p "$old"
		git archive "$rev" | tar -x -C "$old"
	fi
	# The core alone (GOWORK=off: in the workspace its pattern would take in the modules
	# nested in it); the others through the workspace of their own tree.
	wk=()
	[ "$d" != . ] || wk=(GOWORK=off)
	exp="$tmp/$(echo "$d" | tr / _)"
	(cd "$old/$d" && env "${wk[@]}" "$APIDIFF" -m -w "$exp.old" "$mod") || { echo "apicheck.sh: $mod: cannot load it at $rev" >&2; rc=1; continue; }
	(cd "$d" && env "${wk[@]}" "$APIDIFF" -m -w "$exp.new" "$mod") || { echo "apicheck.sh: $mod: cannot load it in this tree" >&2; rc=1; continue; }
	"$APIDIFF" -m -incompatible "$exp.old" "$exp.new" >"$exp.diff"
	# apidiff prints a package line, then "- Name: change" lines under it.
	breaks="$(awk -v m="$mod" '/^- / { print m ": " $0 }' "$exp.diff")"
	if [ -n "$breaks" ] && [ -f "$ACCEPTED" ]; then
		breaks="$(grep -v -x -F -f <(grep -v '^#' "$ACCEPTED" | sed '/^$/d') <<<"$breaks" || true)"
	fi
	if [ -n "$breaks" ]; then
		echo "apicheck.sh: $mod: incompatible with $rev (lines apicheck-accepted.txt does not list):"
		echo "$breaks"
		rc=1
	else
		echo "apicheck.sh: $mod: compatible with $rev"
	fi
done
exit $rc

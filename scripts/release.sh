#!/usr/bin/env bash
# make release VERSION=vX.Y.Z [DRY_RUN=1]: one release commit and the tags of every published
# module at the same commit (VERSION, otelzk/VERSION, kerberos/VERSION, cmd/zkr/VERSION,
# zktest/VERSION, zktest/docker/VERSION). It never pushes: it prints the push command.
#
#   scripts/release.sh [--dry-run] vX.Y.Z
#
# The tree must be clean (untracked files included) and no tag of VERSION may exist. Then:
#   1. every go.mod that requires a module of this repository requires it at VERSION
#      (go.mod files hold no replace: a replace is ignored where a module is a dependency);
#   2. go.work's replaces, which make development resolve VERSION to the directories of the
#      workspace, move to VERSION;
#   3. module by module, dependencies first, go.sum gets the hashes of the repository's modules
#      at VERSION as the tags will hold them (tools/modproxy), so each module at its tag
#      builds on its own (GOWORK=off) from a proxy, checked against what was tagged;
#   4. a commit, and an annotated tag per published module.
# --dry-run does all of it in a throw-away clone, shows the diff and the tags it would make,
# and leaves this repository as it was.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

PREFIX=github.com/zkrecipes/zkrecipes
# The modules users depend on: tagged. zktest (the test harness) and zktest/docker (its
# Docker backend) are modules of their own for users' tests. integration is not tagged: it
# holds this repository's own suites and tools, which no user imports (nothing outside it
# requires it), and examples/ are not published either.
TAGGED=(. otelzk kerberos cmd/zkr zktest zktest/docker)

die() { echo "release.sh: $*" >&2; exit 1; }

dry=0
if [ "${1:-}" = --dry-run ] || [ "${1:-}" = -n ]; then
	dry=1
	shift
fi
VERSION="${1:-}"
[ $# -eq 1 ] || die "usage: scripts/release.sh [--dry-run] vX.Y.Z"
[[ "$VERSION" =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
	die "VERSION $VERSION is not vMAJOR.MINOR.PATCH[-PRERELEASE]"
[[ "$VERSION" =~ ^v[01]\. ]] || die "VERSION $VERSION: a major version above v1 needs a /vN module path first"
command -v jq >/dev/null || die "jq is missing (apt-get install jq)"

[ -z "$(git status --porcelain --untracked-files=normal)" ] ||
	die "the tree is not clean (commit or remove what git status shows): the tags must name exactly what was tested"

tag_of() { if [ "$1" = . ]; then echo "$VERSION"; else echo "$1/$VERSION"; fi; }
for d in "${TAGGED[@]}"; do
	t="$(tag_of "$d")"
	! git rev-parse -q --verify "refs/tags/$t" >/dev/null || die "tag $t exists already"
done

if [ $dry = 1 ]; then
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	git clone -q --no-hardlinks "$ROOT" "$tmp/repo"
	git -C "$tmp/repo" checkout -q --detach "$(git rev-parse HEAD)"
	echo "release.sh: dry run in a throw-away clone ($tmp/repo)"
	RELEASE_DRY_CLONE=1 "$tmp/repo/scripts/release.sh" "$VERSION"
	echo
	echo "release.sh: dry run: the release commit would change:"
	git -C "$tmp/repo" show --stat --format='  %s' HEAD | sed 's/^/  /'
	git -C "$tmp/repo" show --format= HEAD -- '*go.mod' go.work
	echo "release.sh: dry run: it would tag: $(git -C "$tmp/repo" tag --points-at HEAD | tr '\n' ' ')"
	echo "release.sh: dry run: this repository is unchanged"
	exit 0
fi

# Every module of the repository, with the directory of each module path.
mods=()
while IFS= read -r f; do
	d="$(dirname "$f")"
	d="${d#./}"
	mods+=("$d")
done < <(git ls-files -- 'go.mod' '*/go.mod' | sed 's|^|./|' | sort)
declare -A dir_of
for d in "${mods[@]}"; do
	p="$(cd "$d" && go mod edit -json | jq -r .Module.Path)"
	dir_of["$p"]="$d"
done
ours() { # ours DIR: the paths of this repository's modules that DIR's go.mod requires
	(cd "$1" && go mod edit -json) | jq -r --arg p "$PREFIX" \
		'.Require[]?.Path | select(. == $p or startswith($p + "/"))'
}

# 1. requirements at VERSION, no replace of our modules in any go.mod
for d in "${mods[@]}"; do
	replaced="$( (cd "$d" && go mod edit -json) | jq -r --arg p "$PREFIX" \
		'.Replace[]?.Old.Path | select(. == $p or startswith($p + "/"))')"
	[ -z "$replaced" ] || die "$d/go.mod replaces $replaced: go.work resolves the workspace; remove it"
	for p in $(ours "$d"); do
		[ -n "${dir_of[$p]:-}" ] || die "$d/go.mod requires $p, which is no module of this repository"
		(cd "$d" && go mod edit -require="$p@$VERSION")
	done
done

# 2. go.work: each module another one requires stands for itself at VERSION (the workspace
# would otherwise read VERSION's go.mod from a proxy, which does not have it yet)
for r in $(go work edit -json | jq -r --arg p "$PREFIX" \
	'.Replace[]? | select(.Old.Path == $p or (.Old.Path | startswith($p + "/"))) | .Old.Path + "@" + (.Old.Version // "")'); do
	go work edit -dropreplace="${r%@}"
done
for p in $(for d in "${mods[@]}"; do ours "$d"; done | sort -u); do
	rel="./${dir_of[$p]}"
	[ "$rel" != ./. ] || rel=./
	go work edit -replace="$p@$VERSION=$rel"
done

# 3. go.sum, dependencies first: each module's lines for the modules of this repository it
# requires are replaced by the hashes of those modules at VERSION, zipped from this tree as
# the tags will hold it (tools/modproxy, the module zip format of golang.org/x/mod). The
# other lines stay: nothing else changes. No module cache or network is involved.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd tools/modproxy && GOWORK=off go build -o "$work/modproxy" .)
declare -A published
left=("${mods[@]}")
while [ ${#left[@]} -gt 0 ]; do
	next=()
	for d in "${left[@]}"; do
		reqs="$(ours "$d")"
		ready=1
		for p in $reqs; do
			[ -n "${published[$p]:-}" ] || ready=0
		done
		if [ $ready = 0 ]; then
			next+=("$d")
			continue
		fi
		if [ -n "$reqs" ]; then
			touch "$d/go.sum"
			for p in $reqs; do
				# p's old lines out, its new ones in where p sorts (go.sum is sorted by path)
				awk -v p="$p" -v f="$work/$(echo "$p" | tr / _).sum" '
					BEGIN { while ((getline l < f) > 0) add = add l "\n" }
					$1 == p { next }
					!done && $1 > p { printf "%s", add; done = 1 }
					{ print }
					END { if (!done) printf "%s", add }' "$d/go.sum" >"$work/go.sum"
				cp "$work/go.sum" "$d/go.sum"
			done
		fi
		"$work/modproxy" -out "$work/proxy" -version "$VERSION" -sums "$work/sums" "$d"
		p="$(cd "$d" && go mod edit -json | jq -r .Module.Path)"
		grep "^$p " "$work/sums" >"$work/$(echo "$p" | tr / _).sum"
		published["$p"]=1
	done
	[ ${#next[@]} -lt ${#left[@]} ] || die "modules require each other in a cycle: ${next[*]}"
	left=("${next[@]}")
done
go list -m all >/dev/null || die "the workspace does not resolve after the rewrite"

# 4. the release commit and the tags
git add -A
git commit -q -m "release $VERSION: modules require $VERSION of each other"
for d in "${TAGGED[@]}"; do
	git tag -a -m "zkrecipes $(if [ "$d" = . ]; then echo module; else echo "$d"; fi) $VERSION" "$(tag_of "$d")"
done
echo "release.sh: committed $(git rev-parse --short HEAD) and tagged: $(git tag --points-at HEAD | tr '\n' ' ')"
if [ -z "${RELEASE_DRY_CLONE:-}" ]; then
	echo "release.sh: nothing was pushed. To publish:"
	echo "  git push origin HEAD $(for d in "${TAGGED[@]}"; do printf '%s ' "$(tag_of "$d")"; done)"
fi

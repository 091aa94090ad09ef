#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The tree explains itself: what its files cite is in the tree or public, and
# what its docs point to is there.
#
#   scripts/check-docs.sh [--root DIR]     DIR: a source tree (default: this one)
#
# 1. No file cites a note kept outside the tree (shared/reference/NAME.md,
#    reference/NAME.md, seeds/, ../shared/, a note's numbered section
#    "NAME.md §N", a NAME.md that no file of the tree is called) or an issue
#    by its number ("issue 26", "Issue #18", "PR 12", a bare "#44"). A fact
#    is cited by its public source instead: a repository and path, a paper, a
#    man page, a URL; another project's issue as owner/repo#N or its URL.
# 2. Every markdown link [text](path) of README.md, doc/*.md and every
#    README.md resolves (from the file's folder; URLs and #anchors aside),
#    and every doc/NAME.md, doc/NAME.N (a man page), tests/NAME.bats and
#    scripts/NAME.sh|py that any file names exists.
# 3. Every program of tests/unit/local.mk's check_PROGRAMS (the unit_tests
#    list) has a row in tests/README.md's unit-test table, and every program
#    a row names is built there.
#
# One line per violation, FILE:LINE: what; exit 1 if any, else 0 with one
# line. The file list is git's where DIR is a git work tree, else every file
# but a build's (make distcheck's unpacked tarball). This script and
# tests/docs.bats, which must spell the patterns out, are not scanned for 1
# and 2. Needs bash, GNU grep (-P) and awk; no build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
while [ $# -gt 0 ]; do
	case $1 in
	--root)
		root=$(cd "$2" && pwd)
		shift 2
		;;
	-h | --help)
		awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"
		exit 0
		;;
	*)
		echo "check-docs.sh: unknown argument '$1'" >&2
		exit 2
		;;
	esac
done
cd "$root"
self=scripts/check-docs.sh
suite=tests/docs.bats

# The tree's files, relative to it, one per line.
list_files() {
	if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$root" ]; then
		git ls-files
		return
	fi
	# No git: leave out what autotools and a build add (a build folder is
	# one that holds config.status).
	find . \( -name .git -o -name autom4te.cache -o -name .libs -o -name .deps \) -prune -o \
		-type d ! -path . -exec test -e '{}/config.status' \; -prune -o -type f -print |
		sed 's#^\./##' |
		grep -vxE 'configure|configure~|aclocal\.m4|config\.h(\.in)?|config\.(log|status)|libtool|stamp-h1|(.*/)?Makefile(\.in)?|build-aux/.*|m4/(libtool|lt[a-z~_]*)\.m4|.*\.(o|lo|la|a|so)' |
		sort
}

mapfile -t files < <(list_files)
scanned=()
for f in "${files[@]}"; do
	[ "$f" = "$self" ] || [ "$f" = "$suite" ] || [ ! -f "$f" ] || scanned+=("$f")
done
bad=0
say() { # FILE:LINE: message
	echo "$1"
	bad=$((bad + 1))
}

# grep -P over the scanned files: FILE:LINE:MATCH, the first match of each
# line (one complaint a line), or with "all" every distinct match.
matches() {
	[ ${#scanned[@]} -eq 0 ] ||
		{ printf '%s\0' "${scanned[@]}" | xargs -0 grep -noIP -- "$1" || true; } |
		awk -F: -v all="${2:-}" '!seen[all == "all" ? $0 : $1 ":" $2]++'
}

# ---------------------------------------------------------------- 1: citations
outside='shared/reference|reference/[a-z0-9-]+\.md|\bseeds/|\.\./shared/|\.md ?§ ?[0-9]'
while IFS= read -r m; do
	say "${m%%:*}:$(cut -d: -f2 <<<"$m"): cites a note outside the tree ('${m#*:*:}'): cite the fact's public source, or a doc of the tree"
done < <(matches "$outside")

# A NAME.md named without a folder that no file of the tree is called: a note
# kept elsewhere (a path with a folder is another repository's, cited as such).
declare -A basenames=()
for f in "${files[@]}"; do basenames[${f##*/}]=1; done
while IFS= read -r m; do
	name=${m#*:*:}
	[ -n "${basenames[$name]:-}" ] ||
		say "${m%%:*}:$(cut -d: -f2 <<<"$m"): names $name, which is no file of the tree: a note kept elsewhere?"
done < <(matches '(?<![\w./*~-])[A-Za-z0-9][\w.-]*\.md\b' all)

issue='\b[Ii]ssues? ?#?\d+\b|\b(?:PR|[Pp]ull request) ?#?\d+\b'
while IFS= read -r m; do
	say "${m%%:*}:$(cut -d: -f2 <<<"$m"): cites an issue by its number ('${m#*:*:}'): say what it asked or found instead"
done < <(matches "$issue")
# A bare #N: not owner/repo#N, an HTML entity, a colour or $#, nor after
# "issue" (said above); llmp's own "call #N" (the flight recorder's sequence
# numbers) is no issue.
while IFS= read -r m; do
	say "${m%%:*}:$(cut -d: -f2 <<<"$m"): a bare '${m#*:*:}' reads as an issue number: write another project's as owner/repo#N or its URL"
done < <(matches '(?<![\w/.&$#"'"'"'-])(?<!call |ssue |sues |PR )#\d+\b')

# ---------------------------------------------------------------- 2: pointers
docs=()
for f in "${scanned[@]}"; do
	case $f in README.md | */README.md | doc/*.md) docs+=("$f") ;; esac
done
# [text](target) outside code blocks and code spans: FILE:LINE:TARGET.
links() {
	awk '
		FNR == 1 { fence = 0 }
		/^[ \t]*(```|~~~)/ { fence = !fence; next }
		fence { next }
		{
			line = $0
			gsub(/`[^`]*`/, "", line)
			while (match(line, /\]\([^)[:space:]]+([[:space:]]+"[^"]*")?\)/)) {
				t = substr(line, RSTART + 2, RLENGTH - 3)
				sub(/[[:space:]].*/, "", t)
				print FILENAME ":" FNR ":" t
				line = substr(line, RSTART + RLENGTH)
			}
		}' "$@"
}
if [ ${#docs[@]} -gt 0 ]; then
	while IFS= read -r m; do
		file=${m%%:*} target=${m#*:*:}
		case $target in
		[a-zA-Z]*:* | '#'*) continue ;; # a URL, mailto:, an anchor of the same page
		esac
		path=${target%%#*}
		case $path in
		/*) resolved=${path#/} ;;
		*) resolved=$(dirname "$file")/$path ;;
		esac
		[ -e "$resolved" ] ||
			say "$file:$(cut -d: -f2 <<<"$m"): links to $target, which is not in the tree"
	done < <(links "${docs[@]}")
fi

# Names of the tree's own docs, suites and scripts, wherever written.
while IFS= read -r m; do
	name=${m#*:*:}
	[ -e "$name" ] || say "${m%%:*}:$(cut -d: -f2 <<<"$m"): names $name, which is not in the tree"
done < <(matches '(?<![\w./-])(?:doc/[\w.-]+\.(?:md|[1-8])|tests/[\w.-]+\.bats|scripts/[\w.-]+\.(?:sh|py))\b' all)

# ---------------------------------------------------------------- 3: unit tests
mk=tests/unit/local.mk readme=tests/README.md
if [ -f "$mk" ] && [ -f "$readme" ]; then
	# The programs: what unit_tests and check_PROGRAMS are given, continuation
	# lines joined; NAME<TAB>LINE, NAME as tests/README.md writes it
	# (tests/unit/X -> X, tests/fuzz/X -> fuzz/X).
	programs=$(awk '
		{ start = (cont ? start : FNR); text = (cont ? text " " : "") $0 }
		/\\$/ { sub(/\\$/, "", text); cont = 1; next }
		{ cont = 0 }
		text ~ /^[ \t]*(unit_tests|check_PROGRAMS)[ \t]*\+?=/ {
			sub(/^[^=]*=/, "", text)
			n = split(text, w, /[ \t]+/)
			for (i = 1; i <= n; i++) {
				if (w[i] == "" || w[i] ~ /^\$/) continue
				p = w[i]; sub(/^tests\/unit\//, "", p); sub(/^tests\//, "", p)
				print p "\t" start
			}
		}' "$mk")
	# The table after the line that starts "Unit tests": its first column's
	# `names`, NAME<TAB>LINE.
	rows=$(awk '
		/^Unit tests/ { in_section = 1; next }
		in_section && /^\|/ { seen = 1
			split($0, c, "|"); cell = c[2]
			while (match(cell, /`[^`]+`/)) {
				print substr(cell, RSTART + 1, RLENGTH - 2) "\t" FNR
				cell = substr(cell, RSTART + RLENGTH)
			}
			next }
		in_section && seen { exit }' "$readme")
	declare -A built=() listed=()
	while IFS=$'\t' read -r p l; do [ -n "$p" ] && built[$p]=$l; done <<<"$programs"
	while IFS=$'\t' read -r p l; do [ -n "$p" ] && listed[$p]=$l; done <<<"$rows"
	[ -n "$rows" ] || say "$readme:1: no unit-test table after a line starting 'Unit tests'"
	for p in $(printf '%s\n' "${!built[@]}" | sort); do
		[ -n "${listed[$p]:-}" ] ||
			say "$mk:${built[$p]}: builds $p, which tests/README.md's unit-test table does not list"
	done
	for p in $(printf '%s\n' "${!listed[@]}" | sort); do
		[ -n "${built[$p]:-}" ] ||
			say "$readme:${listed[$p]}: lists $p, which tests/unit/local.mk does not build"
	done
fi

if [ "$bad" -gt 0 ]; then
	echo "$bad problem(s): the tree must explain itself (scripts/check-docs.sh)"
	exit 1
fi
echo "the docs cite only the tree and public sources, and point at what is there (${#scanned[@]} files)"

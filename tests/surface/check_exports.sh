#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# check_exports.sh - a shared library exports exactly the functions its
# public headers declare.
#
#   check_exports.sh LIBRARY.so HEADER.h...
#
# Declared: every extern function of the named headers, as gcc itself reads
# them (-aux-info writes each prototype with the file and line it came
# from), so no C is parsed here. Exported: the library's dynamic symbols of
# type T (nm -D --defined-only). A function declared but not exported
# does not link for a user; one exported but not declared is a surface
# nobody documented. Both are printed, one a line, and the status is 1.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: check_exports.sh LIBRARY.so HEADER.h..." >&2; exit 2; }
lib=$1
shift
[ -f "$lib" ] || { echo "check_exports.sh: $lib: no such library (build it first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

: >"$tmp/declared"
for h in "$@"; do
	[ -f "$h" ] || { echo "check_exports.sh: $h: no such header" >&2; exit 2; }
	h=$(realpath "$h")
	# Public headers include one another by bare name: their own folder is the -I.
	printf '#include "%s"\n' "$h" |
		gcc -std=c11 -I"$(dirname "$h")" -aux-info "$tmp/aux" -fsyntax-only -x c - ||
		{ echo "check_exports.sh: $h does not compile on its own" >&2; exit 2; }
	# A header may declare no function (llmp_env.h): no match is no error.
	{ grep -F "/* $h:" "$tmp/aux" || true; } | { grep ' extern ' || true; } |
		sed 's/ *(.*$//; s/.*[ *]\([A-Za-z_][A-Za-z0-9_]*\)$/\1/' >>"$tmp/declared"
done
sort -u -o "$tmp/declared" "$tmp/declared"
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' | sort -u >"$tmp/exported"

comm -23 "$tmp/declared" "$tmp/exported" | sed "s|^|declared but not exported by $(basename "$lib"): |" >"$tmp/missing"
comm -13 "$tmp/declared" "$tmp/exported" | sed "s|^|exported by $(basename "$lib") but declared in none of the headers: |" >"$tmp/extra"
cat "$tmp/missing" "$tmp/extra"
if [ -s "$tmp/missing" ] || [ -s "$tmp/extra" ]; then
	exit 1
fi
echo "$(basename "$lib"): $(wc -l <"$tmp/exported") functions exported, each declared in $# header(s)"

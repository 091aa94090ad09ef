#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Format C sources and headers of llmp with clang-format (.clang-format).
#
#   scripts/format.sh              rewrite every C file of the tree in place
#   scripts/format.sh FILE...      rewrite only these
#   scripts/format.sh --check      list the files that differ; exit 1 if any
#   scripts/format.sh --check FILE...   the same, for these files only
#
# clang-format 14 (Debian 12's clang-format package); another version may
# break a few lines differently.
set -euo pipefail
check=no
if [ "${1:-}" = --check ]; then
	check=yes
	shift
fi
files=()
for f in "$@"; do # named files: from the caller's directory
	[ -f "$f" ] || { echo "format.sh: $f: no such file" >&2; exit 2; }
	files+=("$(realpath "$f")")
done
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format.sh: clang-format not found (apt-get install clang-format)" >&2; exit 1; }
[ ${#files[@]} -gt 0 ] ||
	mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cu' '*.cuh')
if [ "$check" = yes ]; then
	bad=0
	for f in "${files[@]}"; do
		if ! clang-format "$f" | cmp -s - "$f"; then
			echo "format.sh: $f differs from clang-format's output"
			bad=1
		fi
	done
	exit "$bad"
fi
clang-format -i "${files[@]}"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Format every C source and header of llmp with clang-format (.clang-format).
#
#   scripts/format.sh           rewrite the files in place
#   scripts/format.sh --check   list the files that differ; exit 1 if any
#
# clang-format 14 (Debian 12's clang-format package); another version may
# break a few lines differently.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format.sh: clang-format not found (apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = --check ]; then
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

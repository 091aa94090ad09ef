#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Configure and build llmp out of tree in build/ (or $LLMP_BUILD_DIR).
# Extra arguments go to configure. Used by test.sh and demo.sh.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${LLMP_BUILD_DIR:-$src/build}

cd "$src"
[ -x configure ] && [ configure -nt configure.ac ] && [ configure -nt Makefile.am ] ||
	autoreconf -fi
mkdir -p "$build"
cd "$build"
"$src/configure" "$@"
make -j"$(nproc)"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The device path's allreduce against nccl-tests' on the same GPU, in one
# run: `llmp bench --memory device` and nccl-tests' all_reduce_perf over the
# same sizes (one rank: what one GPU allows), then busbw side by side and
# llmp's as a fraction of nccl-tests' (the goal: at least 0.95).
#   NCCL_TESTS=DIR scripts/bench-gpu.sh [BUILD_DIR]
# DIR holds nccl-tests' build (all_reduce_perf), built against the same NCCL
# (make -C nccl-tests NCCL_HOME=... CUDA_HOME=...). Without a GPU, or without
# nccl-tests, it says so and exits 0.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
llmp=$build/cli/llmp

if ! out=$(LLMP_DEVICE=nccl "$llmp" bench --memory device -b 8 -e 8 -n 1 -w 0 2>&1); then
	echo "bench-gpu: skipped: $(tail -n 1 <<<"$out")"
	exit 0
fi
perf=${NCCL_TESTS:+$NCCL_TESTS/all_reduce_perf}
if [ -z "$perf" ] || [ ! -x "$perf" ]; then
	echo "bench-gpu: skipped: set NCCL_TESTS to a directory with nccl-tests' all_reduce_perf (built here,"
	echo "against the NCCL llmp loads); the machine has a GPU, so llmp's own figures follow."
	LLMP_DEVICE=nccl "$llmp" bench --memory device -b 8 -e 256M
	exit 0
fi
echo "# $(date -u +%F) $(uname -n); $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
LLMP_DEVICE=nccl "$llmp" bench --memory device -b 8 -e 256M -n 50 -w 10 >"${TMPDIR:-/tmp}/llmp-bench-gpu.$$" || exit 1
"$perf" -b 8 -e 256M -f 2 -g 1 -n 50 -w 10 >"${TMPDIR:-/tmp}/nccl-tests.$$" || exit 1
# busbw by size: llmp's column 7, nccl-tests' out-of-place busbw (column 8).
join <(awk '$1 ~ /^[0-9]+$/ {print $1, $7}' "${TMPDIR:-/tmp}/llmp-bench-gpu.$$" | sort -k1,1) \
	<(awk '$1 ~ /^[0-9]+$/ {print $1, $8}' "${TMPDIR:-/tmp}/nccl-tests.$$" | sort -k1,1) |
	sort -n | awk 'BEGIN {printf "%12s %12s %12s %7s\n", "bytes", "llmp busbw", "nccl busbw", "ratio"}
		{printf "%12d %12.3f %12.3f %7.3f\n", $1, $2, $3, $3 > 0 ? $2 / $3 : 0}'
rm -f "${TMPDIR:-/tmp}/llmp-bench-gpu.$$" "${TMPDIR:-/tmp}/nccl-tests.$$"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark llmp's checkpoints (doc/benchmarks.md records the figures):
# `llmp ckpt bench` alone (a world of one) and under Open MPI's mpirun with
# 2 ranks, for a 64 MiB and a 512 MiB model, ROUNDS times each. Each run
# measures, on the same filesystem and with the same bytes per rank, save vs
# write+fsync, the async save's stall vs memcpy, and a resharding restore vs
# read. mpirun is only the launcher (libllmp joins its PMIx server as it
# joins srun's); libllmp never links MPI.
#   scripts/bench-ckpt.sh [ROUNDS] [DIR]    (default 3 rounds, files under /tmp)
# Extra options for `llmp ckpt bench` can be given in LLMP_CKPT_BENCH_ARGS,
# e.g. LLMP_CKPT_BENCH_ARGS="--cache warm".
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${LLMP_BUILD_DIR:-$src/build}
rounds=${1:-3}
dir=${2:-/tmp}
read -r -a extra <<<"${LLMP_CKPT_BENCH_ARGS:-}"

[ -x "$build/cli/llmp" ] || LLMP_BUILD_DIR=$build "$src/scripts/build.sh" >/dev/null
command -v mpirun >/dev/null || echo "bench-ckpt: mpirun missing (openmpi-bin): 2-rank runs skipped" >&2

echo "# $(date -u +%F) $(uname -n): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
	"$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); files in $dir ($(df -T "$dir" | awk 'NR == 2 {print $2 " on " $1}'))"
for round in $(seq 1 "$rounds"); do
	echo "## round $round"
	for size in 64M 512M; do
		"$build/cli/llmp" ckpt bench --size "$size" --iters 5 --dir "$dir" "${extra[@]}"
		if command -v mpirun >/dev/null; then
			mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
				"$build/cli/llmp" ckpt bench --size "$size" --iters 5 --dir "$dir" "${extra[@]}"
		fi
	done
done

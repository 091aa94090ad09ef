#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark libllmp's host collectives against memcpy and Open MPI, in one run
# on one machine (doc/benchmarks.md records the figures):
#   1. allreduce float32 at 64 MiB, 2 ranks: busbw / single-thread memcpy,
#      out of place and in place (through shared memory, runtime/coll/shm.h), and
#      out of place through UCX alone (LLMP_SHM_THRESHOLD=off), with Open
#      MPI's MPI_Allreduce of 64 MiB beside them for reference,
#   2. allreduce of 8 bytes, 2 ranks: llmp vs Open MPI's MPI_Allreduce.
# Both programs are started by the same launcher (Open MPI's mpirun, whose
# PMIx server libllmp joins like srun's), so launchers do not differ.
# Installs Debian's openmpi (as root) if mpicc is missing: for this
# comparison only; libllmp never links MPI.
#   scripts/bench-runtime.sh [ROUNDS]    (default 3 rounds of each)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${LLMP_BUILD_DIR:-$src/build}
rounds=${1:-3}

if ! command -v mpicc >/dev/null; then
	[ "$(id -u)" -eq 0 ] || { echo "bench-runtime: mpicc missing; install openmpi-bin libopenmpi-dev" >&2; exit 1; }
	apt-get update -qq && apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
[ -x "$build/cli/llmp" ] || LLMP_BUILD_DIR=$build "$src/scripts/build.sh" >/dev/null
mpicc -O2 -o "$build/bench_mpi_allreduce" "$src/bench/bench_mpi_allreduce.c"

mpirun_() { mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$@"; }
echo "# $(date -u +%F) $(uname -n): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "# UCX $(ucx_info -v 2>/dev/null | sed -n 's/.*[Vv]ersion[: =]*\([0-9][0-9.]*\).*/\1/p' | head -1), $(mpirun --version | head -1)"
for round in $(seq 1 "$rounds"); do
	echo "## round $round"
	mpirun_ "$build/cli/llmp" bench -b 64M -e 64M -n 10 -w 2 | grep -v '^#$'
	mpirun_ "$build/cli/llmp" bench -b 64M -e 64M -n 10 -w 2 -I 1 | grep -v '^# \(llmp\|UCX\)' | grep -v '^#$'
	mpirun_ -x LLMP_SHM_THRESHOLD=off "$build/cli/llmp" bench -b 64M -e 64M -n 10 -w 2 |
		grep -v '^# \(llmp\|UCX\)' | grep -v '^#$'
	mpirun_ "$build/bench_mpi_allreduce" 67108864 10 2
	mpirun_ "$build/cli/llmp" bench -b 8 -e 8 -n 20000 -w 2000 | grep -v '^# \(llmp\|memcpy\|UCX\)' | grep -v '^#$'
	mpirun_ "$build/bench_mpi_allreduce" 8 20000 2000
done

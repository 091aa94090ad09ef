#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A checkpoint step's commit at the scale of a large job, simulated
# (doc/benchmarks.md records the figures): bench/bench_ckpt_commit builds
# the MANIFEST and index.h5 of GPT-3 175B for 1,024, 4,096 and 16,384 shards
# with the runtime's own commit path, then h5py opens each global view.
#   scripts/bench-ckpt-scale.sh [DIR [SHARDS...]]   (default /tmp; 1024 4096 16384)
# h5py: the first python3 that has it (python3, build-py/venv, build/venv),
# else a venv of its own made under the build directory with pip.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${LLMP_BUILD_DIR:-$src/build}
dir=${1:-/tmp}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1024 4096 16384)

[ -x "$build/config.status" ] || LLMP_BUILD_DIR=$build "$src/scripts/build.sh" >/dev/null
make -C "$build" bench/bench_ckpt_commit >/dev/null

python=
for p in python3 "$src/build-py/venv/bin/python" "$src/build/venv/bin/python" "$build/venv-h5py/bin/python"; do
	if "$p" -c 'import h5py' 2>/dev/null; then
		python=$p
		break
	fi
done
if [ -z "$python" ]; then
	python3 -m venv "$build/venv-h5py" >&2
	"$build/venv-h5py/bin/pip" install -q h5py >&2
	python=$build/venv-h5py/bin/python
fi

# Opened: the file, then every dataset (its shape, dtype and virtual mappings
# decoded), as a reader listing the global view does. First read: one element
# of a weight (one source file), then one element from each of an optimizer
# buffer's dp slices (dp source files).
view='
import sys, time
t0 = time.perf_counter()
import h5py
t1 = time.perf_counter()
f = h5py.File(sys.argv[1] + "/index.h5", "r")
t2 = time.perf_counter()
shapes = {}
f.visititems(lambda n, o: shapes.__setitem__(n, (o.shape, o.dtype)) if isinstance(o, h5py.Dataset) else None)
t3 = time.perf_counter()
w = f["decoder.layers.0.mlp.linear_fc1.weight"]
x = w[0, 0]
t4 = time.perf_counter()
o = f["optimizer.pp00.tp0.exp_avg"]
dp = int(sys.argv[2])
step = o.shape[0] // dp
y = o[::step]
t5 = time.perf_counter()
assert x == 0 and len(y) == dp and not y.any()
print("%8.0f %8.0f %8.0f %9.1f %10.1f  (%d datasets; import h5py %.0f ms)" % ((t2 - t1) * 1e3,
      (t3 - t2) * 1e3, (t3 - t1) * 1e3, (t4 - t3) * 1e3, (t5 - t4) * 1e3, len(shapes), (t1 - t0) * 1e3))
'

echo "# $(date -u +%F) $(uname -n): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
	"$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); files in $dir ($(df -T "$dir" | awk 'NR == 2 {print $2}'))"
"$build/bench/bench_ckpt_commit" --dir "$dir" --keep "${sizes[@]}" 2> >(grep -v '^bench_ckpt_commit: kept' >&2)
echo "# h5py $("$python" -c 'import h5py; print(h5py.__version__, "HDF5", h5py.version.hdf5_version)'), ms"
echo "# shards  file_ms  list_ms  open_ms  read1_ms  read_dp_ms"
for n in "${sizes[@]}"; do
	step_dir=$dir/llmp-ckpt-scale-$n/step-1000
	sync
	printf '%7s ' "$n"
	"$python" -c "$view" "$step_dir" $((n / 128))
	rm -rf "$dir/llmp-ckpt-scale-$n"
done

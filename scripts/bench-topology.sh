#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Benchmark topology work (doc/benchmarks.md records the figures): reading
# and checking a topology file, and placing a layout on it, for a two-level
# fat tree of 2,048 DGX H100 nodes (16,384 GPUs, 64 leaves of 32 nodes; made
# from etc/topology/fat-tree.json), and discovering this node from a copy of
# a DGX H100's sysfs. Prints the median wall time of ROUNDS runs of each.
#   scripts/bench-topology.sh [ROUNDS]    (default 5)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${LLMP_BUILD_DIR:-$src/build}
rounds=${1:-5}
[ -x "$build/cli/llmp" ] || LLMP_BUILD_DIR=$build "$src/scripts/build.sh" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$src/etc/topology/fat-tree.json" "$work/ft2048.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["source"] = "etc/topology/fat-tree.json scaled to 2048 nodes under 64 leaves of 32"
doc["nodes"] = [{"hosts": "dgx[0001-2048]", "type": "dgx-h100"}]
doc["switches"] = [{"name": "spine", "switches": "leaf[00-63]"}] + [
    {"name": f"leaf{l:02d}", "nodes": f"dgx[{l * 32 + 1:04d}-{l * 32 + 32:04d}]"} for l in range(64)]
json.dump(doc, open(sys.argv[2], "w"))
PY
python3 "$src/tests/topology/fake_sysfs.py" "$src/etc/topology/dgx-h100.json" dgx-h100 "$work/sysfs"

# Median wall seconds of running "$@" ROUNDS times, output discarded.
median() {
	local t=()
	for _ in $(seq "$rounds"); do
		local s e
		s=$(date +%s.%N)
		"$@" >/dev/null
		e=$(date +%s.%N)
		t+=("$(echo "$e - $s" | bc)")
	done
	printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR] = $1} END {printf "%.3f", a[int((NR + 1) / 2)]}'
}

echo "# $(date -u +%F) $(uname -n): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
printf '%-58s %8s s\n' "llmp --version (the floor: exec and dynamic linking)" "$(median "$build/cli/llmp" --version)"
printf '%-58s %8s s\n' "read and check a 2,048-node topology (llmp topo --file)" \
	"$(median "$build/cli/llmp" topo --file "$work/ft2048.json")"
printf '%-58s %8s s\n' "place tp=8,cp=2,pp=8 on 16,384 GPUs, topology order" \
	"$(median "$build/cli/llmp" plan --topology "$work/ft2048.json" --parallel tp=8,cp=2,pp=8 --placement topology)"
printf '%-58s %8s s\n' "discover a DGX H100 node from its sysfs (llmp topo)" \
	"$(median "$build/cli/llmp" topo --sysfs "$work/sysfs")"

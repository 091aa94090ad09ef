#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# make gpu-check: what only a GPU can run, on the GPUs of this machine.
#   1. tests/gpu/gpu_kernels: the CUDA kernels against the C ones;
#   2. llmp bench --memory device as a one-rank job: NCCL on one GPU, every
#      collective, each result checked (#wrong must be 0).
# Without a GPU it says so and exits 0: CI machines have none. Figures go to
# doc/benchmarks.md by hand, with the machine named.
#   scripts/gpu-check.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: gpu-check.sh BUILD_DIR}
status=0

"$build/tests/gpu/gpu_kernels"
rc=$?
if [ "$rc" -eq 77 ]; then
	echo "gpu-check: skipped: no GPU on this machine (the kernels and the device path were compiled and tested on CPU only)"
	exit 0
fi
[ "$rc" -eq 0 ] || status=1

echo "== llmp bench --memory device, one rank (NCCL communicator of one)"
out=$(LLMP_DEVICE=nccl "$build/cli/llmp" bench --memory device -c all -b 8 -e 256M -d float32 2>&1)
rc=$?
echo "$out"
if [ "$rc" -ne 0 ] || awk '$1 ~ /^[0-9]+$/ && $NF != 0 {bad = 1} END {exit !bad}' <<<"$out"; then
	echo "gpu-check: the device benchmark failed or counted wrong elements"
	status=1
fi
echo "gpu-check: $([ "$status" -eq 0 ] && echo passed || echo FAILED)"
exit "$status"

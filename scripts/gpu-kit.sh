#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Assemble what scripts/gpu-run.sh needs on a GPU machine that has CUDA,
# NCCL (PyTorch's) and python3 with torch but neither PMIx, UCX nor HDF5
# (the lent H100/H200 machines), from a build here.
#
#   scripts/gpu-kit.sh BUILD_DIR KIT_DIR [NCCL_TESTS_SRC]
#
# KIT_DIR/bin: llmp, bench/llmp-bench (where llmp looks beside itself),
# dev_check, dev_ckpt, gpu_kernels, nvml_probe; KIT_DIR/lib: libllmp.so.0 and every
# library they load that is not glibc's (ldd), UCX's transport modules and
# PMIx's components (found again through UCX_MODULE_DIR and
# PMIX_MCA_mca_base_component_path); KIT_DIR/nccl-tests: its sources, to be
# built there against the NCCL it will run with.
set -euo pipefail
build=${1:?usage: gpu-kit.sh BUILD_DIR KIT_DIR [NCCL_TESTS_SRC]}
kit=${2:?usage: gpu-kit.sh BUILD_DIR KIT_DIR [NCCL_TESTS_SRC]}
tests_src=${3:-}
rm -rf "$kit"
mkdir -p "$kit/bin/bench" "$kit/lib/ucx" "$kit/lib/pmix"
make -C "$build" -s cli/llmp cli/bench/llmp-bench tests/device/dev_check tests/device/dev_ckpt \
	tests/gpu/gpu_kernels tests/gpu/nvml_probe runtime/libllmp.la >/dev/null
cp "$build/cli/llmp" "$build/tests/device/dev_check" "$build/tests/device/dev_ckpt" \
	"$build/tests/gpu/gpu_kernels" "$build/tests/gpu/nvml_probe" "$kit/bin/"
cp "$build/cli/bench/llmp-bench" "$kit/bin/bench/"
cp -L "$build/runtime/.libs/libllmp.so.0" "$kit/lib/"
# Every shared library of those, but the C library's own (the machine has a newer one).
for f in "$kit"/bin/* "$kit"/bin/bench/* "$kit/lib/libllmp.so.0"; do
	[ -f "$f" ] && ldd "$f" | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux[^/]*|libgcc_s|libstdc\+\+)\.so' |
	while read -r lib; do cp -L "$lib" "$kit/lib/"; done
cp -L /usr/lib/x86_64-linux-gnu/ucx/*.so* "$kit/lib/ucx/" 2>/dev/null || true
cp -L /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so "$kit/lib/pmix/" 2>/dev/null || true
if [ -n "$tests_src" ]; then
	mkdir -p "$kit/nccl-tests"
	(cd "$tests_src" && git archive HEAD) | tar -x -C "$kit/nccl-tests"
fi
du -sh "$kit"

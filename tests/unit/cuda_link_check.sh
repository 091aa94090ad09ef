#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/cuda_link_check.sh - what links the CUDA kernels needs no
# libcuda: the archive refers to no driver API symbol, and the programs
# linked with it (test_cuda_link, test_cuda_elem_nvcc) name no libcuda in
# their dynamic section and have no run path into the toolkit's stubs/ (the
# stub libcuda.so returns errors for every call and must never be found at
# run time). And every object carries the device code configure asked for:
# SASS for sm_80, sm_90, sm_100 and PTX for compute_90, read from the fat
# binary's entry headers (no cuobjdump in the toolkit here). Speaks TAP; run
# by make check from the build directory.
set -u
builddir=${LLMP_BUILDDIR:-.}
archive=$builddir/kernels/cuda/libkernels_cuda.a
programs="$builddir/tests/unit/test_cuda_link $builddir/tests/unit/test_cuda_elem_nvcc"

echo "1..6"
n=0
result() { # result OK|FAIL description
	n=$((n + 1))
	if [ "$1" = OK ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}

if ! command -v readelf >/dev/null || ! command -v nm >/dev/null; then
	for i in 1 2 3 4 5 6; do echo "ok $i # SKIP readelf or nm not found (binutils)"; done
	exit 0
fi

# 1: the archive holds device code (a fat binary in every object).
missing=""
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && ar x "$archive") || missing="(cannot extract $archive)"
for o in "$tmp"/*.o; do
	readelf -S "$o" | grep -q '\.nv_fatbin' || missing="$missing $(basename "$o")"
done
[ -z "$missing" ] && result OK "every object of libkernels_cuda.a embeds a fat binary" ||
	result FAIL "objects without .nv_fatbin:$missing"

# 2: no driver API symbol (cuInit, cuLaunchKernel, ...) is undefined in the archive.
driver=$(nm -u "$archive" | awk '{ print $NF }' | grep -E '^cu[A-Z]' | sort -u | tr '\n' ' ')
[ -z "$driver" ] && result OK "libkernels_cuda.a refers to no CUDA driver symbol" ||
	result FAIL "libkernels_cuda.a refers to driver symbols: $driver"

# 3, 4: no libcuda among the programs' NEEDED entries.
for p in $programs; do
	needed=$(readelf -d "$p" 2>/dev/null | grep NEEDED)
	if [ -z "$needed" ]; then
		result FAIL "$(basename "$p"): no dynamic section read"
	elif echo "$needed" | grep -q 'libcuda\.so'; then
		result FAIL "$(basename "$p") needs libcuda: $(echo "$needed" | grep libcuda)"
	else
		result OK "$(basename "$p") needs no libcuda ($(echo "$needed" | sed 's/.*\[\(.*\)\]/\1/' | tr '\n' ' '))"
	fi
done

# 5: no run path into stubs/.
paths=$(for p in $programs; do readelf -d "$p" | grep -E 'RPATH|RUNPATH'; done)
echo "$paths" | grep -q stubs && result FAIL "a run path into stubs/: $paths" ||
	result OK "no RPATH or RUNPATH into the toolkit's stubs/"

# 6: the code in each fat binary, by entry: kind (1 PTX, 2 ELF/SASS) at 0, arch at 28.
fatbin_codes() {
	objcopy -O binary --only-section=.nv_fatbin "$1" "$1.fatbin" && python3 - "$1.fatbin" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
codes, off = [], 0
while off + 16 <= len(data):
    magic, _, header, size = struct.unpack_from("<IHHQ", data, off)
    if magic != 0xBA55ED50:
        break
    p, end = off + header, off + header + size
    while p < end:
        kind, _, entry_header, entry_size = struct.unpack_from("<HHIQ", data, p)
        arch = struct.unpack_from("<I", data, p + 28)[0]
        codes.append({1: "compute_", 2: "sm_"}.get(kind, "kind%d_" % kind) + str(arch))
        p += entry_header + entry_size
    off = end
print(" ".join(sorted(codes)))
PY
}
if ! command -v python3 >/dev/null || ! command -v objcopy >/dev/null; then
	echo "ok 6 # SKIP python3 or objcopy not found"
else
	want="compute_90 sm_100 sm_80 sm_90"
	wrong=""
	for o in "$tmp"/*.o; do
		got=$(fatbin_codes "$o")
		[ "$got" = "$want" ] || wrong="$wrong $(basename "$o"): [$got]"
	done
	[ -z "$wrong" ] && result OK "every object holds exactly $want" ||
		result FAIL "device code other than $want:$wrong"
fi

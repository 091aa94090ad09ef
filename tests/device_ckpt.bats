#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Checkpoints of device tensors without a GPU, as PMIx singletons (no
# cluster; also in the sanitizer stage of scripts/test.sh):
# tests/device/dev_ckpt loads fake_cuda.so, the CUDA driver's test double
# (tests/device/fake_cuda.c), allocates its tensors there, and libllmp
# finds and loads the same library. The double is linked as libcuda.so.1 in
# the test's own directory, on LD_LIBRARY_PATH for these runs only, so that
# both load "libcuda.so.1", as a program and libllmp do with the real
# driver (/usr/lib/x86_64-linux-gnu/libcuda.so.1, absent on the build
# machine, which has no GPU driver: its path is shown with the toolkit's
# stub instead). The double performs
# copies late, on a thread per stream, so a missing synchronisation shows
# up as wrong values. dev_ckpt computes every expected value itself.

load lib/helpers

DEV_CKPT="$LLMP_BUILDDIR/tests/device/dev_ckpt"
FAKE="$LLMP_BUILDDIR/tests/device/.libs/fake_cuda.so"
STUB=/usr/local/cuda/lib64/stubs/libcuda.so
# dev_ckpt's model on one rank: device w 24x40 f32, b 7x5x9 bf16, e 1000 u8; host h 16 f64.
DEVICE_BYTES=$((24 * 40 * 4 + 7 * 5 * 9 * 2 + 1000))
HOST_BYTES=$((16 * 8))

setup() {
	llmp_setup
	[ -x "$DEV_CKPT" ] || skip "dev_ckpt not built ($DEV_CKPT)"
	[ -f "$FAKE" ] || fail "fake_cuda.so not built ($FAKE)"
	export LSAN_OPTIONS="suppressions=$LLMP_SRCDIR/tests/lsan.supp"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
	mkdir -p "$BATS_TEST_TMPDIR/driver"
	ln -sf "$FAKE" "$BATS_TEST_TMPDIR/driver/libcuda.so.1"
	export LD_LIBRARY_PATH="$BATS_TEST_TMPDIR/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export FAKE_CUDA=libcuda.so.1
	unset LLMP_CUDA_LIBRARY
	ROOT="$BATS_TEST_TMPDIR/ckpt"
}

# No launcher's variables: a PMIx singleton, rank 0 of 1.
dev_ckpt() {
	run env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID timeout -k 5 120 \
		"$DEV_CKPT" "$ROOT" "$@"
}

ok_or_fail() { # what
	[ "$status" -eq 0 ] || fail "$1: $output"
}

# Loads of STEP into device tensors in three layouts and into host memory: all bit-identical.
load_everywhere() { # STEP
	local layout
	for layout in rows cols window; do
		dev_ckpt load "$1" into=device layout=$layout
		ok_or_fail "load $1 into device ($layout)"
		grep -q "^rank 0: loaded step $1 into device layout $layout: every value as computed$" <<<"$output"
	done
	dev_ckpt load "$1" into=host layout=window
	ok_or_fail "load $1 into host"
}

@test "device ckpt: libllmp links no CUDA driver" {
	local lib=$LLMP_BUILDDIR/runtime/.libs/libllmp.so
	[ -f "$lib" ] || fail "no $lib"
	if readelf -d "$lib" "$DEV_CKPT" | grep -E 'NEEDED.*(libcuda|libcudart)'; then
		fail "libllmp or dev_ckpt links CUDA"
	fi
}

@test "device ckpt: saved from device tensors, loaded into device and host tensors of other layouts, bit-identical" {
	FAKE_CUDA_LOG=$BATS_TEST_TMPDIR/cuda.log dev_ckpt save 10
	ok_or_fail "save"
	grep -qx "rank 0: saved step 10 device_bytes $DEVICE_BYTES staged 0 pinned $DEVICE_BYTES copy_ok 1" <<<"$output" ||
		fail "stats: $output"
	load_everywhere 10
	# The window layout needs 2D copies with other pitches than the file's.
	FAKE_CUDA_LOG=$BATS_TEST_TMPDIR/load.log dev_ckpt load 10 into=device layout=window
	ok_or_fail "load window"
	grep -Eq ' copy2d [1-9][0-9]* ' "$BATS_TEST_TMPDIR/load.log" || fail "no 2D copy: $(cat "$BATS_TEST_TMPDIR/load.log")"
	llmp ckpt verify "$ROOT" --step 10
	[ "$status" -eq 0 ] || fail "llmp ckpt verify: $output"
	# The driver named by path in LLMP_CUDA_LIBRARY, the program loading that path: the same.
	FAKE_CUDA=$FAKE LLMP_CUDA_LIBRARY=$FAKE LD_LIBRARY_PATH= dev_ckpt save 11
	ok_or_fail "save with LLMP_CUDA_LIBRARY"
	grep -qx "rank 0: saved step 11 device_bytes $DEVICE_BYTES staged 0 pinned $DEVICE_BYTES copy_ok 1" <<<"$output" ||
		fail "stats: $output"
	FAKE_CUDA=$FAKE LLMP_CUDA_LIBRARY=$FAKE LD_LIBRARY_PATH= dev_ckpt load 11 into=device layout=cols
	ok_or_fail "load with LLMP_CUDA_LIBRARY"
}

@test "device ckpt: with no current CUDA context, the device's primary one is retained, and released at close" {
	local log=$BATS_TEST_TMPDIR/cuda.log
	FAKE_CUDA_LOG=$log dev_ckpt save 15 async nocontext
	ok_or_fail "save without a current context"
	# dev_ckpt retains it once itself (and keeps it); libllmp once, released at close.
	grep -q ' retains 2 releases 1$' "$log" || fail "primary context: $(cat "$log")"
	dev_ckpt load 15 into=device layout=window nocontext
	ok_or_fail "load without a current context"
}

@test "device ckpt: async save holds the values of the call, though the program overwrites its tensors at once; pinned memory allocated once" {
	local log=$BATS_TEST_TMPDIR/cuda.log
	FAKE_CUDA_LOG=$log dev_ckpt save 20 async overwrite count=3 prepare
	ok_or_fail "async save"
	grep -qx "rank 0: prepared pinned $DEVICE_BYTES" <<<"$output" || fail "prepare: $output"
	[ "$(grep -c "^rank 0: saved step 2[012] device_bytes $DEVICE_BYTES staged $((DEVICE_BYTES + HOST_BYTES)) pinned $DEVICE_BYTES copy_ok 1$" <<<"$output")" -eq 3 ] ||
		fail "stats: $output"
	# llmp_ckpt_prepare_async and three saves, one pinned buffer (dev_ckpt itself allocates none).
	grep -q ' host_allocs 1 dtoh ' "$log" || fail "pinned allocations: $(cat "$log")"
	# keep=2: steps 21 and 22 remain.
	for step in 21 22; do
		dev_ckpt load $step into=host layout=rows
		ok_or_fail "load $step"
	done
	load_everywhere 22
}

@test "device ckpt: over staging_max, each device slice streams through two pinned chunks, synchronous and async" {
	local log=$BATS_TEST_TMPDIR/cuda.log
	FAKE_CUDA_LOG=$log dev_ckpt save 30 staging=600
	ok_or_fail "chunked save"
	grep -qx "rank 0: saved step 30 device_bytes $DEVICE_BYTES staged 0 pinned 600 copy_ok 1" <<<"$output" ||
		fail "stats: $output"
	# Halves of 300 bytes: w 13 chunks, b 3, e 4.
	grep -q ' dtoh 20 ' "$log" || fail "chunks: $(cat "$log")"
	load_everywhere 30
	dev_ckpt save 31 staging=600 async overwrite
	ok_or_fail "chunked async save"
	grep -qx "rank 0: saved step 31 device_bytes $DEVICE_BYTES staged 0 pinned 600 copy_ok 1" <<<"$output" ||
		fail "stats: $output"
	load_everywhere 31
	# One chunk of the whole: halves of one byte.
	dev_ckpt save 32 staging=2
	ok_or_fail "one-byte chunks"
	dev_ckpt load 32 into=device layout=cols
	ok_or_fail "load 32"
}

@test "device ckpt: a node's shared file takes streamed device slices too" {
	dev_ckpt save 33 staging=600 files=node
	ok_or_fail "chunked save to a node file"
	load_everywhere 33
}

@test "device ckpt: a failing copy fails the save, naming the tensor and the call; the previous checkpoint still loads" {
	dev_ckpt save 40
	ok_or_fail "save 40"
	# Device slices are copied in name order: b, e, w. The second copy is e's.
	FAKE_CUDA_FAIL=cuMemcpyDtoHAsync:2 dev_ckpt fail 41 async
	ok_or_fail "save 41 must fail"
	grep -q '^rank 0: save failed: .*tensor e: cuMemcpyDtoHAsync: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered' <<<"$output" ||
		fail "message: $output"
	[ ! -e "$ROOT/step-41" ] || fail "a failed save left step-41"
	# Streamed: b's 3 chunks, then e's second.
	FAKE_CUDA_FAIL=cuMemcpyDtoHAsync:5 dev_ckpt fail 42 staging=600
	ok_or_fail "save 42 must fail"
	grep -q '^rank 0: save failed: .*tensor e: cuMemcpyDtoHAsync: CUDA_ERROR_ILLEGAL_ADDRESS' <<<"$output" ||
		fail "message: $output"
	# A copy that fails while the writer waits for it.
	FAKE_CUDA_FAIL=cuEventSynchronize:2 dev_ckpt fail 43 staging=600
	ok_or_fail "save 43 must fail"
	grep -q '^rank 0: save failed: .*tensor b: cuEventSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS' <<<"$output" ||
		fail "message: $output"
	[ ! -e "$ROOT/step-42" ] && [ ! -e "$ROOT/step-43" ] || fail "a failed save was committed"
	[ "$(cat "$ROOT/latest")" = step-40 ] || fail "latest is $(cat "$ROOT/latest")"
	load_everywhere 40
}

@test "device ckpt: a load's copy to the device fails naming the tensor; a corrupted slice never reaches the device" {
	dev_ckpt save 50
	ok_or_fail "save 50"
	FAKE_CUDA_FAIL=cuMemcpy2DAsync:1 dev_ckpt load 50 into=device layout=window
	[ "$status" -eq 1 ] && grep -q 'tensor b: cuMemcpy2DAsync: CUDA_ERROR_ILLEGAL_ADDRESS' <<<"$output" ||
		fail "load with a failing copy: $output"
	# One byte of w's data flipped in the shard: the load fails on its CRC, and of
	# the 2D copies (b: one per index of its first dimension, 7; w: 1) w's never ran.
	python3 - "$ROOT/step-50" <<'PY' || fail "cannot damage the shard"
import sys
# "slice NAME DTYPE NDIM GLOBAL... OFFSET... SHAPE... RANK AT CRC" (doc/checkpoint.md)
at = [int(l.split()[-2]) for l in open(sys.argv[1] + "/MANIFEST") if l.startswith("slice w ")][0]
with open(sys.argv[1] + "/shard-0.h5", "r+b") as f:
    f.seek(at + 100)
    byte = f.read(1)
    f.seek(at + 100)
    f.write(bytes([byte[0] ^ 0x10]))
PY
	FAKE_CUDA_LOG=$BATS_TEST_TMPDIR/load.log dev_ckpt load 50 into=device layout=rows
	[ "$status" -eq 1 ] && grep -q 'tensor w in .*shard-0.h5 fails its checksum' <<<"$output" ||
		fail "load of a damaged slice: $output"
	grep -q ' copy2d 7 ' "$BATS_TEST_TMPDIR/load.log" || fail "copies: $(cat "$BATS_TEST_TMPDIR/load.log")"
}

@test "device ckpt: without a usable CUDA driver a device tensor is refused, naming it and the cause" {
	LLMP_CUDA_LIBRARY=$BATS_TEST_TMPDIR/no-such-libcuda.so.1 dev_ckpt save 60
	[ "$status" -eq 1 ] || fail "$output"
	grep -q "tensor w is device memory, but the CUDA driver cannot be used: cannot load the CUDA driver ($BATS_TEST_TMPDIR/no-such-libcuda.so.1)" <<<"$output" ||
		fail "message: $output"
	# A driver on a machine without a GPU: cuInit says so (the program's own cuInit is the first call).
	FAKE_CUDA_FAIL=cuInit:2 dev_ckpt save 61
	[ "$status" -eq 1 ] && grep -q 'tensor w is device memory, but the CUDA driver cannot be used: .*cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected' <<<"$output" ||
		fail "message: $output"
	# The toolkit's stub libcuda (what a build machine has): every call fails, even the error strings.
	if [ -f "$STUB" ]; then
		LLMP_CUDA_LIBRARY=$STUB dev_ckpt save 62
		[ "$status" -eq 1 ] && grep -q "tensor w is device memory, but the CUDA driver cannot be used: $STUB: cuInit: CUDA error 34" <<<"$output" ||
			fail "message: $output"
	fi
	[ ! -e "$ROOT/step-60" ] && [ ! -e "$ROOT/step-61" ] || fail "a refused save wrote a checkpoint"
}

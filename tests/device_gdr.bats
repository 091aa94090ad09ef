#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The check after NCCL's init (doc/gpudirect.md), without a GPU: `llmp bench
# --memory device` as a singleton with NCCL's test double (tests/device/
# fake_nccl.c, which prints NCCL 2.28's "GPU Direct RDMA Enabled|Disabled for
# HCA" lines and dumps a topology as NCCL does) and the CUDA driver's
# (fake_cuda.c, as libcuda.so.1). The lines the double wrote are then set
# against the prediction for a fixture node with `llmp topo --gdr --nccl-log`,
# the double configured to agree and to disagree; every expected verdict is
# worked out by hand from NCCL's rules (doc/gpudirect.md).

load lib/helpers

FAKE_NCCL="$LLMP_BUILDDIR/tests/device/.libs/fake_nccl.so"
FAKE_CUDA="$LLMP_BUILDDIR/tests/device/.libs/fake_cuda.so"
SWITCH="$LLMP_SRCDIR/tests/topology/nccl-switch.json"

setup() {
	llmp_setup
	need_python
	[ -f "$FAKE_NCCL" ] || fail "fake_nccl.so not built ($FAKE_NCCL)"
	W=$BATS_TEST_TMPDIR
	mkdir -p "$W/driver"
	ln -sf "$FAKE_CUDA" "$W/driver/libcuda.so.1"
	export LD_LIBRARY_PATH="$W/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TMPDIR=$W
	export LLMP_DEVICE=nccl LLMP_NCCL_LIBRARY=$FAKE_NCCL LLMP_IBVERBS_LIBRARY=/nonexistent
	unset NCCL_DEBUG NCCL_DEBUG_FILE NCCL_DEBUG_SUBSYS NCCL_TOPO_DUMP_FILE NCCL_NET_GDR_LEVEL LLMP_TOPOLOGY_FILE
	export LSAN_OPTIONS="suppressions=$LLMP_SRCDIR/tests/lsan.supp"
}

bench() {
	run env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID timeout -k 5 120 \
		"$LLMP" bench --memory device -b 8 -e 8 -n 1 -w 0 -C 0
	[ "$status" -eq 0 ] || fail "$output"
}

@test "bench: NCCL's HCA lines read back after init; an HCA this node's sysfs lacks is named; its own log removed" {
	# This machine's sysfs has no GPU and no HCA: llmp predicts no pair, so every HCA NCCL
	# opened is one llmp did not find (a VM hiding its PCIe tree looks like this).
	FAKE_NCCL_HCAS=mlx5_0=1,mlx5_1=0 bench
	assert_contains "$output" "0 GPU/HCA pairs compared, 2 differ:" \
		"# gdr NCCL: Enabled for mlx5_0 (HCA 0), not an HCA of this node as llmp discovered it (mismatch)" \
		"# gdr NCCL: Disabled for mlx5_1 (HCA 1), not an HCA of this node as llmp discovered it (mismatch)"
	# The NCCL lines went to the bench's own file (NCCL_DEBUG_FILE in $TMPDIR), not stdout; removed.
	assert_not_contains "$output" "NCCL INFO"
	[ -z "$(find "$W" -name 'llmp-bench-nccl.*')" ] || fail "the bench's NCCL log was left behind"
	# NCCL finds no HCA on a node where llmp finds none: nothing to disagree on.
	FAKE_NCCL_HCAS= bench
	assert_contains "$output" "0 GPU/HCA pairs compared, 0 differ"
	assert_not_contains "$output" "mismatch"
}

@test "bench: the user's own NCCL_DEBUG is kept: WARN leaves the check undone, an INFO file is read and kept" {
	NCCL_DEBUG=WARN FAKE_NCCL_HCAS=mlx5_0=1 bench
	assert_contains "$output" "# gdr: not checked: the user's NCCL_DEBUG=WARN and no NCCL_DEBUG_FILE"
	# INFO in a file of the user's, NET among the subsystems: read, and left where it is.
	NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_DEBUG_FILE="$W/nccl.%h.%p" FAKE_NCCL_HCAS=mlx5_0=1 bench
	local host log
	host=$(hostname)
	log=$(ls "$W"/nccl."${host%%.*}".*) || fail "no NCCL log named by %h.%p in $W"
	assert_contains "$output" "NCCL's log $log: 0 GPU/HCA pairs compared, 1 differ:"
	grep -q "NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'$" "$log" || fail "$(cat "$log")"
	# NCCL's default subsystems print no NET line: the double, like NCCL, writes none.
	rm -f "$log"
	NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$W/nccl.%p" FAKE_NCCL_HCAS=mlx5_0=1 bench
	! grep -q "GPU Direct RDMA" "$W"/nccl.* || fail "a NET line without NET in NCCL_DEBUG_SUBSYS"
}

@test "the double's log and dump against a fixture node's prediction: agreeing, then disagreeing, named per pair" {
	# nccl-switch with nvidia_peermem and NCCL 2.28.9: every HCA can register GPU memory,
	# so NCCL must say Enabled; GPU 18's nearest HCA is mlx5_0 (PIX), GPU 9d's mlx5_2.
	python3 "$LLMP_SRCDIR/tests/topology/fake_sysfs.py" "$SWITCH" nccl-switch "$W/node"
	python3 "$LLMP_SRCDIR/tests/topology/fake_gdr.py" "$W/node" peermem kernel=6.8.0 driver=open uverbs
	NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET NCCL_DEBUG_FILE="$W/agree.log" \
		NCCL_TOPO_DUMP_FILE="$W/dump.xml" FAKE_NCCL_TOPO_DUMP="$LLMP_SRCDIR/tests/topology/nccl-dump-switch.xml" \
		FAKE_NCCL_HCAS=mlx5_0=1,mlx5_1=1,mlx5_2=1 bench
	cmp "$W/dump.xml" "$LLMP_SRCDIR/tests/topology/nccl-dump-switch.xml" || fail "the double's dump"
	run "$LLMP" topo --gdr --sysfs "$W/node" --nccl-log "$W/agree.log" --nccl-dump "$W/dump.xml"
	[ "$status" -eq 0 ] || fail "$output"
	assert_contains "$output" "NCCL's log $W/agree.log: 2 GPU/HCA pairs compared, 0 differ" \
		"NCCL's dump $W/dump.xml: 10 compared, 0 differ"
	assert_line_matches '^gdr GPU 0000:18:00\.0 / mlx5_0: predicted .*, NCCL: Enabled for mlx5_0 \(HCA 0\) \(agree\)$'
	# NCCL disabled mlx5_2: GPU 9d's pair is named, GPU 18's still agrees.
	NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET NCCL_DEBUG_FILE="$W/differ.log" \
		FAKE_NCCL_HCAS=mlx5_0=1,mlx5_1=1,mlx5_2=0 bench
	run "$LLMP" topo --gdr --sysfs "$W/node" --nccl-log "$W/differ.log"
	[ "$status" -eq 1 ] || fail "$output"
	assert_contains "$output" "2 GPU/HCA pairs compared, 1 differ:"
	assert_line_matches '^gdr GPU 0000:9d:00\.0 / mlx5_2: predicted .*, NCCL: Disabled for mlx5_2 \(HCA 2\) \(mismatch: llmp found a peer-memory module or dma-buf NCCL did not use\)$'
	assert_line_matches '^gdr GPU 0000:18:00\.0 / mlx5_0: .*\(agree\)$'
}

@test "metrics: each node's first rank records the GPUDirect RDMA prediction and, from the user's INFO log, NCCL's word on it" {
	# tests/device/dev_check --job: llmp_job_open and one final metrics line (LLMP_METRICS); the
	# NCCL double prints its HCA lines into the user's log at the world communicator's init.
	local dev_check="$LLMP_BUILDDIR/tests/device/dev_check" host
	[ -x "$dev_check" ] || fail "dev_check not built"
	host=$(hostname)
	mkdir -p "$W/ck"
	run env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID LLMP_CUDA_LIBRARY="$FAKE_CUDA" \
		LLMP_CHECKPOINT="$W/ck" LLMP_METRICS="$W/m,every=0" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
		NCCL_DEBUG_FILE="$W/nccl.%h.%p" FAKE_NCCL_HCAS=mlx5_0=1,mlx5_1=0 timeout -k 5 120 "$dev_check" --connect --cuda --job
	[ "$status" -eq 0 ] || fail "$output"
	# This machine has no GPU and no HCA (as above): nothing predicted, both HCAs NCCL named are llmp's misses.
	python3 - "$W/m/rank-00000.jsonl" "$host" <<'PY' || fail "$(cat "$W/m/rank-00000.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
g = lines[-1]["gdr"]
assert g["predicted"] == sys.argv[2].split(".")[0] + ": no GPU with a usable HCA" or g["predicted"] == sys.argv[2] + ": no GPU with a usable HCA", g
assert g["nccl"] == "0 GPU/HCA pairs compared, 2 differ: gdr NCCL: Enabled for mlx5_0 (HCA 0), not an HCA of this node as llmp discovered it (mismatch)", g
PY
	# Without the user's INFO log there is nothing of NCCL's to read: said so.
	run env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID LLMP_CUDA_LIBRARY="$FAKE_CUDA" \
		LLMP_CHECKPOINT="$W/ck" LLMP_METRICS="$W/m2,every=0" FAKE_NCCL_HCAS=mlx5_0=1 timeout -k 5 120 "$dev_check" --connect --cuda --job
	[ "$status" -eq 0 ] || fail "$output"
	python3 -c '
import json, sys
g = [json.loads(l) for l in open(sys.argv[1])][-1]["gdr"]
assert g["nccl"].startswith("not checked: NCCL logs its GPUDirect RDMA lines with NCCL_DEBUG=INFO"), g
' "$W/m2/rank-00000.jsonl" || fail "$(cat "$W/m2/rank-00000.jsonl")"
	# llmp top reads such a file (the new field is no obstacle).
	run "$LLMP" top "$W/m"
	[ "$status" -eq 0 ] || fail "$output"
}

#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# python_cluster.bats - the Python package's llmp.checkpoint on the local Slurm
# cluster: a torch state dict saved by 4 ranks under --llm-parallel=tp=2,dp=2
# (srun --mpi=pmix, libllmp through ctypes) and loaded bit for bit under dp=4
# and under a world of 2 cut otherwise, then read with h5py alone
# (tests/cluster/torch_ckpt.py computes every expected tensor itself); the
# same through torch.distributed.checkpoint's dcp.save/dcp.load with llmp's
# DcpWriter/DcpReader on DTensors of a 2x2 DeviceMesh (tests/cluster/torch_dcp.py).
#
# The Python is $LLMP_PYTHON, else $LLMP_BUILDDIR/venv/bin/python
# (scripts/python-env.sh); libllmp the build's.

load cluster/common

setup_file() { cluster_setup_file; }
teardown_file() { cluster_teardown_file; }
setup() {
	cluster_setup
	PY=${LLMP_PYTHON:-$LLMP_BUILDDIR/venv/bin/python}
	[ -x "$PY" ] || skip "no Python environment with torch at $PY: run scripts/python-env.sh (or set LLMP_PYTHON)"
	LIB=$LLMP_BUILDDIR/runtime/.libs/libllmp.so.0
	[ -f "$LIB" ] || skip "libllmp not built ($LIB)"
	export PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$LLMP_SRCDIR/python LLMP_LIBRARY=$LIB
	SCRIPT=$LLMP_SRCDIR/tests/cluster/torch_ckpt.py
	# One checkpoint for the file's tests, saved by the first.
	CKPT=$CLUSTER_STATE/torch-ckpt
}
teardown() { cluster_teardown; }

# N "ckpt R ok" lines, one for each rank 0..N-1, or the output shown and a failure.
assert_ranks_ok() { # N
	local r
	for r in $(seq 0 $(($1 - 1))); do
		grep -q "^ckpt $r ok" <<<"$output" || { echo "rank $r: $output"; return 1; }
	done
	[ "$(grep -c '^ckpt [0-9]* ok' <<<"$output")" -eq "$1" ] || { echo "$output"; return 1; }
}

@test "llmp.checkpoint: 4 ranks under tp=2,dp=2 save a torch state dict (tp shards, replicas once)" {
	rm -rf "$CKPT"
	run timeout -k 10 300 srun --mpi=pmix -N2 --ntasks-per-node=2 --llm-parallel=tp=2,dp=2 \
		"$PY" "$SCRIPT" save "$CKPT"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	assert_ranks_ok 4
	[ -d "$CKPT/step-12" ] || { ls -la "$CKPT"; false; }
	# The replicas are written once, by rank 0: only tp ranks 0 and 1 (world ranks 0 and 1) own slices.
	[ "$(cd "$CKPT/step-12" && echo shard-*.h5)" = "shard-0.h5 shard-1.h5" ] || { ls "$CKPT/step-12"; false; }
	run "$LLMP" ckpt verify "$CKPT"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "llmp.checkpoint: loaded under dp=4, every rank every tensor whole, bit-identical" {
	[ -d "$CKPT/step-12" ] || { echo "no checkpoint: the save test failed"; false; }
	run timeout -k 10 300 srun --mpi=pmix -N2 --ntasks-per-node=2 --llm-parallel=dp=4 \
		"$PY" "$SCRIPT" load-whole "$CKPT"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	assert_ranks_ok 4
}

@test "llmp.checkpoint: loaded by a world of 2 sliced along other dimensions, bit-identical" {
	[ -d "$CKPT/step-12" ] || { echo "no checkpoint: the save test failed"; false; }
	run timeout -k 10 300 srun --mpi=pmix -N2 --ntasks-per-node=1 --llm-parallel=tp=2 \
		"$PY" "$SCRIPT" load-split "$CKPT"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	assert_ranks_ok 2
}

@test "llmp.checkpoint: h5py reads the saved index whole, bfloat16 as float32, no llmp code" {
	[ -d "$CKPT/step-12" ] || { echo "no checkpoint: the save test failed"; false; }
	"$PY" -c "import h5py" || { echo "h5py not in $PY (python/requirements-test.txt)"; false; }
	run "$PY" "$SCRIPT" h5py "$CKPT"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "h5py ok" ]
}

@test "dcp.save through llmp.checkpoint.DcpWriter on a 2x2 mesh, dcp.load under dp=4 and by a world of 2, bit-identical; verify, h5py" {
	local dcp=$LLMP_SRCDIR/tests/cluster/torch_dcp.py root=$CLUSTER_STATE/torch-dcp r
	rm -rf "$root"
	run timeout -k 10 300 srun --mpi=pmix -N2 --ntasks-per-node=2 --llm-parallel=tp=2,dp=2 "$PY" "$dcp" save "$root" 5
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^dcp [0-3] ok saved step 5$' <<<"$output")" -eq 4 ] || { echo "$output"; false; }
	run "$LLMP" ckpt verify "$root"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run timeout -k 10 300 srun --mpi=pmix -N2 --ntasks-per-node=2 --llm-parallel=dp=4 "$PY" "$dcp" load-dp4 "$root"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	for r in 0 1 2 3; do
		grep -qx "dcp $r ok loaded step 5 of world 4" <<<"$output" || { echo "rank $r: $output"; false; }
	done
	run timeout -k 10 300 srun --mpi=pmix -N2 --ntasks-per-node=1 --llm-parallel=tp=2 "$PY" "$dcp" load-world2 "$root"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(grep -c '^dcp [01] ok loaded step 5 of world 2$' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	run "$PY" "$dcp" h5py "$root" 5
	[ "$status" -eq 0 ] && [ "$output" = "h5py ok" ] || { echo "$output"; false; }
}

@test "the PyTorch example: tp=2 x dp=2, stopped by a signal and requeued, ends bit-identical to a run that went through" {
	local train=$LLMP_SRCDIR/examples/torch/train_gpt.py
	local args=(--mpi=pmix -N2 --ntasks-per-node=2 --llm-parallel=tp=2)
	run timeout -k 10 300 srun "${args[@]}" --llm-checkpoint="$WORK/ref" "$PY" "$train" --steps 12
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local want
	want=$(grep '^train_gpt: rank [0-3] weights ' <<<"$output" | sort)
	[ "$(wc -l <<<"$want")" -eq 4 ] || { echo "$output"; false; }
	grep -q '^step 11 loss ' <<<"$output"
	# Rank 0 is sent SIGUSR1 after step 5: every rank stops there, checkpoints, exits 75.
	run timeout -k 10 300 srun "${args[@]}" --llm-checkpoint="$WORK/run" "$PY" "$train" --steps 12 --signal-at 5
	[ "$status" -eq 75 ] || { echo "status $status: $output"; false; }
	grep -q '^train_gpt: stopped after step 5, checkpoint committed$' <<<"$output" || { echo "$output"; false; }
	! grep -q '^step 6 ' <<<"$output"
	# The requeued run resumes at step 6 and ends where the uninterrupted one did, bit for bit.
	run timeout -k 10 300 srun "${args[@]}" --llm-checkpoint="$WORK/run" "$PY" "$train" --steps 12
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q '^train_gpt: tp=2 dp=2, starting at step 6$' <<<"$output" || { echo "$output"; false; }
	[ "$(grep '^train_gpt: rank [0-3] weights ' <<<"$output" | sort)" = "$want" ] || { echo "want $want: $output"; false; }
}

@test "Lightning and Accelerate under srun --llm-parallel, no launcher: the ranks, nodes and master the plugin gave" {
	# tp=2 on 2 nodes x 2 tasks, block order: task t is rank t, on node t/2, local t%2.
	run timeout -k 10 300 srun -N2 --ntasks-per-node=2 --llm-parallel=tp=2 "$PY" "$LLMP_SRCDIR/tests/cluster/stacks_env.py"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local r
	for r in 0 1 2 3; do
		grep -qx "stacks $r lightning=SLURMEnvironment global=$r local=$((r % 2)) node=$((r / 2)) world=4 addr=node1 accelerate=$r/4 local=$((r % 2))" \
			<<<"$output" || { echo "rank $r: $output"; false; }
	done
}

@test "DeepSpeed under srun --llm-parallel, no launcher: init_distributed, its checkpoint writer's machines, one data-parallel step" {
	# DeepSpeed on CPU compiles its shared-memory allreduce op on first use (a minute here):
	# kept in the build tree for the next run.
	export TORCH_EXTENSIONS_DIR=$LLMP_BUILDDIR/torch-extensions DS_ACCELERATOR=cpu
	run timeout -k 10 600 srun -N2 --ntasks-per-node=2 --llm-parallel=tp=2 "$PY" "$LLMP_SRCDIR/tests/cluster/deepspeed_env.py"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local r
	for r in 0 1 2 3; do
		grep -qx "deepspeed $r world=4 local=$((r % 2)) machines=2 machine=$((r / 2)) dp=4 step=ok" <<<"$output" ||
			{ echo "rank $r: $output"; false; }
	done
}

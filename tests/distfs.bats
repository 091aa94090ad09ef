#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Checkpoints and fault tolerance on a real distributed filesystem: the local
# cluster started with LLMP_TEST_DISTFS=gluster (tests/cluster/cluster.sh) has a
# GlusterFS volume with a brick on each node, mounted at $LLMP_CLUSTER_DFS by a
# FUSE client of each node's own. Saves run on some nodes and loads on others,
# so every file is read back through another client than the one that wrote it.
#
# Part of `make check`: the file starts its own cluster with the volume
# (LLMP_TEST_DISTFS=gluster for tests/cluster/cluster.sh). As root without
# glusterfs-server and glusterfs-client every test skips, saying so, and
# scripts/test.sh counts that skip as a failure (scripts/install-deps.sh
# installs them); without root it skips as every cluster test does.

load cluster/common
load cluster/mlp_job
load runtime/common
load ckpt/common

# Why the volume cannot run here, or nothing (the cluster's own reasons first).
distfs_unavailable() {
	local why
	why=$(cluster_unavailable)
	if [ -n "$why" ]; then
		echo "$why"
	elif ! command -v glusterd >/dev/null || ! command -v glusterfs >/dev/null; then
		echo "GlusterFS not installed (glusterfs-server, glusterfs-client)"
	fi
}

setup_file() {
	DISTFS_SKIP=$(distfs_unavailable)
	export DISTFS_SKIP
	[ -z "$DISTFS_SKIP" ] || return 0
	export LLMP_TEST_DISTFS=gluster
	cluster_setup_file
}

teardown_file() {
	[ -n "$DISTFS_SKIP" ] || cluster_teardown_file
}

setup() {
	[ -z "$DISTFS_SKIP" ] || skip "$DISTFS_SKIP"
	cluster_setup
	[ -x "$CK_CHECK" ] || skip "ck_check not built ($CK_CHECK)"
	[ -n "${LLMP_CLUSTER_DFS:-}" ] || {
		echo "the cluster has no distributed filesystem (LLMP_CLUSTER_DFS unset)" >&2
		return 1
	}
	# This test's directory on the volume.
	DFS_WORK="$LLMP_CLUSTER_DFS/$(basename "$WORK")"
	mkdir -p "$DFS_WORK"
	ROOT="$DFS_WORK/ckpt"
}

teardown() {
	[ -z "${DISTFS_SKIP:-}" ] || return 0
	local node
	# Whatever a test did to the nodes, the next one starts with all three up.
	for node in node1 node2 node3; do
		if ! ip netns pids "llmp-$node" 2>/dev/null | xargs -r -n1 -I{} cat /proc/{}/comm 2>/dev/null |
			grep -qx slurmd; then
			"$CLUSTER" start-node "$CLUSTER_STATE" "$node" >/dev/null 2>&1 || true
		fi
	done
	scontrol update NodeName=node[1-3] State=RESUME >/dev/null 2>&1 || true
	cancel_leftover_jobs
	assert_cluster_idle || true
	assert_no_timeout
}

# End a background srun of this test (its pid): 10 s to return on its own, then
# SIGTERM, 10 s more, then SIGKILL; which one ended it is said on fd 3.
end_srun() { # pid
	local how="returned on its own" t
	for t in TERM KILL; do
		for _ in $(seq 1 20); do
			kill -0 "$1" 2>/dev/null || break 2
			sleep 0.5
		done
		how="ended by SIG$t"
		kill -s "$t" "$1" 2>/dev/null || true
	done
	wait "$1" || true
	echo "# srun of the killed node's step: $how" >&3
}

# The brick directories holding a file of this name under the test's directory.
bricks_holding() { # NAME-REGEX
	local b
	for b in "$CLUSTER_STATE"/gluster/bricks/*; do
		if find "$b/$(basename "$DFS_WORK")" -regex "$1" 2>/dev/null | grep -q .; then
			basename "$b"
		fi
	done
}

@test "volume: each node mounts it with a client of its own; a file written on node1 is read on node3" {
	run srun -N3 -n3 sh -c 'echo "$SLURMD_NODENAME $(readlink /proc/self/ns/mnt) $(findmnt -n -o FSTYPE "$LLMP_CLUSTER_DFS")"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c ' fuse.glusterfs$' <<<"$output")" -eq 3 ]
	# three mount namespaces, none the root namespace's
	[ "$(awk '{print $2}' <<<"$output" | sort -u | wc -l)" -eq 3 ]
	refute grep -q "$(readlink /proc/self/ns/mnt)" <<<"$output"
	[ "$(findmnt -n -o FSTYPE "$LLMP_CLUSTER_DFS")" = fuse.glusterfs ]

	run srun -N1 -w node1 sh -c "echo written on \$SLURMD_NODENAME >'$DFS_WORK/x' && sync"
	[ "$status" -eq 0 ]
	run srun -N1 -w node3 cat "$DFS_WORK/x"
	[ "$output" = "written on node1" ]
	[ "$(cat "$DFS_WORK/x")" = "written on node1" ]
	[ "$(bricks_holding '.*/x' | wc -l)" -eq 1 ]
}

@test "save on node1+node2 (tp=2, keep=2), load on node3 and on all three resharded; list, verify" {
	run capped_srun 180 -w node[1-2] -N2 -n4 --llm-parallel=tp=2 "$CK_CHECK" save --root "$ROOT" \
		--steps 100,200,300 --keep 2
	assert_ranks_ok 4 3
	[ "$(complete_steps | tr '\n' ' ')" = "300 200 " ]
	[ "$(cat "$ROOT/latest")" = step-300 ]
	[ -z "$(find "$ROOT" -name '*.tmp' -o -name '*.deleting')" ]
	[ "$(find "$ROOT" -mindepth 1 -maxdepth 1 | wc -l)" -eq 3 ]
	# the shards are spread over the bricks of more than one node
	echo "bricks with shards: $(bricks_holding '.*/shard-[0-9]+\.h5' | tr '\n' ' ')"
	[ "$(bricks_holding '.*/shard-[0-9]+\.h5' | wc -l)" -ge 2 ]

	# node3 never wrote anything: its client reads it all
	run capped_srun 120 -w node3 -N1 -n1 "$CK_CHECK" load --root "$ROOT" --expect-step 300
	assert_ranks_ok 1 8
	run capped_srun 120 -w node3 -N1 -n2 --llm-parallel=tp=2 "$CK_CHECK" load --root "$ROOT" \
		--step 200 --expect-step 200
	assert_ranks_ok 2 8
	run capped_srun 120 -N3 -n3 --llm-parallel=tp=3 "$CK_CHECK" load --root "$ROOT" --expect-step 300
	assert_ranks_ok 3 8
	# step 100 went with keep=2, for every client
	run capped_srun 120 -w node3 -N1 -n1 "$CK_CHECK" load --root "$ROOT" --step 100 \
		--expect-fail LLMP_ERR_IO --expect-msg step-100
	assert_ranks_ok 1 3

	# more saves from node3: retention sees the others' steps
	run capped_srun 120 -w node3 -N1 -n2 --llm-parallel=tp=2 "$CK_CHECK" save --root "$ROOT" \
		--steps 400,500 --keep 2
	assert_ranks_ok 2 3
	[ "$(complete_steps | tr '\n' ' ')" = "500 400 " ]

	run "$LLMP" ckpt list "$ROOT"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -Eq '^ +500  latest ' <<<"$output"
	grep -Eq '^ +400  complete ' <<<"$output"
	run "$LLMP" ckpt verify "$ROOT"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^step-500: OK: ' <<<"$output"
	grep -q '^step-400: OK: ' <<<"$output"
	# and from a node, through its own client
	run srun -w node2 -N1 "$LLMP" ckpt verify "$ROOT"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_cluster_idle
}

@test "kill-node: node2 dies while a checkpoint is written; the newest complete loads on node1+node3" {
	local srun_pid newest tmp t
	# srun itself in the background, not capped_srun: $! must be srun's own pid for the
	# end below (killing a function's subshell left timeout and srun running, holding
	# bats' output open until the cap).
	LLMP_TIMEOUT=15 srun --mpi=pmix -w node[1-2] -N2 -n4 --llm-parallel=tp=2 --kill-on-bad-exit=1 \
		--output="$WORK/save-%t.out" "$CK_CHECK" save --root "$ROOT" --big 64 --keep 2 \
		--steps "$(seq -s, 1 200)" &
	srun_pid=$!
	wait_save_under_way
	"$CLUSTER" kill-node "$CLUSTER_STATE" node2
	# Slurm lets the job go once node2 misses SlurmdTimeout (30 s here); node1's
	# ranks fail their collectives after LLMP_TIMEOUT (15 s) before that.
	for _ in $(seq 1 90); do
		[ -n "$(squeue -h -o %i)" ] || break
		sleep 1
	done
	[ -z "$(squeue -h -o %i)" ]
	# srun does not return when a node of its step dies with its slurmd (Slurm 22.05,
	# seen still waiting minutes after its job left the queue): given 10 s, then
	# SIGTERM, then SIGKILL. Which one ended it goes to fd 3.
	end_srun "$srun_pid"
	ls -la "$ROOT"
	refute grep -q '^rank [0-3]: saved step 200$' "$WORK"/save-*.out

	newest=$(complete_steps | head -n1)
	[ -n "$newest" ]
	echo "newest complete: step-$newest; latest: $(cat "$ROOT/latest")"
	[ "$(complete_steps | wc -l)" -le 3 ]
	tmp=$(find "$ROOT" -mindepth 1 -maxdepth 1 -name 'step-*.tmp' -printf '%f\n')
	[ "$(wc -w <<<"$tmp")" -le 1 ]
	if [ -n "$tmp" ]; then
		t=${tmp#step-}
		t=${t%.tmp}
		[ "$t" -gt "$newest" ]
	else
		t=$((newest + 1))
	fi

	# node2 is down; the others load the newest complete one, the .tmp ignored
	run capped_srun 120 -w node1,node3 -N2 -n3 --llm-parallel=tp=3 "$CK_CHECK" load --root "$ROOT" \
		--big 64 --expect-step "$newest"
	assert_ranks_ok 3 8
	refute grep -q 'llmp: .*trying step' <<<"$output"
	# a save of the step the kill interrupted clears the .tmp and commits
	run capped_srun 120 -w node1,node3 -N2 -n4 --llm-parallel=tp=2 "$CK_CHECK" save --root "$ROOT" \
		--big 64 --keep 2 --steps "$t"
	assert_ranks_ok 4 3
	[ -z "$(find "$ROOT" -name '*.tmp')" ]
	[ "$(cat "$ROOT/latest")" = "step-$t" ]

	# node2 back, with a fresh client: it reads what the others wrote since
	"$CLUSTER" start-node "$CLUSTER_STATE" node2
	scontrol update NodeName=node2 State=RESUME >/dev/null 2>&1 || true
	assert_cluster_idle
	run capped_srun 120 -w node2 -N1 -n2 --llm-parallel=tp=2 "$CK_CHECK" load --root "$ROOT" \
		--big 64 --expect-step "$t"
	assert_ranks_ok 2 8
}

# ------------------------------------------------------- fault tolerance

# The uninterrupted run, once per file, its checkpoints on the volume.
reference() {
	REF="$CLUSTER_STATE/reference.out"
	[ -s "$REF" ] && grep -q '^final checksum' "$REF" && return 0
	submit_mlp "$REF" -N2 --ntasks-per-node=2 --llm-parallel=tp=2 \
		--llm-checkpoint="$LLMP_CLUSTER_DFS/reference-ckpt,every=5" -- --steps 30 --sleep-ms 150
	wait_job_gone "$JOB"
	grep -q '^final checksum' "$REF" || {
		cat "$REF" >&2
		return 1
	}
}

ft_setup() {
	MLP_TRAIN="$LLMP_BUILDDIR/examples/mlp_train"
	[ -x "$MLP_TRAIN" ] || skip "examples/mlp_train not built"
	export MLP_TRAIN LLMP_BIN="$LLMP"
	COMPARE="$LLMP_SRCDIR/tests/ft/compare_traces.py"
}

@test "ft: scontrol requeue mid-way, checkpoints on the volume: resumes, bit-identical" {
	ft_setup
	reference
	local out="$WORK/job.out"
	submit_mlp "$out" -N2 --ntasks-per-node=2 --llm-parallel=tp=2 \
		--llm-checkpoint="$ROOT,every=5" -- --steps 30 --sleep-ms 150
	wait_line "$out" '^step 8 loss'
	scontrol requeue "$JOB"
	wait_job_gone "$JOB"
	run python3 "$COMPARE" "$REF" "$out" --no-redo
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(runs_of "$out")" -eq 2 ]
}

@test "ft: a node of a 2-node job dies; requeued onto the others, resumed from the volume, bit-identical" {
	ft_setup
	reference
	local out="$WORK/job.out" nodes victim again
	submit_mlp "$out" -N2 --ntasks-per-node=2 --llm-parallel=tp=2 \
		--llm-checkpoint="$ROOT,every=5" -- --steps 30 --sleep-ms 150
	wait_line "$out" '^step 12 loss'
	nodes=$(squeue -h -j "$JOB" -o %N)
	victim=$(scontrol show hostnames "$nodes" | tail -n1)
	"$CLUSTER" kill-node "$CLUSTER_STATE" "$victim"
	wait_line "$out" 'rank 0: run 1 \(' 150
	again=$(squeue -h -j "$JOB" -o %N)
	echo "first run on $nodes, second on $again, $victim killed"
	refute grep -qx "$victim" <<<"$(scontrol show hostnames "$again")"
	wait_job_gone "$JOB"
	run python3 "$COMPARE" "$REF" "$out"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -Eq 'rank 0: run 1 \(.*\): resuming at step [1-9][0-9]* from checkpoint step-' "$out"
}

@test "files=node on the volume: 3 nodes x 2 tasks write 3 files from 3 clients; loaded resharded on 2 nodes; verify" {
	run capped_srun 180 -N3 --ntasks-per-node=2 --llm-parallel=tp=2 "$CK_CHECK" save --root "$ROOT" \
		--steps 100,200 --files node
	assert_ranks_ok 6 3
	[ "$(complete_steps | tr '\n' ' ')" = "200 100 " ]
	# block placement: ranks 0-1, 2-3, 4-5 on node1-3; a node's file is named after its first rank
	[ "$(find "$ROOT/step-200" -name 'shard-*.h5' -printf '%f\n' | sort | tr '\n' ' ')" = \
		"shard-0.h5 shard-2.h5 shard-4.h5 " ]
	[ "$(head -n1 "$ROOT/step-200/MANIFEST")" = "llmp-checkpoint 3" ]
	run capped_srun 180 -w node[2-3] -N2 -n4 --llm-parallel=tp=4 "$CK_CHECK" load --root "$ROOT" \
		--expect-step 200
	assert_ranks_ok 4 8
	run capped_srun 180 -w node1 -N1 -n1 "$CK_CHECK" load --root "$ROOT" --step 100 --expect-step 100
	assert_ranks_ok 1 8
	run "$LLMP" ckpt verify "$ROOT"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^step-200: OK: 6 tensors, [0-9]* slices in 3 shards' <<<"$output"
}

# ------------------------------------------------------------- figures

@test "bench: llmp ckpt bench on the volume, 6 ranks on 3 nodes (figures only)" {
	run timeout -k 10 300 srun --mpi=pmix -N3 -n6 "$LLMP" ckpt bench --size 96M --iters 3 \
		--dir "$DFS_WORK"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "# $(grep -Ei 'save|restore' <<<"$output" | tr '\n' ' ')" >&3
}

@test "bench: llmp ckpt bench --files node on the volume, 6 ranks on 3 nodes (figures only)" {
	run timeout -k 10 300 srun --mpi=pmix -N3 -n6 "$LLMP" ckpt bench --size 96M --iters 3 \
		--dir "$DFS_WORK" --files node
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^# shard files: one per node$' <<<"$output"
	echo "# $(grep -Ei 'save|restore' <<<"$output" | tr '\n' ' ')" >&3
}

#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# libllmp on a real three-node Slurm cluster: tests/runtime/rt_check run as the
# tasks of `srun --mpi=pmix` steps (tests/runtime_singleton.bats runs it alone). Every rank
# computes the expected results itself and prints "rank R: N checks, M wrong";
# a test passes when every rank printed it with M = 0 and the step succeeded.

load cluster/common
load runtime/common

setup_file() { cluster_setup_file; }
teardown_file() { cluster_teardown_file; }

setup() {
	[ -x "$RT_CHECK" ] || skip "rt_check not built ($RT_CHECK)"
	cluster_setup
	need_mpi_pmix_where_used fault_step
}


# How many ranks made N communicators with a shared-memory segment (N a regex).
count_shm() { # N
	grep -cE "^rank [0-9]+: shared-memory communicators: $1\$" <<<"$output" || true
}

# How many ranks swept a group of this name and size.
count_swept() { # NAME SIZE
	grep -c "^rank [0-9]*: swept $1 (size $2," <<<"$output" || true
}

# ------------------------------------------------------------- collectives

@test "coll: 1 rank" {
	run capped_srun 120 -N1 -n1 "$RT_CHECK" coll
	assert_ranks_ok 1 1000
}

# On this one machine every group shares a kernel: collectives of 8 KiB and more
# go through a shared-memory segment (runtime/coll/shm.h), the rest through UCX.
@test "coll: 2 ranks on one node" {
	run capped_srun 180 -N1 -n2 "$RT_CHECK" coll
	assert_ranks_ok 2 1000
	[ "$(count_swept world 2)" -eq 2 ]
	# the world made one for the large count, and groups with the same members
	# one each for the calls of 8 KiB and more (allgather of 1021 x 2 float64)
	[ "$(count_shm '[1-9][0-9]*')" -eq 2 ]
}

@test "coll: 2 ranks on one node, shared memory off: UCX's ring for the large count" {
	LLMP_SHM_THRESHOLD=off run capped_srun 180 -N1 -n2 "$RT_CHECK" coll
	assert_ranks_ok 2 1000
	[ "$(count_shm 0)" -eq 2 ]
}

@test "coll: 4 ranks on 3 nodes, shared memory from 1 byte: every collective through it" {
	run capped_srun 300 -N3 -n4 "$RT_CHECK" coll --shm-threshold 1
	assert_ranks_ok 4 1000
	# every communicator of more than one member made one
	[ "$(count_shm '[1-9][0-9]*')" -eq 4 ]
}

@test "coll: 4 ranks on 2 nodes (3 + 1)" {
	run capped_srun 240 -N2 -n4 "$RT_CHECK" coll
	assert_ranks_ok 4 1000
	[ "$(count_swept world 4)" -eq 4 ]
}

@test "coll: 3 ranks on 3 nodes, one each" {
	run capped_srun 240 -N3 -n3 "$RT_CHECK" coll
	assert_ranks_ok 3 1000
}

@test "coll: 5 ranks on 3 nodes (uneven), ring below 64 bytes via LLMP_RING_THRESHOLD" {
	LLMP_SHM_THRESHOLD=off LLMP_RING_THRESHOLD=64 run capped_srun 300 -N3 -n5 "$RT_CHECK" coll
	assert_ranks_ok 5 1000
}

@test "coll: 8 ranks on 2 nodes, ring from 1 byte via llmp_init_opts" {
	LLMP_SHM_THRESHOLD=off run capped_srun 300 -N2 -n8 "$RT_CHECK" coll --ring-threshold 1
	assert_ranks_ok 8 1000
}

@test "coll: 8 ranks on 2 nodes, default thresholds" {
	run capped_srun 300 -N2 -n8 "$RT_CHECK" coll
	assert_ranks_ok 8 1000
}

@test "coll: --llm-parallel=tp=2,pp=2,cp=2 on 8 ranks over 2 nodes: every group of the 4D layout" {
	run capped_srun 400 -N2 -n8 --llm-parallel=tp=2,pp=2,cp=2 "$RT_CHECK" coll
	assert_ranks_ok 8 1000
	# the layout came from the plugin's environment: the groups have its sizes
	[ "$(count_swept world 8)" -eq 8 ]
	[ "$(count_swept tp 2)" -eq 8 ]
	[ "$(count_swept pp 2)" -eq 8 ]
	[ "$(count_swept cp 2)" -eq 8 ]
	[ "$(count_swept dp 1)" -eq 8 ]
	[ "$(count_swept tp-cp 4)" -eq 8 ]
	[ "$(count_swept tp-pp 4)" -eq 8 ]
	# with pp=2 every rank is a first or last stage: all are in an embedding group
	[ "$(count_swept embedding 2)" -eq 8 ]
}

@test "coll: a middle pipeline stage is in no embedding group (pp=3 on 3 nodes)" {
	run capped_srun 400 -N3 -n6 --llm-parallel=tp=2,pp=3 "$RT_CHECK" coll --quick
	assert_ranks_ok 6 1000
	[ "$(grep -c '^rank [0-9]*: not in a embedding group$' <<<"$output")" -eq 2 ]
	[ "$(count_swept embedding 2)" -eq 4 ]
}

@test "coll: UCX_TLS=tcp, so data crosses the namespaces' network" {
	LLMP_SHM_THRESHOLD=off UCX_TLS=tcp run capped_srun 300 -N3 -n3 --llm-parallel=tp=1 "$RT_CHECK" coll --quick
	assert_ranks_ok 3 1000
}

@test "coll: the layout given both by --parallel and by the plugin, agreeing" {
	run capped_srun 300 -N2 -n4 --llm-parallel=tp=2 "$RT_CHECK" coll --quick --parallel tp=2
	assert_ranks_ok 4 1000
	[ "$(count_swept tp 2)" -eq 4 ]
}

# ---------------------------------------------------------- point to point

@test "p2p: pipeline of 4 stages on 2 nodes (--llm-parallel=pp=4)" {
	run capped_srun 120 -N2 -n4 --llm-parallel=pp=4 "$RT_CHECK" p2p
	assert_ranks_ok 4 20
	[ "$(grep -c '^rank [0-9]*: p2p along pp (stage [0-3] of 4)' <<<"$output")" -eq 4 ]
}

@test "p2p: pp=3 with tp=2 on 3 nodes, and along the world over TCP" {
	run capped_srun 120 -N3 -n6 --llm-parallel=tp=2,pp=3 "$RT_CHECK" p2p
	assert_ranks_ok 6 20
	UCX_TLS=tcp run capped_srun 120 -N3 -n5 "$RT_CHECK" p2p --group world
	assert_ranks_ok 5 20
}

@test "p2p: a group of one cannot be tested, and says so" {
	run capped_srun 60 -N1 -n2 "$RT_CHECK" p2p
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -c 'p2p needs a layout where it has 2 or more' <<<"$output")" -eq 2 ]
}

# --------------------------------------------------------------- wire-up

@test "stats: one init fence at every world size; a group of one opens no endpoint" {
	run capped_srun 120 -N1 -n2 "$RT_CHECK" stats
	assert_ranks_ok 2 10
	run capped_srun 120 -N2 -n4 "$RT_CHECK" stats
	assert_ranks_ok 4 10
	run capped_srun 120 -N3 -n5 "$RT_CHECK" stats
	assert_ranks_ok 5 10
	# many more groups made: still one fence
	run capped_srun 120 -N3 -n12 --llm-parallel=pp=2,cp=2 "$RT_CHECK" stats
	assert_ranks_ok 12 10
	[ "$(grep -c 'stats after every group: init_fences=1 ' <<<"$output")" -eq 12 ]
}

@test "coll: --llm-placement=topology renumbers ranks across nodes: every group's results right" {
	# Ranks 0,1 on node2, 2,3 on node3, 4,5 on node1 (tests/cluster.bats
	# checks the numbers): the runtime must speak of these ranks, not PMIx's.
	write_renumber_topology "$WORK/tree.json"
	LLMP_TOPOLOGY_FILE=$WORK/tree.json run capped_srun 400 -N3 --ntasks-per-node=2 --llm-parallel=tp=2,pp=3 \
		--llm-placement=topology "$RT_CHECK" coll --quick
	assert_ranks_ok 6 1000
	[ "$(grep -c '^rank [0-9]*: not in a embedding group$' <<<"$output")" -eq 2 ]
}

@test "mismatch: a task whose placement differs fails init on every rank, naming it" {
	write_renumber_topology "$WORK/tree.json"
	cat >"$WORK/odd.sh" <<-EOF
		#!/bin/sh
		[ "\$SLURM_PROCID" = 1 ] && LLMP_PLACEMENT=topology:0000000000000000
		export LLMP_PLACEMENT
		exec "$RT_CHECK" coll --quick
	EOF
	chmod +x "$WORK/odd.sh"
	LLMP_TOPOLOGY_FILE=$WORK/tree.json run capped_srun 60 -N3 --ntasks-per-node=2 --llm-parallel=tp=2,pp=3 \
		--llm-placement=topology "$WORK/odd.sh"
	echo "$output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[ "$(grep -c '^rank ?: WRONG: llmp_init: .*ranks disagree on the layout' <<<"$output")" -eq 6 ]
	# Each names task 1 with its placement (task 1 beside the first task that differs from it).
	[ "$(grep -c "task 1 has '[^']* placement=topology:0000000000000000'" <<<"$output")" -eq 6 ]
}

@test "mismatch: one rank with another layout fails init on every rank, naming it" {
	cat >"$WORK/odd.sh" <<-EOF
		#!/bin/sh
		if [ "\$SLURM_PROCID" = 1 ]; then LLMP_TEST_SPEC=tp=2; else LLMP_TEST_SPEC=tp=1; fi
		export LLMP_TEST_SPEC
		exec "$RT_CHECK" mismatch --odd 1
	EOF
	chmod +x "$WORK/odd.sh"
	run capped_srun 60 -N2 -n4 "$WORK/odd.sh"
	assert_ranks_ok 4 2
	[ "$(grep -c 'llmp_init: .*mismatch\|llmp_init: .*disagree' <<<"$output")" -ge 1 ]
}

@test "mismatch: --parallel disagreeing with the plugin's layout fails init on every rank" {
	run capped_srun 60 -N1 -n4 --llm-parallel=tp=2 "$RT_CHECK" coll --quick --parallel tp=4
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$(grep -c '^rank ?: WRONG: llmp_init: ' <<<"$output")" -eq 4 ]
}

# -------------------------------------------------------------- failures

# Once a task died by a signal, srun stops relaying the other tasks' output
# ("Force Terminated"), even though they go on and finish: so each task
# writes its own file, through slurmstepd. Sets step_status and output.
fault_step() { # NAME srun-arguments...
	local name=$1
	shift
	run capped_srun 90 --output="$WORK/$name-%t.out" "$@"
	step_status=$status
	output=$(cat "$WORK"/"$name"-*.out)
	echo "$output"
}

# Survivor R's call failed with an error matching PATTERN (an ERE, after the
# iteration), and it found nothing wrong.
assert_survivor() { # R [PATTERN]
	grep -qE "^rank $1: error after [0-9.]+ s at iteration [0-9]+: ${2:-}" <<<"$output" ||
		{ echo "rank $1: no error matching '${2:-}'"; return 1; }
	grep -qE "^rank $1: [0-9]+ checks, 0 wrong\$" <<<"$output" ||
		{ echo "rank $1: no summary, or something wrong"; return 1; }
}

@test "kill: a rank killed mid-allreduce; survivors report it within the timeout" {
	fault_step kill -N3 -n4 --kill-on-bad-exit=0 "$RT_CHECK" kill --victim 3 --timeout 5
	# the victim died by SIGKILL, so the step fails; but it ended, not timed out
	[ "$step_status" -ne 0 ]
	[ "$step_status" -ne 124 ]
	grep -q '^rank 3: killing myself at iteration 20$' <<<"$output"
	for r in 0 1 2; do
		assert_survivor $r
	done
	[ "$(grep -c '^rank 3: [0-9]* checks' <<<"$output")" -eq 0 ]
	assert_cluster_idle
	assert_queue_empty
}

@test "kill: a rank killed mid-allreduce through shared memory (4 MB); survivors name it" {
	fault_step kill -N2 -n3 --kill-on-bad-exit=0 "$RT_CHECK" kill --victim 1 --timeout 5 --count 1000000
	[ "$step_status" -ne 0 ]
	[ "$step_status" -ne 124 ]
	grep -q '^rank 1: killing myself at iteration 20$' <<<"$output"
	for r in 0 2; do
		assert_survivor $r '.*rank 1'
	done
	assert_cluster_idle
}

@test "kill: rank 0 killed, timeout from LLMP_TIMEOUT" {
	LLMP_TIMEOUT=4 fault_step kill -N2 -n3 --kill-on-bad-exit=0 "$RT_CHECK" kill --victim 0
	[ "$step_status" -ne 0 ]
	[ "$step_status" -ne 124 ]
	for r in 1 2; do
		grep -qE "^rank $r: [0-9]+ checks, 0 wrong\$" <<<"$output"
	done
	assert_cluster_idle
}

@test "kill --hang: a rank alive but silent; the others time out on it, naming it" {
	# On one machine a dead peer is seen by its pid; a silent one only by the timeout.
	fault_step hang -N3 -n4 "$RT_CHECK" kill --victim 2 --hang --timeout 5
	[ "$step_status" -eq 0 ]
	for r in 0 1 3; do
		assert_survivor $r
	done
	# at least the ranks waiting on it directly saw the timeout
	grep -q '^rank [013]: error after .*: LLMP_ERR_TIMEOUT ' <<<"$output"
	assert_cluster_idle
}

@test "kill --hang through shared memory: the others time out on the silent rank, naming it" {
	fault_step hang -N2 -n3 "$RT_CHECK" kill --victim 2 --hang --timeout 4 --count 1000000
	[ "$step_status" -eq 0 ]
	# each survivor names rank 2: by its own timeout, or by the other's report
	for r in 0 1; do
		assert_survivor $r 'LLMP_ERR_(TIMEOUT|PEER) .*rank 2 (did not answer|failed or stopped)'
	done
	grep -qE '^rank [01]: error after .*: LLMP_ERR_TIMEOUT .*rank 2 did not answer within 4.0 s' <<<"$output"
	assert_cluster_idle
}

# A program bug: one rank passes another count. Nobody may hang or take a result.
@test "disagree: one rank allreduces more elements; shared memory: all fail, naming a rank" {
	run capped_srun 60 -N2 -n3 "$RT_CHECK" disagree --odd 2 --count 100000 --timeout 10
	assert_ranks_ok 3 3
	[ "$(grep -c 'ranks disagree after' <<<"$output")" -eq 3 ]
}

@test "disagree: one rank allreduces more elements; UCX: all fail within the timeout" {
	LLMP_SHM_THRESHOLD=off run capped_srun 60 -N2 -n3 "$RT_CHECK" disagree --odd 2 --count 100000 --timeout 10
	assert_ranks_ok 3 2
}

@test "badargs under srun: refused locally on every rank; the world still works after" {
	run capped_srun 60 -N2 -n3 "$RT_CHECK" badargs --skip-bad-init
	assert_ranks_ok 3 40
}

# Most Python programs, and many C ones, never call llmp_finalize: a rank that
# ends so while others still run must not fail the step (Slurm's mpi/pmix kills
# a step on its PMIx server's error events). Rank 0 leaves first, rank 2 4 s on.
@test "leave: ranks that end without llmp_finalize, one after another; the step succeeds" {
	run capped_srun 60 -N3 -n3 "$RT_CHECK" leave --sleep 2
	assert_ranks_ok 3 1
	[ "$(grep -c '^rank [0-2]: leaving without llmp_finalize$' <<<"$output")" -eq 3 ]
}

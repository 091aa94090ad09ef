#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Real preemption: the local cluster with
# PreemptType=preempt/partition_prio, PreemptMode=REQUEUE and a GraceTime on
# the low partition, as etc/slurm/llmp-requeue.conf documents. A job of the
# high partition takes a node of a running llmp training job
# (etc/examples/mlp-train.sbatch): the job checkpoints within the grace
# time, is requeued by Slurm, resumes and ends bit-identical to an
# uninterrupted run (tests/ft/compare_traces.py, which reads both traces).

load cluster/common
load cluster/mlp_job

STEPS=30
SLEEP_MS=150
TRAIN_ARGS=(--steps "$STEPS" --sleep-ms "$SLEEP_MS")

setup_file() {
	PREEMPT_CONF=$(mktemp /tmp/llmp-preempt-conf.XXXXXX)
	cat >"$PREEMPT_CONF" <<-EOF
		PreemptType=preempt/partition_prio
		PreemptMode=REQUEUE
		PartitionName=low Nodes=node[1-3] PriorityTier=1 GraceTime=20 MaxTime=INFINITE State=UP
		PartitionName=tight Nodes=node[1-3] PriorityTier=1 GraceTime=1 MaxTime=INFINITE State=UP
		PartitionName=high Nodes=node[1-3] PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP
	EOF
	export LLMP_TEST_SLURM_CONF_EXTRA=$PREEMPT_CONF
	cluster_setup_file
	rm -f "$PREEMPT_CONF"
}

teardown_file() { cluster_teardown_file; }

setup() {
	cluster_setup
	MLP_TRAIN="$LLMP_BUILDDIR/examples/mlp_train"
	[ -x "$MLP_TRAIN" ] || skip "examples/mlp_train not built"
	export MLP_TRAIN LLMP_BIN="$LLMP"
	COMPARE="$LLMP_SRCDIR/tests/ft/compare_traces.py"
}

teardown() {
	[ -n "${CLUSTER_SKIP:-}" ] && return 0
	thaw
	scancel "${JOB:-0}" "${HIGH:-0}" >/dev/null 2>&1 || true
	assert_cluster_idle || true
	assert_no_timeout
}

# The uninterrupted run, once per file, in the low partition.
reference() {
	REF="$CLUSTER_STATE/reference.out"
	[ -s "$REF" ] && grep -q '^final checksum' "$REF" && return 0
	submit_mlp "$REF" -p low -N2 --ntasks-per-node=2 --llm-parallel=tp=2 \
		--llm-checkpoint="$CLUSTER_STATE/reference-ckpt,every=5" -- "${TRAIN_ARGS[@]}"
	wait_job_gone "$JOB"
	grep -q '^final checksum' "$REF" || {
		cat "$REF" >&2
		return 1
	}
	[ "$(runs_of "$REF")" -eq 1 ]
}

# A high-partition job that needs all of node1, for a few seconds; sets HIGH.
preempt_node1() { # OUT
	HIGH=$(sbatch --parsable -p high -w node1 --exclusive -o "$1" --wrap 'echo high ran on $SLURMD_NODENAME; sleep 3')
	[ -n "$HIGH" ]
}

@test "preemption: GraceTime=20, the job checkpoints, is requeued, resumes, bit-identical" {
	reference
	local out="$WORK/job.out"
	submit_mlp "$out" -p low -N2 --ntasks-per-node=2 -w node[1-2] --llm-parallel=tp=2 \
		--llm-checkpoint="$WORK/ckpt,every=5" -- "${TRAIN_ARGS[@]}"
	wait_line "$out" '^step 8 loss'
	preempt_node1 "$WORK/high.out"
	wait_job_gone "$HIGH"
	wait_job_gone "$JOB"
	grep -qx 'high ran on node1' "$WORK/high.out" || { cat "$WORK/high.out"; false; }
	# Nothing but slurmctld signalled the job: it stopped, was requeued, and only then
	# did the high job start on node1 (slurmctld logs no "preempt" at info level). A
	# start is logged by whichever scheduler made it: the backfill's "Started JobId=N
	# in PART on NODES", the main one's "sched: Allocate JobId=N NodeList=... Partition=
	# PART" (Slurm 22.05 backfill.c, job_scheduler.c).
	local log="$CLUSTER_STATE/log/slurmctld.log" order
	order=$(sed -nE -e "s/.*Requeuing JobId=($JOB)( .*)?$/requeue \1/p" \
		-e "s/.*Started JobId=($JOB|$HIGH) in ([a-z]+) .*/start \1 \2/p" \
		-e "s/.*Allocate JobId=($JOB|$HIGH) .*Partition=([a-z]+).*/start \1 \2/p" "$log" | tr '\n' ,)
	# Slurm 24.05 and later requeue the job once more after it completed
	# (README.md, "Slurm releases"): that run ends at once from the run
	# record, in one line, and starts no rank.
	local extra want="start $JOB low,requeue $JOB,start $HIGH high,start $JOB low,"
	extra=$(completion_requeues_ended "$out")
	[ "$extra" -eq 0 ] || want+="requeue $JOB,start $JOB low,"
	[ "$order" = "$want" ] || { echo "order: $order"; cat "$out"; false; }
	run python3 "$COMPARE" "$REF" "$out" --no-redo
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(runs_of "$out")" -eq 2 ]
	# Every rank saw SIGTERM and stopped at one step, whose checkpoint the second run resumed from.
	[ "$(grep -c 'stop agreed at step [0-9]* (SIGTERM on rank' "$out")" -eq 4 ] || { cat "$out"; false; }
	local stopped resumed
	stopped=$(sed -n 's/.*rank 0: stop agreed at step \([0-9]*\) .*/\1/p' "$out")
	resumed=$(sed -n 's/.*rank 0: run 1 .*resuming at step \([0-9]*\) from checkpoint step-\([0-9]*\).*/\1 \2/p' "$out")
	[ "$resumed" = "$((stopped + 1)) $stopped" ] || { cat "$out"; false; }
}

# Freeze a process in a cgroup of its own (v2 cgroup.freeze, else v1's freezer):
# unlike SIGSTOP, Slurm's SIGCONT does not wake it, so it stands for a rank whose
# stop checkpoint cannot finish in time. Sets FROZEN_CG.
freeze() { # PID
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		FROZEN_CG=/sys/fs/cgroup/llmp-preempt-$$
		mkdir "$FROZEN_CG" && echo "$1" >"$FROZEN_CG/cgroup.procs" && echo 1 >"$FROZEN_CG/cgroup.freeze"
	else
		FROZEN_CG=/sys/fs/cgroup/freezer/llmp-preempt-$$
		mkdir "$FROZEN_CG" && echo "$1" >"$FROZEN_CG/cgroup.procs" && echo FROZEN >"$FROZEN_CG/freezer.state"
	fi
}

thaw() {
	[ -n "${FROZEN_CG:-}" ] && [ -d "$FROZEN_CG" ] || return 0
	if [ -f "$FROZEN_CG/cgroup.freeze" ]; then echo 0 >"$FROZEN_CG/cgroup.freeze"; else echo THAWED >"$FROZEN_CG/freezer.state"; fi
	local _
	for _ in $(seq 1 50); do
		rmdir "$FROZEN_CG" 2>/dev/null && break
		sleep 0.1
	done
	FROZEN_CG=
}

@test "preemption: GraceTime=1, too short for the stop checkpoint: killed, reported, resumed from the previous one" {
	[ -d /sys/fs/cgroup/freezer ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || skip "no cgroup freezer on this machine"
	# The uninterrupted run of this test's shorter training.
	local ref="$WORK/ref.out" out="$WORK/job.out" args=(--steps 12 --sleep-ms 100) pid left
	submit_mlp "$ref" -p tight -N2 --ntasks-per-node=2 --llm-parallel=tp=2 \
		--llm-checkpoint="$WORK/ref-ckpt,every=2" -- "${args[@]}"
	wait_job_gone "$JOB"
	grep -q '^final checksum' "$ref" || { cat "$ref"; false; }
	submit_mlp "$out" -p tight -N2 --ntasks-per-node=2 -w node[1-2] --llm-parallel=tp=2 \
		--llm-checkpoint="$WORK/ckpt,every=2" -- "${args[@]}"
	wait_line "$out" '^step 4 loss' 60
	pid=$(rank_pid 1)
	freeze "$pid"
	preempt_node1 "$WORK/high.out"
	# The other ranks wait for rank 1 to agree on the stop until GraceTime runs out
	# and Slurm kills them; rank 1's SIGKILL waits for the thaw.
	for _ in $(seq 1 120); do
		left=$(pgrep -x mlp_train | grep -vx "$pid" || true)
		[ -n "$left" ] || break
		sleep 0.5
	done
	thaw
	[ -z "$left" ] || { echo "ranks $left still running"; cat "$out"; false; }
	wait_job_gone "$HIGH"
	wait_job_gone "$JOB" 240
	grep -q "preempted JobId=$JOB has been requeued to reclaim resources" \
		"$CLUSTER_STATE/log/slurmctld.log" || { grep -v debug "$CLUSTER_STATE/log/slurmctld.log" | tail; false; }
	# Killed before any stop checkpoint: the next run says so and resumes from the
	# newest checkpoint run 0 committed (every=2; one still being written when
	# rank 1 froze never committed), redoing the steps after it.
	! grep -q 'stop agreed' "$out" || { cat "$out"; false; }
	[ "$(runs_of "$out")" -eq 2 ] || { cat "$out"; false; }
	grep -q 'rank 0: run 1 (the previous run (restart 0) ended without a word: node failure, kill or crash)' "$out" ||
		{ cat "$out"; false; }
	local resumed from committed
	read -r resumed from < <(sed -n 's/.*rank 0: run 1 .*resuming at step \([0-9]*\) from checkpoint step-\([0-9]*\).*/\1 \2/p' "$out")
	committed=$(sed -n '/run 1 of job/q; s/.*rank 0: checkpoint step \([0-9]*\) committed.*/\1/p' "$out" | tail -1)
	[ -n "$committed" ] && [ "$from" = "$committed" ] && [ "$resumed" -eq $((from + 1)) ] ||
		{ echo "resumed $resumed from $from, newest committed in run 0: $committed"; cat "$out"; false; }
	# Steps redone, the result the same: bit-identical to the uninterrupted run.
	run python3 "$COMPARE" "$ref" "$out"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "a job requeued after it completed: the run record ends it at once, said in one line" {
	# Slurm 24.05+ does this by itself after a preemption with GraceTime;
	# here (any release) scontrol requeues the job as soon as it completed.
	local out="$WORK/job.out" state
	submit_mlp "$out" -p low -N1 --ntasks-per-node=2 --llm-parallel=tp=2 \
		--llm-checkpoint="$WORK/ckpt,every=5" -- --steps 8 --sleep-ms 10
	for _ in $(seq 1 600); do
		state=$(scontrol -o show job "$JOB" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
		[ "$state" = COMPLETED ] || [ -z "$state" ] && break
		sleep 0.2
	done
	# MinJobAge=4: a completed job is still known for 4 s.
	run scontrol requeue "$JOB"
	[ "$status" -eq 0 ] || { echo "state $state: $output"; cat "$out"; false; }
	wait_job_gone "$JOB"
	grep -q '^final checksum' "$out" || { cat "$out"; false; }
	[ "$(completion_requeues_ended "$out")" -eq 1 ] || { cat "$out"; false; }
	# The step is the run record's (doc/fault-tolerance.md), read here by hand.
	local step
	step=$(sed -n 's/^step //p' "$WORK/ckpt/llmp-run")
	grep -qx "llmp job-end: job $JOB finished in run 0 at step $step; Slurm started it again (run 1, requeued after it completed): ending this run at once" \
		"$out" || { cat "$out"; false; }
	# One run of the ranks, one final checksum, one line for the extra run.
	[ "$(runs_of "$out")" -eq 1 ]
	[ "$(grep -c '^final checksum' "$out")" -eq 1 ]
	[ "$(grep -c '^mlp-train.sbatch: run ' "$out")" -eq 1 ] || { cat "$out"; false; }
	assert_cluster_idle
}

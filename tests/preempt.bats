#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# Real preemption (issue 28, item 4): the local cluster with
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
	scancel "${JOB:-0}" "${HIGH:-0}" >/dev/null 2>&1 || true
	assert_cluster_idle || true
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
	# did the high job start on node1 (slurmctld logs no "preempt" at info level).
	local log="$CLUSTER_STATE/log/slurmctld.log" order
	order=$(grep -o "Requeuing JobId=$JOB\|Started JobId=$HIGH in high\|Started JobId=$JOB in low" "$log" | tr '\n' ,)
	[ "$order" = "Started JobId=$JOB in low,Requeuing JobId=$JOB,Started JobId=$HIGH in high,Started JobId=$JOB in low," ] ||
		{ echo "order: $order"; cat "$out"; false; }
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

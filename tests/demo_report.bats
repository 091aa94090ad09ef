#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# scripts/demo/report.py, the end of the demo's story: its timeline, and its
# verdict, which must fail loudly when the job was not requeued, did not
# resume from a checkpoint or ended elsewhere than the uninterrupted run.
# The outputs are written here by hand in the format of mlp-train.sbatch's
# (doc/example-mlp.md, doc/fault-tolerance.md), so no cluster is needed;
# tests/ft.bats runs the whole story on the cluster.

load lib/helpers

setup() {
	need_python
	DIR=$(mktemp -d)
	REPORT="$LLMP_SRCDIR/scripts/demo/report.py"
	write_reference
	write_job
	# Submitted at 10:01:00 local time, as story.sh writes it: epoch seconds.
	echo "$(date -d '2026-01-01 10:01:00' +%s).000 sbatch: job 2 submitted" >"$DIR/events"
	echo "$(date -d '2026-01-01 10:01:01' +%s).800 node2 killed" >>"$DIR/events"
	cat >"$DIR/slurmctld.log" <<-EOF
		[2026-01-01T10:00:30.000] error: Nodes node2 not responding, setting DOWN
		[2026-01-01T10:01:40.000] requeue job JobId=2 due to failure of node node2
		[2026-01-01T10:01:40.000] requeue job JobId=21 due to failure of node node2
		[2026-01-01T10:01:40.000] error: Nodes node2 not responding, setting DOWN
		[2026-01-01T10:01:45.500] node node2 returned to service
	EOF
}

teardown() {
	rm -rf "$DIR"
}

steps() { # FIRST LAST: the losses of the reference, one line a step
	local losses=(0.5 0.4 0.3 0.25 0.2 0.1) i
	for ((i = $1; i <= $2; i++)); do
		echo "step $i loss ${losses[i]}"
	done
}

final() {
	printf 'final checksum 0x11111111\nfinal params sum -1.5\nfinal rng 0x1\n'
}

write_reference() {
	{
		echo "mlp-train.sbatch: run 0 of job 1 at 2026-01-01T10:00:00.500 on node[1-2]: mlp_train --steps 6"
		echo "llmp: 2026-01-01T10:00:00.600 rank 0: run 0 (first run): no checkpoint yet, starting at step 0"
		steps 0 5
		final
	} >"$DIR/reference.out"
}

# Run 0 checkpoints step 1, prints steps 2 and 3 and loses a rank; run 1
# resumes at step 2 from step-1 and finishes.
write_job() {
	local lost="allreduce on world: rank 2 failed: its process (pid 7) exited"
	{
		echo "mlp-train.sbatch: run 0 of job 2 at 2026-01-01T10:01:01.000 on node[1-2]: mlp_train --steps 6"
		echo "llmp: 2026-01-01T10:01:01.100 rank 0: run 0 (first run): no checkpoint yet, starting at step 0"
		steps 0 1
		echo "llmp: 2026-01-01T10:01:01.500 rank 1: checkpoint step 1 committed: 2.6 KiB on this rank, 0.100 s (0.003 s stalled)"
		echo "llmp: 2026-01-01T10:01:01.500 rank 0: checkpoint step 1 committed: 2.6 KiB on this rank, 0.100 s (0.002 s stalled)"
		steps 2 3
		echo "llmp: 2026-01-01T10:01:02.000 rank 1: failure after step 2: $lost"
		echo "llmp: 2026-01-01T10:01:02.050 rank 0: failure after step 2: $lost"
		echo "llmp: 2026-01-01T10:01:02.100 rank 0: exit: requeue; 1 failed run in a row (code 75)"
		echo "llmp: 2026-01-01T10:01:02.150 rank 1: exit: requeue; 1 failed run in a row (code 75)"
		echo "mlp-train.sbatch: run 1 of job 2 at 2026-01-01T10:01:45.000 on node[1,3]: mlp_train --steps 6"
		echo "llmp: 2026-01-01T10:01:45.300 rank 0: run 1 (failed: $lost after step 2): resuming at step 2 from checkpoint step-1, loaded in 0.004 s"
		steps 2 5
		final
		echo "llmp: 2026-01-01T10:01:46.000 rank 1: exit: done (code 0)"
		echo "llmp: 2026-01-01T10:01:46.000 rank 0: exit: done (code 0)"
	} >"$DIR/job.out"
}

report() {
	run python3 "$REPORT" --reference "$DIR/reference.out" --job "$DIR/job.out" \
		--events "$DIR/events" --slurmctld-log "$DIR/slurmctld.log" --node node2
	echo "$output"
}

@test "report: requeued, resumed, same checksum: passes; one row per event, seconds after the submission" {
	report
	[ "$status" -eq 0 ]
	[[ "$output" == *"timeline of job 2 (seconds after submission):"* ]]
	[[ "$output" == *"   +0.0 s  sbatch: job 2 submitted"* ]]
	[[ "$output" == *"   +1.0 s  run 0 starts on node[1-2]"$'\n'* ]]
	[[ "$output" == *"   +1.1 s  rank 0 starts at step 0: no checkpoint yet"* ]]
	[[ "$output" == *"   +1.5 s  steps 0-1 done; checkpoint step-1 committed (2.6 KiB per rank, 0.002 s stall)"* ]]
	[[ "$output" == *"   +1.8 s  node2 killed"* ]]
	# The first rank to see it; the exits of every survivor on one row.
	[[ "$output" == *"   +2.0 s  rank 1 sees the failure after step 2: allreduce on world: rank 2 failed"* ]]
	[[ "$output" != *"rank 0 sees the failure"* ]]
	[[ "$output" == *"   +2.1 s  ranks 0, 1 exit: requeue; 1 failed run in a row (code 75)"* ]]
	[[ "$output" == *"  +40.0 s  slurmctld: requeue job JobId=2 due to failure of node node2"* ]]
	[[ "$output" == *"  +45.0 s  run 1 starts on node[1,3] (Slurm runs the batch script again)"* ]]
	[[ "$output" == *"  +45.3 s  rank 0 resumes at step 2 from checkpoint step-1 (loaded in 0.004 s)"* ]]
	[[ "$output" == *"  +45.5 s  slurmctld: node node2 returned to service"* ]]
	[[ "$output" == *"  +46.0 s  ranks 0, 1 exit: done (code 0); final checksum 0x11111111"* ]]
	# Slurm's lines from before the submission and about other jobs are left out.
	[ "$(grep -c 'not responding' <<<"$output")" -eq 1 ]
	[[ "$output" != *"JobId=21"* ]]
	[[ "$output" == *"requeued: 2 runs of job 2; run 1 on node[1,3]"* ]]
	[[ "$output" == *"resumed:  run 1 at step 2 from checkpoint step-1 (committed at +1.5 s); steps 2-3 computed twice"* ]]
	[[ "$output" == *"checksum: 0x11111111; the uninterrupted run (job 1): 0x11111111: identical"* ]]
	[[ "$output" != *FAILED* ]]
}

@test "report: three checkpoints in a row are one row" {
	sed -i '/rank 0: checkpoint step 1 committed/a\
llmp: 2026-01-01T10:01:01.600 rank 0: checkpoint step 2 committed: 1 KiB on this rank, 0.1 s\
llmp: 2026-01-01T10:01:01.700 rank 0: checkpoint step 3 committed: 1 KiB on this rank, 0.1 s' "$DIR/job.out"
	report
	[[ "$output" == *"   +1.7 s  steps 0-3 done; checkpoints step-1, step-2, step-3 committed"* ]]
}

@test "report: a final checksum other than the reference's fails loudly" {
	sed -i 's/^final checksum 0x11111111/final checksum 0x22222222/' "$DIR/job.out"
	report
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: the training differs from the uninterrupted run's: final checksum: 0x22222222, reference 0x11111111"* ]]
	[[ "$output" != *identical* ]]
}

@test "report: one step's loss other than the reference's fails, naming the step" {
	sed -i 's/^step 4 loss 0.2$/step 4 loss 0.2000001/' "$DIR/job.out"
	report
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: the training differs from the uninterrupted run's: step 4: loss 0.2000001, reference 0.2"* ]]
}

@test "report: a second run that started afresh instead of resuming fails, even with the right checksum" {
	sed -i 's/: resuming at step 2 from checkpoint step-1, loaded in 0.004 s$/: no checkpoint yet, starting at step 0/' "$DIR/job.out"
	sed -i '/run 1 (failed/a\
step 0 loss 0.5\
step 1 loss 0.4' "$DIR/job.out"
	report
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: run 1 did not resume from a checkpoint (it started at step 0)"* ]]
}

@test "report: a job that ran once, never requeued, fails" {
	{
		echo "mlp-train.sbatch: run 0 of job 2 at 2026-01-01T10:01:01.000 on node[1-2]: mlp_train --steps 6"
		echo "llmp: 2026-01-01T10:01:01.100 rank 0: run 0 (first run): no checkpoint yet, starting at step 0"
		steps 0 5
		final
	} >"$DIR/job.out"
	report
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: the job was not requeued: 1 run(s) in $DIR/job.out"* ]]
}

@test "report: a reference that was itself interrupted is refused" {
	cp "$DIR/job.out" "$DIR/reference.out"
	report
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: the reference $DIR/reference.out is not one complete run (2 runs,"* ]]
}

#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# scripts/demo/report.py, the end of the demo's story: its timeline, the
# phases of a recovery inside the allocation, and its verdict, which must
# fail loudly when the job was requeued instead of recovered in place (or,
# for the requeue story, was not requeued), did not resume from a
# checkpoint, used the lost node again, or ended elsewhere than the
# uninterrupted run. The outputs are written here by hand in the format of
# mlp-train.sbatch's and llmp job run's (doc/example-mlp.md,
# doc/fault-tolerance.md), so no cluster is needed; tests/ft.bats runs the
# whole story on the cluster.

load lib/helpers

setup() {
	need_python
	DIR=$(mktemp -d)
	REPORT="$LLMP_SRCDIR/scripts/demo/report.py"
	write_reference
	write_job
	write_spare_job
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

# The requeue story (story.sh --requeue): job.out.
report() {
	run python3 "$REPORT" --story requeue --reference "$DIR/reference.out" --job "$DIR/job.out" \
		--events "$DIR/events" --slurmctld-log "$DIR/slurmctld.log" --node node2
	echo "$output"
}

# Run 0 of llmp job run on node[1-2] (node3 the spare) checkpoints step 1,
# prints steps 2 and 3; node2 is killed at 10:01:01.800 (events); rank 1
# sees it at 10:01:02.000, srun is killed at 03.100, the recovery line comes
# at 03.300 with run 1 on node[1,3], whose rank 0 resumes at 03.800 after
# loading for 0.050 s: detect 1.300 s, check 0.200 s, launch 0.450 s, load
# 0.050 s, 2.000 s in all.
write_spare_job() {
	local lost="allreduce on world: rank 2 failed: its process (pid 7) exited"
	{
		echo "mlp-train.sbatch: run 0 of job 2 at 2026-01-01T10:01:01.000 on node[1-3]: mlp_train --steps 6"
		echo "llmp job run: 2026-01-01T10:01:01.010: run 0 on node[1-2] (2 nodes); spares: node3"
		echo "llmp: 2026-01-01T10:01:01.100 rank 0: run 0 (first run): no checkpoint yet, starting at step 0"
		steps 0 1
		echo "llmp: 2026-01-01T10:01:01.500 rank 1: checkpoint step 1 committed: 2.6 KiB on this rank, 0.100 s (0.003 s stalled)"
		echo "llmp: 2026-01-01T10:01:01.500 rank 0: checkpoint step 1 committed: 2.6 KiB on this rank, 0.100 s (0.002 s stalled)"
		steps 2 3
		echo "llmp: 2026-01-01T10:01:02.000 rank 1: failure after step 3: $lost"
		echo "llmp: 2026-01-01T10:01:02.050 rank 0: failure after step 3: $lost"
		echo "llmp: 2026-01-01T10:01:02.100 rank 0: exit: requeue; 1 failed run in a row (code 75)"
		echo "srun: error: node1: task 0: Exited with exit code 75"
		echo "llmp job run: 2026-01-01T10:01:03.100: the ranks' verdict is written, srun still waits 1 s later (a lost node): srun killed"
		echo "llmp job run: 2026-01-01T10:01:03.102: run 0 ended after 2.1 s, srun's code 137"
		echo "llmp job run: 2026-01-01T10:01:03.110: node2 is out for the rest of the job: the ranks blamed it (a rank there died or stopped answering)"
		echo "llmp job run: 2026-01-01T10:01:03.300: recovery 1: node2; Slurm's view 0.0 s, check 0.2 s"
		echo "llmp job run: 2026-01-01T10:01:03.300: run 1 on node[1,3] (2 nodes); spares: none"
		echo "llmp: 2026-01-01T10:01:03.800 rank 0: run 0 (failed: $lost after step 3): resuming at step 2 from checkpoint step-1, loaded in 0.050 s"
		steps 2 5
		final
		echo "llmp: 2026-01-01T10:01:04.500 rank 1: exit: done (code 0)"
		echo "llmp: 2026-01-01T10:01:04.500 rank 0: exit: done (code 0)"
		echo "llmp job run: 2026-01-01T10:01:04.600: run 1 ended after 1.3 s, srun's code 0"
		echo "llmp job-end: run 0 finished"
	} >"$DIR/spare.out"
}

# The story of a spare in the allocation (story.sh): spare.out.
report_spare() {
	run python3 "$REPORT" --reference "$DIR/reference.out" --job "$DIR/spare.out" \
		--events "$DIR/events" --node node2
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

@test "report, spare: recovered in the allocation, same checksum: passes; the driver's lines and the phases" {
	report_spare
	[ "$status" -eq 0 ]
	[[ "$output" == *"   +1.0 s  run 0 starts on node[1-3]"$'\n'* ]]
	[[ "$output" == *"   +1.0 s  llmp job run: run 0 on node[1-2] (2 nodes); spares: node3"* ]]
	[[ "$output" == *"   +1.8 s  node2 killed"* ]]
	[[ "$output" == *"   +2.0 s  rank 1 sees the failure after step 3: allreduce on world: rank 2 failed"* ]]
	[[ "$output" == *"   +3.1 s  llmp job run: the ranks' verdict is written, srun still waits 1 s later (a lost node): srun killed"* ]]
	[[ "$output" == *"   +3.1 s  llmp job run: node2 is out for the rest of the job: the ranks blamed it"* ]]
	[[ "$output" == *"   +3.3 s  llmp job run: recovery 1: node2; Slurm's view 0.0 s, check 0.2 s"* ]]
	[[ "$output" == *"   +3.3 s  llmp job run: run 1 on node[1,3] (2 nodes); spares: none"* ]]
	[[ "$output" == *"   +3.8 s  rank 0 resumes at step 2 from checkpoint step-1 (loaded in 0.050 s)"* ]]
	[[ "$output" == *"   +4.5 s  ranks 0, 1 exit: done (code 0); final checksum 0x11111111"* ]]
	[[ "$output" == *"   +4.6 s  llmp job run: run 1 ended after 1.3 s, srun's code 0"* ]]
	[[ "$output" != *slurmctld* ]]
	[[ "$output" == *"recovery 1 in the allocation, after node2 was killed:"* ]]
	[[ "$output" == *"  detect   1.300 s  until srun was killed (+1.30 s); the ranks' verdict at +0.20 s"* ]]
	[[ "$output" == *"  check    0.200 s  Slurm's view 0.0 s, check 0.2 s (+1.50 s)"* ]]
	[[ "$output" == *"  launch   0.450 s  run 1 on node[1,3] until its ranks start loading (+1.95 s)"* ]]
	[[ "$output" == *"  load     0.050 s  checkpoint step-1 (+2.00 s)"* ]]
	[[ "$output" == *"  total    2.000 s  node2 killed -> training resumed at step 2"* ]]
	[[ "$output" == *"in place: job 2, one batch run, 2 runs of llmp job run; run 0 on node[1-2], run 1 on node[1,3]"* ]]
	[[ "$output" == *"lost:     node2 out: the ranks blamed it (a rank there died or stopped answering); never used again"* ]]
	[[ "$output" == *"resumed:  run 1 at step 2 from checkpoint step-1 (committed at +1.5 s); steps 2-3 computed twice; training resumed 2.0 s after the kill"* ]]
	[[ "$output" == *"checksum: 0x11111111; the uninterrupted run (job 1): 0x11111111: identical"* ]]
	[[ "$output" != *FAILED* ]]
}

@test "report, spare: a job Slurm requeued (two batch runs, no llmp job run) fails, naming both" {
	cp "$DIR/job.out" "$DIR/spare.out"
	report_spare
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: the batch script ran 2 times in $DIR/spare.out, not once (requeued by Slurm, or never started): not recovered in the allocation"* ]]
	[[ "$output" == *"demo: FAILED: no recovery in the allocation: 0 run(s) of llmp job run and no \`recovery N:\` line followed by another run in $DIR/spare.out"* ]]
	[[ "$output" != *"recovery 1 in the allocation"* ]]
}

@test "report, spare: a relaunch without a recovery line fails" {
	sed -i '/: recovery 1: /d' "$DIR/spare.out"
	report_spare
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: no recovery in the allocation: 2 run(s) of llmp job run and no \`recovery N:\` line followed by another run in $DIR/spare.out"* ]]
}

@test "report, spare: a run after the recovery that started afresh fails, even with the right checksum" {
	sed -i 's/: resuming at step 2 from checkpoint step-1, loaded in 0.050 s$/: no checkpoint yet, starting at step 0/' "$DIR/spare.out"
	sed -i '/rank 0: run 0 (failed/a\
step 0 loss 0.5\
step 1 loss 0.4' "$DIR/spare.out"
	report_spare
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: run 1 of llmp job run did not resume from a checkpoint (it started at step 0)"* ]]
	[ "$(grep -c FAILED <<<"$output")" -eq 1 ]
}

@test "report, spare: the lost node among the nodes of the run after the recovery fails" {
	sed -i 's/: run 1 on node\[1,3\] (2 nodes); spares: none$/: run 1 on node[1-2] (2 nodes); spares: none/' "$DIR/spare.out"
	report_spare
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: run 1 of llmp job run used node2 after it was lost: node[1-2]"* ]]
	[ "$(grep -c FAILED <<<"$output")" -eq 1 ]
}

@test "report, spare: the killed node never taken out fails" {
	sed -i '/node2 is out for the rest of the job/d' "$DIR/spare.out"
	report_spare
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: llmp job run never took node2 out (no \`node2 is out for the rest of the job\`)"* ]]
}

@test "report, spare: a final checksum or a loss other than the reference's fails" {
	sed -i 's/^final checksum 0x11111111/final checksum 0x22222222/; s/^step 4 loss 0.2$/step 4 loss 0.2000001/' "$DIR/spare.out"
	report_spare
	[ "$status" -eq 1 ]
	[[ "$output" == *"demo: FAILED: the training differs from the uninterrupted run's: step 4: loss 0.2000001, reference 0.2; final checksum: 0x22222222, reference 0x11111111"* ]]
	[[ "$output" != *identical* ]]
}

@test "report: host lists as Slurm writes them" {
	run python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import report; print(report.hostnames(sys.argv[2]))' \
		"$LLMP_SRCDIR/scripts/demo" "node[1,3-4],gpu7,a[08-10]"
	[ "$status" -eq 0 ]
	[ "$output" = "['node1', 'node3', 'node4', 'gpu7', 'a08', 'a09', 'a10']" ]
}

@test "report, spare: srun ending by itself (no kill) ends the detect phase; a smaller run is read too" {
	sed -i "/srun killed\$/d" "$DIR/spare.out"
	sed -i 's/: run 1 on node\[1,3\] (2 nodes); spares: none$/: run 1 on node1 (1 node, fewer than the first run: the layout must allow it); spares: none/' "$DIR/spare.out"
	report_spare
	[ "$status" -eq 0 ]
	# run 0 ended at 10:01:03.102: 1.302 s after the kill; the recovery line 0.198 s later.
	[[ "$output" == *"  detect   1.302 s  until run 0 ended (+1.30 s); the ranks' verdict at +0.20 s"* ]]
	[[ "$output" == *"  check    0.198 s  Slurm's view 0.0 s, check 0.2 s (+1.50 s)"* ]]
	[[ "$output" == *"  launch   0.450 s  run 1 on node1 until its ranks start loading (+1.95 s)"* ]]
	[[ "$output" == *"run 0 on node[1-2], run 1 on node1"* ]]
}

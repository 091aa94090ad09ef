#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# `llmp job-end`: the batch script's verdict from the run record
# (doc/fault-tolerance.md). Records are written here by hand, in the format
# the document gives, so no cluster is needed; requeueing is "none".

load lib/helpers

setup() {
	DIR=$(mktemp -d)
	export LLMP_REQUEUE=none
	unset LLMP_CHECKPOINT LLMP_CHECKPOINT_DIR SLURM_RESTART_COUNT
	export SLURM_JOB_ID=77
}

teardown() {
	rm -rf "$DIR"
}

record() { # outcome [restart] [job] [reason]
	cat >"$DIR/llmp-run" <<-EOF
		llmp-run 1
		job ${3:-77}
		restart ${2:-0}
		outcome $1
		failures 0
		ckpt-at-start none
		step 12
		reason ${4:-SIGUSR1 on rank 3 at step 12}
		end
	EOF
}

@test "job-end: done -> 0, stopped/failed/running -> 75, gave-up -> 76, each said on stderr" {
	record done
	run "$LLMP" job-end --checkpoint "$DIR" 0
	[ "$status" -eq 0 ]
	[[ "$output" == *"run 0 finished"* ]]
	record stopped
	run "$LLMP" job-end --checkpoint "$DIR" 0
	[ "$status" -eq 75 ]
	[[ "$output" == *"run 0 stopped (SIGUSR1 on rank 3 at step 12): requeueing"* ]]
	record failed 0 77 "rank 2 (tp rank 0) did not answer within 4 s after step 7"
	run "$LLMP" job-end --checkpoint "$DIR" 137
	[ "$status" -eq 75 ]
	[[ "$output" == *"run 0 failed (rank 2 (tp rank 0) did not answer"* ]]
	record running
	run "$LLMP" job-end --checkpoint "$DIR" 137
	[ "$status" -eq 75 ]
	[[ "$output" == *"ended without a word"* ]]
	record gave-up 0 77 "3 failed runs in a row"
	run "$LLMP" job-end --checkpoint "$DIR" 139
	[ "$status" -eq 76 ]
	[[ "$output" == *"gave up (3 failed runs in a row): not requeueing"* ]]
}

@test "job-end: a record of another run or job, or none: the step's code is passed on" {
	record stopped 0
	SLURM_RESTART_COUNT=1 run "$LLMP" job-end --checkpoint "$DIR" 3
	[ "$status" -eq 3 ]
	[[ "$output" == *"no record of run 1 of job 77"* ]]
	record stopped 1 76
	SLURM_RESTART_COUNT=1 run "$LLMP" job-end --checkpoint "$DIR" 4
	[ "$status" -eq 4 ]
	rm "$DIR/llmp-run"
	run "$LLMP" job-end --checkpoint "$DIR"
	[ "$status" -eq 1 ]
	record stopped 2
	SLURM_RESTART_COUNT=2 run "$LLMP" job-end --checkpoint "$DIR" 0
	[ "$status" -eq 75 ]
}

@test "job-end: the checkpoint root from LLMP_CHECKPOINT_DIR, else from LLMP_CHECKPOINT" {
	record done
	LLMP_CHECKPOINT_DIR=$DIR run "$LLMP" job-end 9
	[ "$status" -eq 0 ]
	LLMP_CHECKPOINT="$DIR,every=5,keep=2" run "$LLMP" job-end 9
	[ "$status" -eq 0 ]
	LLMP_CHECKPOINT="every=5" run "$LLMP" job-end 9
	[ "$status" -eq 2 ]
	[[ "$output" == *"LLMP_CHECKPOINT: "*"no checkpoint directory"* ]]
}

@test "job-end: a version 2 record naming its Slurm step and the host the ranks blamed reads as before; bad ones are damage" {
	record failed 0 77 "rank 2 did not answer within 4 s"
	sed -i -e 's/^llmp-run 1$/llmp-run 2/' -e 's/^end$/slurm-step 12\nsuspect node-7.rack_2\nend/' "$DIR/llmp-run"
	grep -qx 'suspect node-7.rack_2' "$DIR/llmp-run"
	run "$LLMP" job-end --checkpoint "$DIR" 137
	[ "$status" -eq 75 ]
	[[ "$output" == *"run 0 failed (rank 2 did not answer"* ]]
	for bad in 'suspect node 7' 'suspect node;7' 'suspect ' 'slurm-step 1x' 'slurm-step -1' 'slurm-step 12345678901234567890'; do
		record failed
		sed -i "s/^end\$/$bad\nend/" "$DIR/llmp-run"
		run "$LLMP" job-end --checkpoint "$DIR" 9
		[ "$status" -eq 9 ] || { echo "$bad: $output"; false; }
	done
	record failed
	sed -i 's/^llmp-run 1$/llmp-run 3/' "$DIR/llmp-run"
	run "$LLMP" job-end --checkpoint "$DIR" 8
	[ "$status" -eq 8 ]
}

@test "job-end: a damaged or truncated record is no record: the step's code is passed on" {
	record stopped
	head -n 4 "$DIR/llmp-run" >"$DIR/cut" && mv "$DIR/cut" "$DIR/llmp-run"
	run "$LLMP" job-end --checkpoint "$DIR" 5
	[ "$status" -eq 5 ]
	record stopped
	sed -i 's/^outcome stopped$/outcome sideways/' "$DIR/llmp-run"
	run "$LLMP" job-end --checkpoint "$DIR" 6
	[ "$status" -eq 6 ]
}

@test "job-end: bad usage is refused with a message and exit 2" {
	run "$LLMP" job-end
	[ "$status" -eq 2 ]
	[[ "$output" == *"no checkpoint root"* ]]
	run "$LLMP" job-end --checkpoint "$DIR" --requeue sometimes 0
	[ "$status" -eq 2 ]
	[[ "$output" == *"--requeue 'sometimes'"* ]]
	run "$LLMP" job-end --checkpoint "$DIR" 256
	[ "$status" -eq 2 ]
	run "$LLMP" job-end --checkpoint "$DIR" 1 2
	[ "$status" -eq 2 ]
	run "$LLMP" job-end --checkpoint "$DIR" --bogus
	[ "$status" -eq 2 ]
	[[ "$output" == *"--bogus"* ]]
	LLMP_REQUEUE=maybe run "$LLMP" job-end --checkpoint "$DIR" 0
	[ "$status" -eq 2 ]
	run "$LLMP" job-end --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"RequeueExit"* ]]
}

@test "job-end --finished: an earlier run of this job that finished ends this one, in one line" {
	# Slurm requeued job 77 after its run 1 finished: this is run 2.
	record done 1 77
	SLURM_RESTART_COUNT=2 run --separate-stderr "$LLMP" job-end --checkpoint "$DIR" --finished
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$stderr" = "llmp job-end: job 77 finished in run 1 at step 12; Slurm started it again (run 2, requeued after it completed): ending this run at once" ]
	# The root from LLMP_CHECKPOINT_DIR, as the batch script has it.
	LLMP_CHECKPOINT_DIR=$DIR SLURM_RESTART_COUNT=2 run "$LLMP" job-end --finished
	[ "$status" -eq 0 ]
}

@test "job-end --finished: anything else lets the run go ahead, silently" {
	# No record yet (the first run), the record of another job (a new
	# submission training again), a run that did not finish, this very run.
	SLURM_RESTART_COUNT=0 run --separate-stderr "$LLMP" job-end --checkpoint "$DIR" --finished
	[ "$status" -eq 1 ] && [ -z "$stderr" ]
	record done 0 76
	SLURM_RESTART_COUNT=1 run --separate-stderr "$LLMP" job-end --checkpoint "$DIR" --finished
	[ "$status" -eq 1 ] && [ -z "$stderr" ]
	for outcome in stopped failed running gave-up; do
		record "$outcome" 0 77
		SLURM_RESTART_COUNT=1 run --separate-stderr "$LLMP" job-end --checkpoint "$DIR" --finished
		[ "$status" -eq 1 ] && [ -z "$stderr" ] || { echo "$outcome: $status $stderr"; false; }
	done
	record done 1 77
	SLURM_RESTART_COUNT=1 run --separate-stderr "$LLMP" job-end --checkpoint "$DIR" --finished
	[ "$status" -eq 1 ] && [ -z "$stderr" ]
	# Outside Slurm there is no job to have been requeued.
	record done 0 77
	env -u SLURM_JOB_ID SLURM_RESTART_COUNT=1 "$LLMP" job-end --checkpoint "$DIR" --finished && false
	# --finished takes no exit code.
	run "$LLMP" job-end --checkpoint "$DIR" --finished 0
	[ "$status" -eq 2 ]
}

#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# examples/mlp_train, the example training program, alone as a PMIx
# singleton (a world of one, no launcher, no cluster): its gradients against
# finite differences, its determinism, its resume from a checkpoint, its
# training, its faults and its refusals. The cluster tests run it through
# etc/examples/mlp-train.sbatch on several nodes.

bats_require_minimum_version 1.5.0

: "${LLMP_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
: "${LLMP_BUILDDIR:=$LLMP_SRCDIR}"
MLP="$LLMP_BUILDDIR/examples/mlp_train"

setup() {
	[ -x "$MLP" ] || skip "mlp_train not built ($MLP)"
	WORK=$(mktemp -d "${BATS_TMPDIR:-/tmp}/example-mlp.XXXXXX")
	# As in tests/runtime_singleton.bats, for the sanitizer build.
	export LSAN_OPTIONS="suppressions=$LLMP_SRCDIR/tests/lsan.supp"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
}

teardown() {
	rm -rf "$WORK"
}

# Run mlp_train as a singleton with checkpoints under $WORK/CKPT-SPEC
# ("-" for none), stdout in $output and stderr in $stderr. Nothing of a
# launcher, of Slurm or of the caller's llmp settings leaks in; RESTART sets
# the restart count the job reads (LLMP_RESTART_COUNT).
mlp() { # CKPT-SPEC ARGS...
	local spec=$1
	shift
	local ckpt=()
	[ "$spec" = - ] || ckpt=("LLMP_CHECKPOINT=$WORK/$spec")
	run --separate-stderr env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 \
		-u SLURM_JOB_ID -u SLURM_RESTART_COUNT -u LLMP_RESTART_COUNT \
		-u LLMP_PARALLEL -u LLMP_CHECKPOINT -u LLMP_TIMEOUT \
		${RESTART:+LLMP_RESTART_COUNT=$RESTART} "${ckpt[@]}" \
		timeout -k 5 120 "$MLP" "$@"
}

# Show what the program said (bats prints it only when a test fails).
show() {
	printf '%s\n' "--- stdout" "$output" "--- stderr" "$stderr" "--- status $status"
}

# The lines a comparison of two runs looks at: the loss of every step and the
# final checksum, sum and RNG word.
trace() {
	grep -E '^(step [0-9]+ loss |final )' <<<"$output" || true
}

# The lines of a trace on stdin from step FIRST on, final lines included.
from_step() { # FIRST
	awk -v first="$1" '$1 == "final" || ($1 == "step" && $2 >= first)'
}

# The loss of every step, one "N X" per line.
losses() {
	awk '$1 == "step" && $3 == "loss" {print $2, $4}' <<<"$output"
}

@test "mlp: the analytic gradients match central finite differences" {
	# a tiny model, and the default one: every parameter is checked
	for dims in "4 3 2 8" "64 16 4 64"; do
		read -r h d o b <<<"$dims"
		mlp - --grad-check --hidden "$h" --in "$d" --out "$o" --batch "$b"
		show
		[ "$status" -eq 0 ]
		local n=$((h * d + h + o * h + o))
		grep -qE "^grad-check max relative error [0-9.e+-]+ over $n parameters " <<<"$output"
		awk '/^grad-check/ { exit !($5 < 1e-5) }' <<<"$output" ||
			{ echo "relative error not below 1e-5"; return 1; }
	done
}

@test "mlp: two runs print the same loss trace and checksum, bit for bit" {
	mlp ck1 --steps 15
	show
	[ "$status" -eq 0 ]
	local first
	first=$(trace)
	[ "$(grep -c '^step ' <<<"$first")" -eq 15 ]
	grep -qE '^final checksum 0x[0-9a-f]{8}$' <<<"$first"
	grep -qE '^final params sum -?[0-9.e+-]+$' <<<"$first"
	grep -qE '^final rng 0x[0-9a-f]{16}$' <<<"$first"

	mlp ck2 --steps 15
	[ "$status" -eq 0 ]
	diff <(echo "$first") <(trace)

	# and the seed matters: another one gives another model
	mlp ck3 --steps 15 --seed 2
	[ "$status" -eq 0 ]
	[ "$(trace | grep '^final checksum')" != "$(grep '^final checksum' <<<"$first")" ]
}

@test "mlp: 10 steps, then a new process resuming from step 9's checkpoint, equal 20 steps" {
	mlp ck-whole,every=10 --steps 20
	show
	[ "$status" -eq 0 ]
	local whole
	whole=$(trace)
	[ "$(grep -c '^step ' <<<"$whole")" -eq 20 ]

	mlp ck-split,every=10 --steps 10
	show
	[ "$status" -eq 0 ]
	[ -d "$WORK/ck-split/step-9" ]
	diff <(grep -E '^step [0-9] ' <<<"$whole") <(trace | grep '^step ')

	mlp ck-split,every=10 --steps 20
	show
	[ "$status" -eq 0 ]
	grep -q 'resuming at step 10 from checkpoint step-9' <<<"$stderr"
	grep -q '^mlp_train: .*from step 10 of 20$' <<<"$output"
	[ "$(trace | grep -c '^step ')" -eq 10 ]
	diff <(from_step 10 <<<"$whole") <(trace)
}

@test "mlp: a damaged newest checkpoint is passed over; its step is saved again, the old one kept aside" {
	mlp ck-whole,every=5,keep=3 --steps 20
	show
	[ "$status" -eq 0 ]
	local whole
	whole=$(trace)

	mlp ck,every=5,keep=3 --steps 15
	[ "$status" -eq 0 ]
	[ -d "$WORK/ck/step-14" ]
	# one byte in the middle of the shard flipped: its checksum no longer holds
	local shard=$WORK/ck/step-14/shard-0.h5 at byte
	at=$(($(stat -c %s "$shard") / 2))
	byte=$(od -An -tu1 -j "$at" -N1 "$shard" | tr -d ' ')
	printf "\\$(printf %03o $((byte ^ 0xff)))" | dd of="$shard" bs=1 seek="$at" conv=notrunc status=none

	mlp ck,every=5,keep=3 --steps 20
	show
	[ "$status" -eq 0 ]
	grep -q "step-14/shard-0.h5 .*; trying step-9" <<<"$stderr"
	grep -q 'resuming at step 10 from checkpoint step-9' <<<"$stderr"
	grep -q "step-14 failed its checks when loaded; moved to $WORK/ck/step-14.damaged to save step 14 again" \
		<<<"$stderr"
	diff <(from_step 10 <<<"$whole") <(trace)
	# the new step 14 is whole; the damaged one is kept, and still damaged
	if cmp -s "$shard" "$WORK/ck/step-14.damaged/shard-0.h5"; then
		echo "step-14 was not saved afresh"
		return 1
	fi
	[ -d "$WORK/ck/step-19" ]
	"$LLMP_BUILDDIR/cli/llmp" ckpt verify "$WORK/ck" --step 14
	run "$LLMP_BUILDDIR/cli/llmp" ckpt list "$WORK/ck"
	echo "$output"
	grep -qE '^ +14 +damaged ' <<<"$output"
}

@test "mlp: SIGUSR1 stops at a step with a checkpoint (exit 75); the resumed run ends bit-identical" {
	mlp ck-whole --steps 30
	[ "$status" -eq 0 ]
	local whole
	whole=$(trace)

	env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI41 -u SLURM_JOB_ID \
		-u SLURM_RESTART_COUNT -u LLMP_RESTART_COUNT -u LLMP_PARALLEL \
		LLMP_CHECKPOINT="$WORK/ck-stop" "$MLP" --steps 30 --sleep-ms 100 \
		>"$WORK/stop.out" 2>"$WORK/stop.err" &
	local pid=$! tries
	for ((tries = 0; tries < 200; tries++)); do
		grep -q '^step 3 ' "$WORK/stop.out" && break
		sleep 0.1
	done
	kill -USR1 "$pid"
	local rc=0
	wait "$pid" || rc=$?
	cat "$WORK/stop.out" "$WORK/stop.err"
	[ "$rc" -eq 75 ]
	grep -q 'stop agreed at step' "$WORK/stop.err"
	grep -qE '^mlp_train: stopped after step [0-9]+, checkpoint committed$' "$WORK/stop.out"
	[ "$(grep -c '^final' "$WORK/stop.out")" -eq 0 ]
	local last
	last=$(awk '$1 == "step" {n = $2} END {print n}' "$WORK/stop.out")
	[ "$last" -lt 29 ]

	mlp ck-stop --steps 30
	show
	[ "$status" -eq 0 ]
	grep -q "^mlp_train: .*stopped: SIGUSR1 .*from step $((last + 1)) of 30\$" <<<"$output"
	diff <(echo "$whole") <(grep -E '^(step|final)' "$WORK/stop.out"; trace)
}

@test "mlp: LLMP_STEP_DEADLINE sets the runtime's timeout from the slowest step once 5 are timed; a bad one is refused" {
	# Steps of about 20 ms: 10 x the slowest is below the floor of 5 s.
	LLMP_STEP_DEADLINE=10 mlp ck --steps 12 --sleep-ms 20
	[ "$status" -eq 0 ] || { show; false; }
	[ "$(grep -c 'step deadline' <<<"$stderr")" -eq 1 ] || { show; false; }
	grep -q 'rank 0: step deadline 5.0 s: 10 x the slowest of 5 steps (0\.[0-9]* s)$' <<<"$stderr" || { show; false; }
	# Steps of about 1 s: 10 x the slowest, above the floor, below LLMP_TIMEOUT's 300 s.
	LLMP_STEP_DEADLINE=10 mlp ck2 --steps 7 --sleep-ms 700
	[ "$status" -eq 0 ] || { show; false; }
	local t
	t=$(sed -n 's/.*rank 0: step deadline \([0-9.]*\) s: 10 x the slowest of 5 steps (\([0-9.]*\) s)$/\1 \2/p' <<<"$stderr")
	python3 -c 'import sys; t, s = map(float, sys.argv[1:3]); assert s >= 0.7 and abs(t - 10 * s) < 0.06, (t, s)' $t ||
		{ show; false; }
	for bad in 1 0 -3 x 10s 1001; do
		LLMP_STEP_DEADLINE=$bad mlp ck3 --steps 3
		[ "$status" -ne 0 ] || { show; false; }
		grep -q "LLMP_STEP_DEADLINE='$bad': expected a factor from 2 to 1000" <<<"$stderr" || { show; false; }
	done
}

@test "mlp: the loss decreases" {
	mlp ck --steps 60
	show
	[ "$status" -eq 0 ]
	# the mean of the last 10 steps' losses is below half that of the first 10
	losses | awk '$1 < 10 {a += $2} $1 >= 50 {b += $2}
		END {printf "first 10: %g, last 10: %g\n", a / 10, b / 10; exit !(b < a / 2)}'
}

@test "mlp: a crash fault fires on the first run only, unless --fault-always" {
	mlp ck-whole --steps 8
	[ "$status" -eq 0 ]
	local whole
	whole=$(trace)

	# run 0 aborts at the start of step 5; checkpoints every 2 steps
	mlp ck,every=2 --steps 8 --crash-rank 0 --crash-step 5
	show
	[ "$status" -eq 134 ] # SIGABRT
	grep -q 'mlp_train: rank 0: --crash-rank: aborting at step 5' <<<"$stderr"
	[ "$(losses | tail -n 1 | cut -d' ' -f1)" -eq 4 ]

	# with --fault-always (alias --fail-always), run 1 crashes again
	RESTART=1 mlp ck,every=2 --steps 8 --crash-rank 0 --crash-step 5 --fail-always
	show
	[ "$status" -eq 134 ]
	grep -q 'aborting at step 5' <<<"$stderr"

	# without it, run 2 goes through and ends where the uninterrupted run did.
	# It resumes from the newest checkpoint committed before the crash: step 3's
	# if its writer thread had finished by the end of step 4, else step 1's.
	RESTART=2 mlp ck,every=2 --steps 8 --crash-rank 0 --crash-step 5
	show
	[ "$status" -eq 0 ]
	local from
	from=$(sed -n 's/.*resuming at step \([0-9]*\) from checkpoint.*/\1/p' <<<"$stderr")
	[ "$from" = 2 ] || [ "$from" = 4 ]
	diff <(from_step "$from" <<<"$whole") <(trace)
}

@test "mlp: a hang fault stops answering, even to SIGTERM" {
	# timeout sends SIGTERM after 3 s, which the job only notes; SIGKILL after 3 more
	run --separate-stderr env -u PMIX_RANK -u PMIX_NAMESPACE -u SLURM_JOB_ID \
		-u SLURM_RESTART_COUNT -u LLMP_RESTART_COUNT -u LLMP_PARALLEL \
		LLMP_CHECKPOINT="$WORK/ck" timeout -k 3 3 "$MLP" --steps 8 --hang-rank 0 --hang-step 2
	show
	[ "$status" -eq 137 ]
	grep -qE 'mlp_train: rank 0: --hang-rank: hanging at step 2 \(pid [0-9]+\)' <<<"$stderr"
	[ "$(losses | cut -d' ' -f1 | xargs)" = "0 1" ]
}

@test "mlp: a checkpoint of another model or data set is refused, naming the option" {
	mlp ck,every=5 --steps 5
	[ "$status" -eq 0 ]
	mlp ck,every=5 --steps 10 --seed 7
	show
	[ "$status" -eq 76 ]
	grep -q 'mlp_train: rank 0: the checkpoint was written with --seed 1, this run has --seed 7' \
		<<<"$stderr"
	mlp ck,every=5 --steps 10 --batch 32
	[ "$status" -eq 76 ]
	grep -q 'the checkpoint was written with --batch 64, this run has --batch 32' <<<"$stderr"
	mlp ck,every=5 --steps 10 --hidden 32
	show
	[ "$status" -eq 76 ]
	grep -q 'W1' <<<"$stderr"
}

@test "mlp: bad options are refused with a message naming them (exit 76, no requeue)" {
	local cases=(
		"--steps abc|--steps 'abc': expected an integer"
		"--steps -3|--steps '-3': expected an integer"
		"--hidden 0|--hidden 0: must be at least 1"
		"--batch 99999999|--batch '99999999': expected an integer from 0 to 65536"
		"--lr 0|--lr '0': expected a finite number above 0"
		"--lr nan|--lr 'nan': expected a finite number above 0"
		"--lr 1x|--lr '1x': expected a finite number above 0"
		"--bogus|unknown option '--bogus'"
		"-x|unknown option '-x'"
		"--steps|--steps needs a value"
		"extra|unexpected argument 'extra'"
		"--crash-rank 0|--crash-rank given without --crash-step"
		"--hang-step 3|--hang-step given without --hang-rank"
		"--steps 5 --crash-rank 0 --crash-step 5|--crash-step 5 is not below --steps 5"
		"--fault-always|--fault-always needs --hang-rank/--hang-step or --crash-rank/--crash-step"
	)
	local c args want
	for c in "${cases[@]}"; do
		args=${c%%|*} want=${c#*|}
		# shellcheck disable=SC2086 # the arguments are words
		mlp ck $args
		echo "$args -> $status: $stderr"
		[ "$status" -eq 76 ]
		grep -qF "mlp_train: $want" <<<"$stderr"
		[ -z "$output" ]
	done
	[ ! -e "$WORK/ck" ] # refused before the job started

	# what needs the world or the job is refused once they exist
	mlp ck --steps 5 --hang-rank 3 --hang-step 1
	[ "$status" -eq 76 ]
	grep -qF 'mlp_train: rank 0: --hang-rank 3: the world has 1 ranks' <<<"$stderr"
	mlp - --steps 5
	[ "$status" -eq 76 ]
	grep -q 'llmp_job_open: .*no checkpoint directory' <<<"$stderr"

	mlp - --help
	[ "$status" -eq 0 ]
	grep -q '^usage: mlp_train ' <<<"$output"
}

# ----------------------------------------------------------------------------
# Several ranks without Slurm: Open MPI's mpirun is a PMIx server libllmp
# joins like srun's. These check the tp and dp splits, where they exist.

need_mpirun() {
	mpirun --version 2>/dev/null | grep -q 'Open MPI' || skip "Open MPI's mpirun not found"
}

# Run mlp_train on NP ranks laid out as LAYOUT, checkpoints under
# $WORK/CKPT-SPEC ("-" for none). Slurm's variables are removed: with them
# mpirun would launch through srun.
mpi() { # NP LAYOUT CKPT-SPEC ARGS...
	local np=$1 layout=$2 spec=$3
	shift 3
	local opts=(--oversubscribe -np "$np" -x "LLMP_PARALLEL=$layout")
	[ "$(id -u)" -ne 0 ] || opts+=(--allow-run-as-root)
	[ "$spec" = - ] || opts+=(-x "LLMP_CHECKPOINT=$WORK/$spec")
	run --separate-stderr env -u SLURM_JOB_ID -u SLURM_JOBID -u SLURM_NODELIST \
		-u SLURM_RESTART_COUNT -u LLMP_RESTART_COUNT -u LLMP_CHECKPOINT \
		timeout -k 5 120 mpirun "${opts[@]}" "$MLP" "$@" </dev/null
}

# Equal within a relative tolerance, as numbers.
close() { # A B RTOL
	awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN {
		d = a - b; if (d < 0) d = -d
		m = (a < 0 ? -a : a); n = (b < 0 ? -b : b); if (n > m) m = n
		exit !(d <= r * m) }'
}

@test "mlp (mpirun): the gradient check passes with tp=2, dp=2 and tp=2 x dp=2" {
	need_mpirun
	for layout in "2 tp=2" "2 dp=2" "4 tp=2"; do
		read -r np spec <<<"$layout"
		mpi "$np" "$spec" - --grad-check --hidden 4 --in 3 --out 2 --batch 8
		show
		[ "$status" -eq 0 ]
		grep -qE '^grad-check max relative error [0-9.e+-]+ over 26 parameters ' <<<"$output"
		awk '/^grad-check/ { exit !($5 < 1e-5) }' <<<"$output"
	done
}

@test "mlp (mpirun): every layout starts from one model and trains to the same one" {
	need_mpirun
	# Before any step the parameters are exact functions of their global
	# indices: the gathered checksum is bit-identical whatever the split.
	mlp ck0 --steps 0
	[ "$status" -eq 0 ]
	local initial
	initial=$(grep '^final checksum' <<<"$output")
	[ -n "$initial" ]
	mlp ck1 --steps 20
	[ "$status" -eq 0 ]
	local one
	one=$(trace)
	for layout in "2 tp=2" "4 tp=4" "2 dp=2" "4 tp=2"; do
		read -r np spec <<<"$layout"
		mpi "$np" "$spec" "ck-$np-${spec/=/}" --steps 0
		show
		[ "$status" -eq 0 ]
		[ "$(grep '^final checksum' <<<"$output")" = "$initial" ]
		# After training, sums in another order: equal within rounding.
		mpi "$np" "$spec" "ck-$np-${spec/=/}" --steps 20
		[ "$status" -eq 0 ]
		grep -q "^mlp_train: .*$spec.* world=$np;" <<<"$output"
		[ "$(trace | grep -c '^step ')" -eq 20 ]
		paste -d' ' <(grep -E '^step ' <<<"$one") <(trace | grep -E '^step ') |
			while read -r _ n _ a _ m _ b; do
				[ "$n" = "$m" ] && close "$a" "$b" 1e-6 ||
					{ echo "$spec: step $n: loss $b, singleton $a"; exit 1; }
			done
		close "$(awk '/^final params sum/ {print $4}' <<<"$one")" \
			"$(trace | awk '/^final params sum/ {print $4}')" 1e-6
	done
}

@test "mlp (mpirun): a tp=2 x dp=2 checkpoint resumes in a world of one, resharded" {
	need_mpirun
	mpi 4 tp=2 ck-whole --steps 16
	show
	[ "$status" -eq 0 ]
	local whole
	whole=$(trace)
	mpi 4 tp=2 ck,every=8 --steps 8
	show
	[ "$status" -eq 0 ]
	mlp ck,every=8 --steps 16
	show
	[ "$status" -eq 0 ]
	grep -q 'resuming at step 8 from checkpoint step-7' <<<"$stderr"
	grep -q '^mlp_train: tp=1 dp=1 world=1;' <<<"$output"
	paste -d' ' <(from_step 8 <<<"$whole" | grep '^step ') <(trace | grep '^step ') |
		while read -r _ n _ a _ m _ b; do
			[ "$n" = "$m" ] && close "$a" "$b" 1e-6 ||
				{ echo "step $n: loss $b, uninterrupted $a"; exit 1; }
		done
	[ "$(trace | grep -c '^step ')" -eq 8 ]
	close "$(awk '/^final params sum/ {print $4}' <<<"$whole")" \
		"$(trace | awk '/^final params sum/ {print $4}')" 1e-6
}

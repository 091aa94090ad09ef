#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# sbatch --export=NONE and --export=VAR,... with --llm-* options.
# Slurm 22.05 and 23.02 keep only SLURM* names in the batch job's
# environment then, so the variable that carries an sbatch option to the
# batch step is dropped (fixed in 23.11 for NONE, 24.05 for lists). Seen
# here on 22.05.8: the srun steps inside still get the option, through its
# SLURM_SPANK_ copy, and the plugin reads that copy for the batch script's
# checkpoint variables. The expected values are the options given.

load cluster/common

setup_file() { cluster_setup_file; }
teardown_file() { cluster_teardown_file; }
setup() { cluster_setup; }
teardown() { cluster_teardown; }

# The batch script: no PATH under --export=NONE, so every program by its path.
write_job() {
	local srun sh
	srun=$(command -v srun)
	sh=$(command -v sh)
	cat >"$WORK/job.sh" <<-EOF
		#!$sh
		echo "batch CK=\${LLMP_CHECKPOINT_DIR-unset} KEEP=\${LLMP_CHECKPOINT_KEEP-unset} X=\${LLMP_X-unset}"
		$srun $sh -c 'echo "step \$SLURM_PROCID P=\${LLMP_PARALLEL-unset} TP=\${LLMP_TP_SIZE-unset} RANK=\${RANK-unset} CK=\${LLMP_CHECKPOINT_DIR-unset}"'
	EOF
	chmod 755 "$WORK/job.sh"
}

@test "sbatch --export=NONE and --export=VAR: the options reach the batch script and the steps" {
	write_job
	for export in ALL NONE LLMP_X; do
		rm -f "$WORK/out"
		LLMP_X=x run sbatch --wait -N2 -n2 --export=$export -o "$WORK/out" --llm-parallel=tp=2 \
			--llm-checkpoint="$WORK/ck,keep=3" "$WORK/job.sh"
		[ "$status" -eq 0 ] || { echo "$export: $output"; cat "$WORK/out"; false; }
		output=$(cat "$WORK/out")
		local x=unset
		[ "$export" = NONE ] || x=x
		grep -qx "batch CK=$WORK/ck KEEP=3 X=$x" <<<"$output" || { echo "$export: $output"; false; }
		for r in 0 1; do
			grep -qx "step $r P=tp=2 TP=2 RANK=$r CK=$WORK/ck" <<<"$output" || { echo "$export: $output"; false; }
		done
	done
}

@test "sbatch --export=NONE: a bad option is still refused by the steps, not ignored" {
	write_job
	# Valid at submission (tp=2 divides nothing sbatch can see), wrong for 3 tasks.
	run sbatch --wait -N3 -n3 --export=NONE -o "$WORK/out" --llm-parallel=tp=2 "$WORK/job.sh"
	output=$(cat "$WORK/out")
	grep -q 'llm_parallel: .*does not divide 3 tasks\|llm_parallel: .*3 tasks' <<<"$output" || { echo "$output"; false; }
	! grep -q '^step ' <<<"$output" || { echo "$output"; false; }
}

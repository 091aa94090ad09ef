#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The demo's story, on a local cluster that is already up (scripts/demo.sh
# starts one; tests/ft.bats runs the story on its own cluster):
#   1. the reference: examples/mlp_train through etc/examples/mlp-train.sbatch
#      with tp=2,dp=auto on 2 nodes x 2 tasks, uninterrupted;
#   2. the same training with --requeue and --llm-checkpoint; after step 12
#      the job's second node is killed (tests/cluster/cluster.sh kill-node),
#      Slurm marks it down and requeues the job, which resumes from its newest
#      checkpoint on the healthy nodes; then the node is started again;
#   3. a timeline and the verdict (report.py), which fails the story unless
#      the job was requeued, resumed from a checkpoint and ended with the
#      reference's checksum.
#
#   . STATEDIR/env && scripts/demo/story.sh WORKDIR
#
# WORKDIR gets the outputs, checkpoints and events (those of an earlier story
# there are removed first). MLP_TRAIN
# and LLMP_BIN default to the build in LLMP_BUILD_DIR (default build/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${LLMP_BUILD_DIR:-$src/build}
[ $# -eq 1 ] || { echo "usage: story.sh WORKDIR (with a cluster's env sourced)" >&2; exit 2; }
: "${LLMP_CLUSTER_STATEDIR:?story.sh: source the env of a running tests/cluster/cluster.sh first}"
export MLP_TRAIN=${MLP_TRAIN:-$build/examples/mlp_train} LLMP_BIN=${LLMP_BIN:-$build/cli/llmp}
# shellcheck disable=SC1091
. "$src/tests/cluster/mlp_job.bash"

readonly KILL_AFTER_STEP=12
# shellcheck disable=SC2054 # the commas are inside one option
readonly layout=(-N2 --ntasks-per-node=2 --llm-parallel=tp=2,dp=auto)
readonly training=(--steps 30 --sleep-ms 150)
work=$(mkdir -p "$1" && cd "$1" && pwd)
(cd "$work" && rm -rf reference.out reference-ckpt job.out ckpt events)
events=$work/events
victim="" victim_down=""

say() { echo "demo: $*"; }
fail() {
	echo "demo: FAILED: $*" >&2
	exit 1
}
# A command as a user would type it, paths inside the source tree relative to it.
show() {
	local words=("$@")
	echo "\$ ${words[*]//"$src/"/}"
}
# Something the story does, timed as it starts.
event() { echo "$(date +%s.%N) $*" >>"$events"; }

# Whatever happens, the cluster is left as found: no job of ours, every node up.
cleanup() {
	[ -z "${JOB:-}" ] || scancel "$JOB" >/dev/null 2>&1 || true
	[ -z "$victim_down" ] || "$src/tests/cluster/cluster.sh" start-node "$LLMP_CLUSTER_STATEDIR" "$victim" || true
}
trap cleanup EXIT

say "1. the reference: the same training, uninterrupted"
ref_ckpt=(--llm-checkpoint="$work/reference-ckpt,every=5")
show sbatch "${layout[@]}" "${ref_ckpt[@]}" "$MLP_SBATCH" "${training[@]}"
submit_mlp "$work/reference.out" "${layout[@]}" "${ref_ckpt[@]}" -- "${training[@]}" || fail "sbatch failed"
wait_job_gone "$JOB" 120 || fail "the reference job $JOB did not finish within 120 s"
ref_sum=$(grep '^final checksum' "$work/reference.out") ||
	fail "the reference job $JOB did not finish its training: $work/reference.out"
say "job $JOB done: $ref_sum"
JOB=""

say "2. the fault-tolerant job; a node is killed after step $KILL_AFTER_STEP"
ckpt=(--llm-checkpoint="$work/ckpt,every=5")
show sbatch --requeue "${layout[@]}" "${ckpt[@]}" "$MLP_SBATCH" "${training[@]}"
submitted=$(date +%s.%N)
submit_mlp "$work/job.out" --requeue "${layout[@]}" "${ckpt[@]}" -- "${training[@]}" || fail "sbatch failed"
echo "$submitted sbatch: job $JOB submitted" >"$events"
wait_line "$work/job.out" "^step $KILL_AFTER_STEP loss" 120 || fail "job $JOB never reached step $KILL_AFTER_STEP"
victim=$(scontrol show hostnames "$(squeue -h -j "$JOB" -o %N)" | tail -n1)
show tests/cluster/cluster.sh kill-node "$LLMP_CLUSTER_STATEDIR" "$victim"
event "$victim killed once step $KILL_AFTER_STEP was printed: SIGKILL to its slurmd, slurmstepd and ranks"
victim_down=yes
"$src/tests/cluster/cluster.sh" kill-node "$LLMP_CLUSTER_STATEDIR" "$victim" 2>/dev/null
say "waiting for Slurm to find $victim dead (SlurmdTimeout $(scontrol show config |
	awk -F' = ' '/^SlurmdTimeout/ {print $2}')) and to requeue job $JOB"
wait_line "$work/job.out" '^mlp-train\.sbatch: run 1 ' 180 || fail "job $JOB was not requeued within 180 s"
show tests/cluster/cluster.sh start-node "$LLMP_CLUSTER_STATEDIR" "$victim"
event "$victim started again (cluster.sh start-node)"
"$src/tests/cluster/cluster.sh" start-node "$LLMP_CLUSTER_STATEDIR" "$victim"
victim_down=""
wait_job_gone "$JOB" 120 || fail "job $JOB did not finish within 120 s of its requeue"
JOB=""

say "3. what happened"
python3 "$here/report.py" --reference "$work/reference.out" --job "$work/job.out" \
	--events "$events" --slurmctld-log "$LLMP_CLUSTER_STATEDIR/log/slurmctld.log" --node "$victim"

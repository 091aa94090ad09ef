#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The demo's story, on a local cluster that is already up (scripts/demo.sh
# starts one; tests/ft.bats runs the story on its own cluster):
#   1. the reference: examples/mlp_train through etc/examples/mlp-train.sbatch
#      with tp=2,dp=auto on 2 nodes x 2 tasks, uninterrupted;
#   2. the same training on 3 nodes, one of them a spare (LLMP_SPARES=1,
#      sbatch --no-kill: `llmp job run`, doc/fault-tolerance.md); after step
#      12 a node of the run that is not the batch host is killed
#      (tests/cluster/cluster.sh kill-node); llmp job run takes it out and
#      launches again on the spare, in the same allocation, from the newest
#      checkpoint; once training has resumed the node is started again (the
#      job never uses it again);
#   3. a timeline, the time of each phase of the recovery and the verdict
#      (report.py), which fails the story unless the batch script ran once,
#      a recovery happened in the allocation, the new run resumed from a
#      checkpoint, not on the lost node, and the job ended with the
#      reference's losses and checksum, bit for bit.
#
# With --requeue, step 2 is the older story: the job has no spare and is
# submitted with --requeue; after step 12 its second node is killed, Slurm
# marks it down (SlurmdTimeout) and requeues the job, which resumes from its
# newest checkpoint on the healthy nodes; then the node is started again.
# The verdict then asks for a requeue and a resumed second batch run.
#
#   . STATEDIR/env && scripts/demo/story.sh [--requeue] WORKDIR
#
# WORKDIR gets the outputs, checkpoints and events (those of an earlier story
# there are removed first). MLP_TRAIN
# and LLMP_BIN default to the build in LLMP_BUILD_DIR (default build/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${LLMP_BUILD_DIR:-$src/build}
story=allocation
[ "${1:-}" != --requeue ] || { story=requeue && shift; }
[ $# -eq 1 ] || { echo "usage: story.sh [--requeue] WORKDIR (with a cluster's env sourced)" >&2; exit 2; }
: "${LLMP_CLUSTER_STATEDIR:?story.sh: source the env of a running tests/cluster/cluster.sh first}"
export MLP_TRAIN=${MLP_TRAIN:-$build/examples/mlp_train} LLMP_BIN=${LLMP_BIN:-$build/cli/llmp}
# shellcheck disable=SC1091
. "$src/tests/cluster/mlp_job.bash"

readonly KILL_AFTER_STEP=12
# shellcheck disable=SC2054 # the commas are inside one option
readonly layout=(-N2 --ntasks-per-node=2 --llm-parallel=tp=2,dp=auto)
# The same layout on the run's 2 nodes; the third waits as a spare.
# shellcheck disable=SC2054
readonly spare_layout=(-N3 --no-kill --ntasks-per-node=2 --llm-parallel=tp=2,dp=auto)
readonly training=(--steps 30 --sleep-ms 150)
work=$(mkdir -p "$1" && cd "$1" && pwd)
(cd "$work" && rm -rf reference.out reference-ckpt job.out ckpt events)
events=$work/events
cluster_sh=$src/tests/cluster/cluster.sh
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
	[ -z "$victim_down" ] || "$cluster_sh" start-node "$LLMP_CLUSTER_STATEDIR" "$victim" || true
}
trap cleanup EXIT

kill_victim() {
	show tests/cluster/cluster.sh kill-node "$LLMP_CLUSTER_STATEDIR" "$victim"
	event "$victim killed once step $KILL_AFTER_STEP was printed: SIGKILL to its slurmd, slurmstepd and ranks"
	victim_down=yes
	"$cluster_sh" kill-node "$LLMP_CLUSTER_STATEDIR" "$victim" 2>/dev/null
}

start_victim() { # WHY
	show tests/cluster/cluster.sh start-node "$LLMP_CLUSTER_STATEDIR" "$victim"
	event "$victim started again (cluster.sh start-node)$1"
	"$cluster_sh" start-node "$LLMP_CLUSTER_STATEDIR" "$victim"
	victim_down=""
}

# Submit the job, time zero of the timeline, and wait for its step 12.
# SPARES: LLMP_SPARES for mlp-train.sbatch ("": none, srun and llmp job-end).
submit_job() { # SPARES sbatch option...
	local spares=$1 submitted
	shift
	show ${spares:+LLMP_SPARES=$spares} sbatch "$@" "$MLP_SBATCH" "${training[@]}"
	submitted=$(date +%s.%N)
	LLMP_SPARES=$spares submit_mlp "$work/job.out" "$@" -- "${training[@]}" || fail "sbatch failed"
	echo "$submitted sbatch: job $JOB submitted" >"$events"
	wait_line "$work/job.out" "^step $KILL_AFTER_STEP loss" 120 ||
		fail "job $JOB never reached step $KILL_AFTER_STEP"
}

# The new story: a spare in the allocation takes the lost node's place.
spare_story() {
	say "2. the job with a spare node; a node is killed after step $KILL_AFTER_STEP"
	submit_job 1 "${spare_layout[@]}" --llm-checkpoint="$work/ckpt,every=5"
	# The batch host runs llmp job run itself, and is never the one lost here.
	local batch
	batch=$(squeue -h -j "$JOB" -o %B)
	victim=$(active_nodes "$work/job.out" 0 | grep -vx "$batch" | head -n1) ||
		fail "no node of run 0 other than the batch host $batch in $work/job.out"
	kill_victim
	say "waiting for llmp job run to take $victim out and launch again on the spare"
	wait_line "$work/job.out" '^llmp job run: [^ ]*: run 1 on ' 60 ||
		fail "llmp job run did not launch a second run within 60 s"
	wait_line "$work/job.out" 'rank 0: run [0-9]+ \(.*\): resuming at step' 60 ||
		fail "the second run did not resume within 60 s"
	start_victim "; the job goes on without it"
	wait_job_gone "$JOB" 120 || fail "job $JOB did not finish within 120 s of its recovery"
	JOB=""
}

# The older story: Slurm finds the node dead and requeues the job.
requeue_story() {
	say "2. the fault-tolerant job; a node is killed after step $KILL_AFTER_STEP"
	submit_job "" --requeue "${layout[@]}" --llm-checkpoint="$work/ckpt,every=5"
	victim=$(scontrol show hostnames "$(squeue -h -j "$JOB" -o %N)" | tail -n1)
	kill_victim
	say "waiting for Slurm to find $victim dead (SlurmdTimeout $(scontrol show config |
		awk -F' = ' '/^SlurmdTimeout/ {print $2}')) and to requeue job $JOB"
	wait_line "$work/job.out" '^mlp-train\.sbatch: run 1 ' 180 || fail "job $JOB was not requeued within 180 s"
	start_victim ""
	wait_job_gone "$JOB" 120 || fail "job $JOB did not finish within 120 s of its requeue"
	JOB=""
}

say "1. the reference: the same training, uninterrupted"
ref_ckpt=(--llm-checkpoint="$work/reference-ckpt,every=5")
show sbatch "${layout[@]}" "${ref_ckpt[@]}" "$MLP_SBATCH" "${training[@]}"
submit_mlp "$work/reference.out" "${layout[@]}" "${ref_ckpt[@]}" -- "${training[@]}" || fail "sbatch failed"
wait_job_gone "$JOB" 120 || fail "the reference job $JOB did not finish within 120 s"
ref_sum=$(grep '^final checksum' "$work/reference.out") ||
	fail "the reference job $JOB did not finish its training: $work/reference.out"
say "job $JOB done: $ref_sum"
JOB=""

if [ "$story" = allocation ]; then spare_story; else requeue_story; fi

say "3. what happened"
python3 "$here/report.py" --story "$story" --reference "$work/reference.out" --job "$work/job.out" \
	--events "$events" --slurmctld-log "$LLMP_CLUSTER_STATEDIR/log/slurmctld.log" --node "$victim"

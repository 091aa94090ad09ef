#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# How long a stop request costs: from the signal to the job running again at
# the resumed step, on the local three-node Slurm cluster, broken down into
#   agreement   signal received -> stop agreed at the next step boundary
#   checkpoint  stop agreed -> the stop checkpoint committed
#   exit        committed -> the ranks leave together (barrier, run record)
#   requeue     the ranks' exit -> the batch script of the next run starts
#               (srun ends, `llmp job-end`, Slurm requeues and schedules)
#   start-up    batch start -> the runtime is up (srun, PMIx, llmp_init)
#   load        the checkpoint loaded by llmp_job_resume
# for examples/mlp_train (tp=2, dp=2 on 4 ranks over 2 nodes). doc/benchmarks.md
# records the figures. Needs root and a build (scripts/build.sh); waits for a
# test suite's cluster to go (tests/cluster/session.bash).
#   scripts/bench-requeue.sh [ROUNDS] [mlp_train options]   (default 3 rounds)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${LLMP_BUILD_DIR:-$src/build}
rounds=${1:-3}
shift || true
model=("$@")
[ ${#model[@]} -gt 0 ] || model=(--hidden 2048 --in 1024 --out 64 --batch 64)

[ "$(id -u)" -eq 0 ] || { echo "bench-requeue: needs root (the local cluster)" >&2; exit 1; }
[ -x "$build/examples/mlp_train" ] || LLMP_BUILD_DIR=$build "$src/scripts/build.sh" >/dev/null

# shellcheck disable=SC1091
. "$src/tests/cluster/session.bash"
# shellcheck disable=SC1091
. "$src/tests/cluster/mlp_job.bash"
start_script_cluster "$src" "$build" bench-requeue
state=$CLUSTER_STATE
export MLP_TRAIN=$build/examples/mlp_train LLMP_BIN=$build/cli/llmp

echo "# $(date -u +%F) $(uname -n): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "# $(scontrol --version); $(scontrol show config | grep -E '^(AuthInfo|SchedulerParameters) ' | tr -s ' ' | paste -sd';')"
echo "# mlp_train ${model[*]}, tp=2 dp=2, 4 ranks on 2 nodes, stop by scancel --signal=USR1"
for round in $(seq 1 "$rounds"); do
	out=$state/round$round.out
	submit_mlp "$out" -N2 --ntasks-per-node=2 --llm-parallel=tp=2 \
		--llm-checkpoint="$state/ckpt$round,every=50" -- --steps 60 --sleep-ms 100 "${model[@]}"
	wait_line "$out" '^step 20 loss'
	scancel --signal=USR1 "$JOB"
	wait_job_gone "$JOB"
	PYTHONPATH=$src/tests/ft python3 - "$out" "$round" <<'EOF'
import re, sys
from mlp_log import when

lines = open(sys.argv[1], errors="replace").read().splitlines()
def first(pattern, after=0.0):
    for line in lines:
        if re.search(pattern, line) and when(line) >= after:
            return line
    sys.exit(f"round {sys.argv[2]}: no line /{pattern}/ in {sys.argv[1]}")

sig_line = first(r"rank \d+: signal SIGUSR1 received at")
signal = when(sig_line.split(" received at ")[1])
agreed = when(first(r"rank 0: stop agreed at step"))
committed = when(first(r"rank 0: checkpoint step \d+ committed", agreed))
exited = when(first(r"rank 0: exit: stopped"))
batch = when(first(r"mlp-train.sbatch: run 1 ", exited))
resume_line = first(r"rank 0: run 1 \(.*resuming at step")
resumed = when(resume_line)
load = float(re.search(r"loaded in ([0-9.]+) s", resume_line).group(1))
phases = [("agreement", agreed - signal), ("checkpoint", committed - agreed),
          ("exit", exited - committed), ("requeue", batch - exited),
          ("start-up", resumed - load - batch), ("load", load)]
size = re.search(r"committed: ([0-9.]+ \w+) on this rank", first(r"rank 0: checkpoint step \d+ committed", agreed)).group(1)
print(f"round {sys.argv[2]}: total {resumed - signal:6.2f} s  " +
      "  ".join(f"{name} {secs:.3f}" for name, secs in phases) + f"  (checkpoint {size} per rank)")
EOF
done

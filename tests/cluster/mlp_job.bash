# SPDX-License-Identifier: BSD-3-Clause
# Submitting the example trainer (examples/mlp_train, through
# etc/examples/mlp-train.sbatch) to the local cluster and following it, for
# tests/ft.bats, scripts/demo/story.sh and scripts/bench-requeue.sh.
# Needs the cluster's env (SLURM_CONF) and MLP_TRAIN, LLMP_BIN exported.

MLP_SBATCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/etc/examples/mlp-train.sbatch

# Submit the example; sets JOB. Options up to "--" go to sbatch, the rest to mlp_train.
submit_mlp() { # OUT [sbatch option...] -- [program option...]
	local out=$1 sb=()
	# mlp-train.sbatch runs srun --mpi=pmix (a test's skip, from cluster/common).
	! declare -F need_mpi_pmix >/dev/null || need_mpi_pmix
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		sb+=("$1")
		shift
	done
	shift
	JOB=$(sbatch --parsable -o "$out" "${sb[@]}" "$MLP_SBATCH" "$@")
	[ -n "$JOB" ]
}

# Whether slurmctld says the job is no longer queued: squeue answered and
# listed nothing, or no longer knows the job. A squeue that could not reach a
# busy slurmctld prints nothing too: that is no answer, and the wait goes on.
job_gone() { # JOB
	local out
	if out=$(squeue -h -j "$1" 2>&1); then
		[ -z "$out" ]
	else
		grep -q 'Invalid job id' <<<"$out"
	fi
}

# Wait until the job has left the queue for good (a requeued job is pending,
# a completing one still has processes).
wait_job_gone() { # JOB [seconds]
	local i
	for ((i = 0; i < ${2:-180} * 2; i++)); do
		job_gone "$1" && return 0
		sleep 0.5
	done
	echo "job $1 still queued after ${2:-180} s:" >&2
	squeue -j "$1" >&2 || true
	return 1
}

# Wait until a line matching REGEX is in FILE.
wait_line() { # FILE REGEX [seconds]
	local i
	for ((i = 0; i < ${3:-120} * 5; i++)); do
		if grep -Eq "$2" "$1" 2>/dev/null; then
			return 0
		fi
		sleep 0.2
	done
	echo "no line /$2/ in $1 after ${3:-120} s:" >&2
	tail -n 30 "$1" >&2 || true
	return 1
}

runs_of() { # OUT: how many runs rank 0 started
	grep -c 'rank 0: run [0-9]* (' "$1"
}

# The nodes run N of `llmp job run` ran on, one per line, from its log line
# `llmp job run: TIME: run N on NODES (...)`.
active_nodes() { # OUT N
	local list
	list=$(sed -n "s/^llmp job run: [^ ]*: run $2 on \([^ ]*\) .*/\1/p" "$1" | head -n1)
	[ -n "$list" ] && scontrol show hostnames "$list"
}

# Runs of the job that its run record ended at once (`llmp job-end
# --finished` in mlp-train.sbatch): Slurm 24.05 and later requeue a job
# preempted earlier with a GraceTime once more after it completed. Prints
# 0 or 1 and checks that such a run came after the training finished,
# said so in one line and started no rank.
completion_requeues_ended() { # OUT
	local ended after
	ended=$(grep -c '^llmp job-end: job [0-9]* finished in run [0-9]* at step .*: ending this run at once$' "$1")
	[ "$ended" -le 1 ] || { echo "$ended runs ended as completion requeues:" >&2; cat "$1" >&2; return 1; }
	if [ "$ended" -eq 1 ]; then
		after=$(sed -n '/^final checksum/,$p' "$1" | grep -c 'ending this run at once$')
		[ "$after" -eq 1 ] || { echo "a run ended as finished before the training did:" >&2; cat "$1" >&2; return 1; }
		! sed -n '/ending this run at once$/,$p' "$1" | grep -q 'rank [0-9]*: ' ||
			{ echo "ranks ran after the completion requeue:" >&2; cat "$1" >&2; return 1; }
	fi
	echo "$ended"
}

# Pid of a task of the running mlp_train whose environment has NAME=VALUE
# (all nodes share a kernel): LLMP_RANK=3, SLURMD_NODENAME=node1.
mlp_task_pid() { # NAME=VALUE
	local pid
	for pid in $(pgrep -x mlp_train); do
		if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "$1"; then
			echo "$pid"
			return 0
		fi
	done
	return 1
}
rank_pid() { mlp_task_pid "LLMP_RANK=$1"; }            # R
task_pid_on() { mlp_task_pid "SLURMD_NODENAME=$1"; } # NODE

# Seconds from the `date +%s.%N` given to now, to a tenth.
seconds_since() { # T
	python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$1"
}

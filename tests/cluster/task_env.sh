#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run as each task of a step: print the variables the plugin is responsible
# for, as lines "task SLURM_PROCID NAME=VALUE NAME=VALUE ..." (check_env.py
# joins a task's lines). Unset variables print as NAME=<unset>, so their
# absence is checked too.
#
# Why several lines: slurmstepd forwards a task's output to srun in messages
# of at most 1 KiB, whole lines when they fit, and srun interleaves the
# messages of the tasks. A line longer than that arrives in pieces, and
# another task's line can land between them; so each line here stays well
# under 1 KiB (and dash writes a line under 1 KiB with one write).

# Print one line of the named variables.
show() {
	out="task ${SLURM_PROCID:-?}"
	for name in "$@"; do
		eval "value=\${$name-<unset>}"
		out="$out $name=$value"
	done
	echo "$out"
}

show SLURMD_NODENAME SLURM_LOCALID SLURM_STEP_NUM_TASKS SLURM_NODEID \
	LLMP_PARALLEL LLMP_ORDER LLMP_WORLD_SIZE LLMP_RANK LLMP_LOCAL_RANK \
	LLMP_LOCAL_WORLD_SIZE LLMP_NODE_RANK LLMP_NNODES LLMP_VPP_SIZE LLMP_PLACEMENT
show LLMP_TP_SIZE LLMP_TP_RANK LLMP_CP_SIZE LLMP_CP_RANK LLMP_EP_SIZE LLMP_EP_RANK \
	LLMP_DP_SIZE LLMP_DP_RANK LLMP_PP_SIZE LLMP_PP_RANK \
	LLMP_EXPERT_TP_SIZE LLMP_EXPERT_TP_RANK LLMP_EXPERT_DP_SIZE LLMP_EXPERT_DP_RANK
show LLMP_LAYOUT_FILE RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE \
	GROUP_RANK MASTER_ADDR MASTER_PORT CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS
show GROUP_WORLD_SIZE ROLE_NAME ROLE_RANK ROLE_WORLD_SIZE LOCAL_SIZE CROSS_RANK CROSS_SIZE \
	OMP_NUM_THREADS SLURM_CPUS_PER_TASK TORCHELASTIC_USE_AGENT_STORE
show LLMP_CHECKPOINT LLMP_CHECKPOINT_DIR LLMP_CHECKPOINT_EVERY LLMP_CHECKPOINT_KEEP \
	LLMP_MAX_RESTARTS LLMP_RESTART_COUNT SLURM_RESTART_COUNT
# The one value with spaces, written with + for them.
echo "task ${SLURM_PROCID:-?} LLMP_MEGATRON_ARGS=$(printf '%s' "${LLMP_MEGATRON_ARGS-<unset>}" | tr ' ' '+')"
# The layout file must be complete when the task starts: keep a copy from rank 0.
if [ "${SLURM_PROCID:-}" = 0 ] && [ -n "${LLMP_LAYOUT_FILE:-}" ] && [ -n "${LLMP_TEST_COPY:-}" ]; then
	cp "$LLMP_LAYOUT_FILE" "$LLMP_TEST_COPY"
fi

#!/bin/sh
# Run as each task of a step: print the variables the plugin is responsible
# for, one line per task, as "task SLURM_PROCID NAME=VALUE NAME=VALUE ...".
# Unset variables print as NAME=<unset>, so their absence is checked too.
out="task ${SLURM_PROCID:-?}"
for name in SLURMD_NODENAME SLURM_LOCALID SLURM_STEP_NUM_TASKS SLURM_NODEID \
	LLMP_PARALLEL LLMP_ORDER LLMP_WORLD_SIZE LLMP_RANK LLMP_LOCAL_RANK \
	LLMP_LOCAL_WORLD_SIZE LLMP_NODE_RANK LLMP_NNODES \
	LLMP_TP_SIZE LLMP_TP_RANK LLMP_CP_SIZE LLMP_CP_RANK LLMP_EP_SIZE LLMP_EP_RANK \
	LLMP_DP_SIZE LLMP_DP_RANK LLMP_PP_SIZE LLMP_PP_RANK \
	LLMP_EXPERT_TP_SIZE LLMP_EXPERT_TP_RANK LLMP_EXPERT_DP_SIZE LLMP_EXPERT_DP_RANK \
	LLMP_VPP_SIZE LLMP_LAYOUT_FILE RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE \
	GROUP_RANK MASTER_ADDR MASTER_PORT CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS; do
	eval "value=\${$name-<unset>}"
	out="$out $name=$value"
done
echo "$out"
# The layout file must be complete when the task starts: keep a copy from rank 0.
if [ "${SLURM_PROCID:-}" = 0 ] && [ -n "${LLMP_LAYOUT_FILE:-}" ] && [ -n "${LLMP_TEST_COPY:-}" ]; then
	cp "$LLMP_LAYOUT_FILE" "$LLMP_TEST_COPY"
fi

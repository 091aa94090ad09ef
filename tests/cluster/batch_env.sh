#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run from a batch script: print the variables the plugin may set in the batch
# step itself, on one line, as "batch NAME=VALUE NAME=VALUE ...". Unset
# variables print as NAME=<unset>, so their absence is checked too.
out="batch"
for name in LLMP_CHECKPOINT LLMP_CHECKPOINT_DIR LLMP_CHECKPOINT_EVERY LLMP_CHECKPOINT_KEEP \
	LLMP_MAX_RESTARTS LLMP_RESTART_COUNT SLURM_RESTART_COUNT LLMP_PARALLEL LLMP_RANK \
	RANK MASTER_ADDR; do
	eval "value=\${$name-<unset>}"
	out="$out $name=$value"
done
echo "$out"

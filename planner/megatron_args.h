/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * megatron_args.h - Megatron-LM's command-line flags for a layout and for
 * what the step model assumed of it: what the plugin hands a step
 * (LLMP_MEGATRON_ARGS) and what `llmp plan` prints, from one place. Not
 * installed.
 */
#ifndef LLMP_MEGATRON_ARGS_H
#define LLMP_MEGATRON_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include <llmp/llmp_plan.h>
#include "step_model.h"

/*
 * The layout's flags ("--tensor-model-parallel-size 2 --pipeline-model-
 * parallel-size 4 ..."), keys at their default left out, so older Megatron
 * versions accept what they do not know of. -1 where Megatron cannot state
 * the plan's order (it knows tp-cp-ep-dp-pp, its default, and with
 * --use-tp-pp-dp-mapping tp-cp-ep-pp-dp) or the flags do not fit len.
 */
int megatron_layout_args(const llmp_plan *plan, char *out, size_t len);

/*
 * The flags for what the estimate of the checked layout l assumed of model
 * m: the batch sizes, sequence parallelism, the distributed optimizer or
 * Megatron-FSDP, the dp overlap, recompute, uneven first and last stages
 * (l->stage_layers, or Megatron's split when pp does not divide the
 * layers); under engine=deepspeed Megatron-DeepSpeed's spelling; none
 * under engine=torch. *stages_said (may be NULL): the flags state
 * l->stage_layers. Returns false when they do not fit len: out is then
 * not to be used.
 */
bool megatron_model_args(const struct model_desc *m, const struct step_layout *l, char *out, size_t len,
			 bool *stages_said);

#endif /* LLMP_MEGATRON_ARGS_H */

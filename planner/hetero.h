/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hetero.h - a pipeline on a cluster that mixes GPU kinds: which GPU each
 * stage runs on (the weakest of its ranks'), and how many layers each stage
 * gets so the stages finish together and each fits its own GPU's memory.
 * Megatron says such a split with --decoder-first-pipeline-num-layers and
 * --decoder-last-pipeline-num-layers when only the ends differ; otherwise
 * the layout carries the list of layers per stage. Not installed.
 */
#ifndef LLMP_HETERO_H
#define LLMP_HETERO_H

#include <stdbool.h>
#include <stddef.h>

#include <llmp/llmp_plan.h>
#include <llmp/llmp_status.h>
#include "model_desc.h"
#include "placement.h"
#include "step_model.h"
#include "topology/topo.h"

/* acc becomes the weaker of acc and g in every respect: rate, memory, links, NVLink domain. */
void hetero_weakest(struct gpu_desc *acc, const struct gpu_desc *g);

/* Whether the pp stages' GPUs differ in memory or rate (bf16 x efficiency). */
bool hetero_mixed(const struct gpu_desc *stage_gpus, unsigned pp);

/*
 * The GPU of each pipeline stage of plan placed by p on t: the weakest of
 * its ranks' node types' "gpu"; a type without one takes fallback (NULL:
 * an error naming the type). stage_gpus has room for the plan's pp.
 */
llmp_status hetero_stage_gpus(const struct topo *t, const struct plan_placement *p, const llmp_plan *plan,
			      const struct gpu_desc *fallback, struct gpu_desc *stage_gpus, char *msg,
			      size_t len);

/*
 * The layers of each of l->pp stages on stage_gpus, into layers[pp]: each
 * stage starts with vpp layers and every next vpp go to the stage that,
 * with them, finishes its micro-batch soonest and still fits its GPU (the
 * least over its memory when none would). l is checked (step_layout_check);
 * its stage_layers is ignored. An error when the layers cannot give each
 * stage a multiple of vpp.
 */
llmp_status hetero_split(const struct model_desc *m, const struct gpu_desc *stage_gpus,
			 const struct step_layout *l, unsigned *layers, char *msg, size_t len);

/*
 * How Megatron is told layers[0..pp): "" when every stage has the same,
 * "--decoder-first-pipeline-num-layers A --decoder-last-pipeline-num-layers B"
 * when the middle stages do (returns true); else false, and buf holds the
 * list "A,B,C,..." the layout file carries (stage_layers).
 */
bool hetero_megatron_args(const unsigned *layers, unsigned pp, char *buf, size_t len);

#endif /* LLMP_HETERO_H */

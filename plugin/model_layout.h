/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model_layout.h - what the submitting side makes of --llm-model (or
 * LLMP_MODEL): with --llm-parallel=auto, the layout the step model
 * (planner/step_model.h) finds fastest among those that fit; with a
 * layout the user wrote, whether it fits the GPU's memory (the guard).
 *
 * Runs in srun and sbatch, the user's own processes: a model given as a
 * config.json path is read here and never in slurmstepd. srun knows the
 * step's task count and decides; sbatch does not, and refuses only what
 * cannot fit at any job size (the data-parallel size that shards the
 * optimizer the most), leaving the rest to each srun.
 *
 * Pure (no Slurm), so unit-tested in tests/unit/test_plugin_model.c.
 */
#ifndef LLMP_PLUGIN_MODEL_LAYOUT_H
#define LLMP_PLUGIN_MODEL_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_spec.h>
#include "model_machines.h"
#include "site.h"

#define PLUGIN_MODEL_ARGS_MAX 512 /* LLMP_MODEL_ARGS, bytes with the NUL */
#define PLUGIN_PEAKS_MAX 6144     /* LLMP_MODEL_PEAKS, bytes with the NUL: 128 stages of "name:MiB," */

struct plugin_model_request {
	const char *model;        /* --llm-model or LLMP_MODEL; NULL: none given */
	const char *model_source; /* which of them, for messages */
	const char *gpu;          /* LLMP_GPU or the site's gpu=; NULL: unknown */
	const char *gpu_source;
	bool choose_layout;    /* --llm-parallel=auto */
	const llmp_spec *spec; /* the resolved layout when not choose_layout */
	uint32_t world;        /* the step's tasks; 0 when unknown (sbatch, salloc) */
	/* The step's nodes on a topology file, when one is named: srun scores
	 * each layout with its placement's network and its stages' GPUs, and
	 * sbatch leaves a job without rq->gpu to srun (the node types may say
	 * it); NULL: none, every GPU is rq->gpu and the network modelled. */
	const struct plugin_machines_request *machines;
	/* --llm-guard=warn: the user runs a written layout the memory guard would
	 * refuse, with a warning (refused where the site says guard_override=no) */
	bool guard_override;
};

/* What the memory guard made of a written layout that does not fit by the estimate, for LLMP_MODEL_GUARD. */
#define PLUGIN_GUARD_DOUBTFUL "doubtful"     /* fits at the favourable end of the model's error */
#define PLUGIN_GUARD_OVERRIDDEN "overridden" /* does not: run on the user's --llm-guard=warn */
#define PLUGIN_GUARD_WARNED "warned"         /* does not: run on the site's guard=warn */
#define PLUGIN_GUARD_OFF "off"               /* the site's guard=off: not checked */

struct plugin_model_answer {
	bool decided;     /* false: nothing to hand the step (no model, or no task count yet) */
	llmp_spec layout; /* choose_layout: the choice, every size given */
	/* Megatron-LM's flags for what the estimate assumed (micro-batch, global batch,
	 * recompute, uneven first/last stages, sequence parallelism, distributed
	 * optimizer), for LLMP_MODEL_ARGS; "" when not decided */
	char megatron[PLUGIN_MODEL_ARGS_MAX];
	bool megatron_cut; /* the flags did not fit megatron: refused, never handed on cut */
	char note[768];    /* one line for the user: the choice or the estimate; "" for none */
	/* one line before it: the topology named and not used, or the memory guard's
	 * doubt or override; "" for none */
	char warning[1024];
	/* a written layout beyond the estimate: one of PLUGIN_GUARD_*; "" otherwise */
	char guard[16];
	/* On mixed GPUs, the layers of each stage ("10,12,12,6") when the split
	 * is not even, for LLMP_STAGE_LAYERS; "" otherwise */
	char stage_layers[PLUGIN_MODEL_ARGS_MAX];
	bool flags_say_stages; /* Megatron's first/last stage flags in megatron say them */
	/* Each stage's GPU and peak MiB per rank, "h100:61234,h100:58000", for
	 * LLMP_MODEL_PEAKS (plugin/gpu_check.h); "" when not decided or too long */
	char peaks[PLUGIN_PEAKS_MAX];
};

/*
 * Decide for a request. Returns 0 with *a filled, or -1 with msg saying why
 * the job cannot run as asked: an unreadable model or GPU, auto without a
 * model or GPU, a layout Megatron refuses for this model, or one that cannot
 * fit even at the favourable end of the model's memory error
 * (planner/mem_guard.h; the site's guard= and guard_band=): its peak, the
 * stage, the largest term and what lowers it named. One that may not fit is
 * decided with a warning, and its peaks for the tasks' check are the
 * favourable end's. With rq->machines,
 * the node types' "gpu" come first and rq->gpu is for types without one;
 * machines that cannot be used (a file that does not describe the step's
 * nodes) leave the decision to rq->gpu with a warning in the note.
 */
int plugin_model_decide(const struct plugin_site *site, const struct plugin_model_request *rq,
			struct plugin_model_answer *a, char *msg, size_t msglen);

#define PLUGIN_STAGES_MAX 128 /* stages LLMP_STAGE_LAYERS may name (2 bytes each at least) */

/*
 * LLMP_STAGE_LAYERS ("7,1") for a pipeline of pp stages into layers[pp]:
 * decimal counts, each at least 1, exactly pp of them, pp at most
 * PLUGIN_STAGES_MAX. Returns 0, or -1 with msg saying why.
 */
int plugin_stage_layers_parse(const char *text, uint32_t pp, uint32_t *layers, char *msg, size_t msglen);

/* Is text a valid LLMP_MODEL_ARGS value (what plugin_model_decide writes: [a-z0-9_ -])? */
bool plugin_model_args_valid(const char *text);

#endif /* LLMP_PLUGIN_MODEL_LAYOUT_H */

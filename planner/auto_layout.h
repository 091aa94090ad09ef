/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * auto_layout.h - `--parallel auto`: every layout Megatron accepts for a
 * model on a world of GPUs, scored by the step model (step_model.h), the
 * fastest that fits first. Not installed.
 *
 * Searched: tp dividing heads and kv-heads, inside one NVLink domain; pp
 * up to the layers (uneven first/last stages allowed); cp with seq
 * divisible by 2 cp; ep dividing experts with etp 1 or tp; vpp dividing
 * layers / pp; mbs 1, 2, 4, 8 dividing gbs / dp; selective and full
 * recompute unless the model names one. dp is what is left.
 *
 * The choice is the fastest that fits, except among near-ties: of the
 * layouts within CHOOSER_TIE_BAND of the fastest, the one with the fewest
 * pipeline stages (then the fastest of those). The band is below what a
 * measurement resolves (one BigScience layout measured twice, 110.48 and
 * 113.54 s: 2.8% apart) and far below the model's own error; a deeper
 * pipeline adds a fill and drain, a stage boundary's p2p hops and a stage
 * whose load can drift, which the model prices at their ideal.
 */
#ifndef LLMP_AUTO_LAYOUT_H
#define LLMP_AUTO_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "step_model.h"

#define CHOOSER_TIE_BAND 0.01 /* 1%: near-ties, see above */

struct chooser_candidate {
	struct step_layout layout;
	struct step_estimate est;
	unsigned *stage_layers; /* on mixed GPUs: hetero_split's layers (layout.stage_layers); NULL: even */
	unsigned zero; /* what dp x cp shards here: the model's zero, or under zero=auto the one tried */
};

struct chooser_result {
	/* the choice first when one fits, then the other fitting ones by step time, then the rest by memory */
	struct chooser_candidate *all;
	size_t n;
	size_t fitting; /* the first `fitting` of all fit; all[0] is the choice when fitting > 0 */
};

/* Needs m->gbs. On success free the result with chooser_result_free. */
llmp_status chooser_run(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			struct chooser_result *r, char *msg, size_t len);
void chooser_result_free(struct chooser_result *r);

/*
 * The machines a candidate is placed on (e.g. a topology file, cost.c):
 * place gives the network seconds (tp, cp, ep, dp, pp) of checked layout l
 * there, and the GPU of each of its l->pp stages into stage_gpus. A
 * failure drops the candidate; when every one fails, the first message is
 * chooser_run_on's.
 */
struct chooser_machines {
	llmp_status (*place)(void *ctx, const struct step_layout *l, double network_s[5],
			     struct gpu_desc *stage_gpus, char *msg, size_t len);
	void *ctx;
};

/*
 * chooser_run scoring each candidate on the machines (on NULL: as
 * chooser_run): its network from place, each stage on its own GPU, and on
 * mixed GPUs the layers split by hetero_split. g bounds the search (tp
 * inside g->domain): the weakest of the machines' GPUs.
 */
llmp_status chooser_run_on(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			   const struct chooser_machines *on, struct chooser_result *r, char *msg,
			   size_t len);

/*
 * The near-tie rule, for a list in any order: whether a layout of step
 * seconds and pp stages beats the pick so far, with fastest the list's
 * fastest step: within CHOOSER_TIE_BAND of it, fewer stages, then faster.
 */
bool chooser_tie_prefers(double step, unsigned pp, double pick_step, unsigned pick_pp, double fastest);

/* c's layout as step_layout_format writes it, and ",zero=N" when the chooser picked the sharding. */
void chooser_candidate_format(const struct chooser_candidate *c, bool zero_auto, char *buf, size_t len);

/* Why c lost to best, in a short sentence: memory over the GPU's, or the term that costs it the most time. */
void chooser_why_lost(const struct chooser_candidate *c, const struct chooser_candidate *best,
		      const struct gpu_desc *g, char *buf, size_t len);

#endif /* LLMP_AUTO_LAYOUT_H */

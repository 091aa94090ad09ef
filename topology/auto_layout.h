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
 */
#ifndef LLMP_AUTO_LAYOUT_H
#define LLMP_AUTO_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "step_model.h"

struct auto_candidate {
	struct step_layout layout;
	struct step_estimate est;
};

struct auto_result {
	struct auto_candidate *all; /* sorted: fitting ones by step time, then the rest by memory */
	size_t n;
	size_t fitting; /* the first `fitting` of all fit; all[0] is the choice when fitting > 0 */
};

/* Needs m->gbs. On success free the result with auto_result_free. */
llmp_status auto_layout(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			struct auto_result *r, char *msg, size_t len);
void auto_result_free(struct auto_result *r);

/* Why c lost to best, in a short sentence: memory over the GPU's, or the term that costs it the most time. */
void auto_why_lost(const struct auto_candidate *c, const struct auto_candidate *best,
		   const struct gpu_desc *g, char *buf, size_t len);

#endif /* LLMP_AUTO_LAYOUT_H */

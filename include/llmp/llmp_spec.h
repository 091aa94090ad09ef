/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_spec.h - the --llm-parallel option grammar.
 *
 *     tp=N,pp=N,cp=N,ep=N,etp=N,dp=N|auto,order=tp-cp-ep-dp-pp,vpp=N
 *
 * Any subset, in any order; every size defaults to 1, dp to auto, etp to tp and
 * order to Megatron-Core's "tp-cp-ep-dp-pp". The single word "help" asks for
 * the grammar. One parser serves the plugin, the runtime and the CLI, so a
 * layout means the same thing everywhere.
 *
 * Parsing happens in two steps because a layout may be assembled from several
 * sources (site defaults < LLMP_PARALLEL < command line): each source is parsed
 * on its own with llmp_spec_parse_partial(), layered with llmp_spec_overlay(),
 * and the result is checked once with llmp_spec_check(). llmp_spec_parse() does
 * all three for a single source.
 */
#ifndef LLMP_SPEC_H
#define LLMP_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmp_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dimensions an order names. The enum order is only an index. */
enum llmp_dim { LLMP_DIM_TP, LLMP_DIM_CP, LLMP_DIM_EP, LLMP_DIM_DP, LLMP_DIM_PP, LLMP_NDIMS };

/* The keys of the grammar; a spec records which ones were given. */
enum llmp_key {
	LLMP_KEY_TP,
	LLMP_KEY_CP,
	LLMP_KEY_EP,
	LLMP_KEY_DP,
	LLMP_KEY_PP,
	LLMP_KEY_ETP,
	LLMP_KEY_ORDER,
	LLMP_KEY_VPP,
	LLMP_NKEYS
};

#define LLMP_SPEC_MAX_LEN 256    /* longest accepted text, in bytes */
#define LLMP_SIZE_MAX (1u << 20) /* largest accepted size of one dimension */

typedef struct llmp_spec {
	uint32_t size[LLMP_NDIMS]; /* 1 by default; size[LLMP_DIM_DP] is 0 while auto */
	uint32_t etp;              /* expert tensor parallel size; 0 means "same as tp" */
	uint32_t vpp;              /* virtual pipeline stages; 0 means not set */
	enum llmp_dim order[LLMP_NDIMS];
	unsigned order_len; /* dimensions the order names; 0 = default order */
	unsigned given;     /* bit (1u << LLMP_KEY_x) for each key given */
	bool help;          /* the text was "help" */
} llmp_spec;

/* Name of a dimension ("tp", "cp", ...) and of a key ("tp", ..., "order", "vpp"). */
const char *llmp_dim_name(enum llmp_dim dim);
const char *llmp_key_name(enum llmp_key key);

/* The defaults: every size 1, dp auto, etp = tp, default order, no vpp. */
void llmp_spec_init(llmp_spec *spec);

/*
 * Parse one source without cross-key checks. On failure *spec is left as
 * initialised by llmp_spec_init() and msg (if not NULL) says which item and why.
 */
llmp_status llmp_spec_parse_partial(const char *text, llmp_spec *spec, char *msg, size_t msglen);

/* Keys given in top replace those of base; keys top leaves out are kept. */
void llmp_spec_overlay(llmp_spec *base, const llmp_spec *top);

/*
 * Cross-key checks that need no world size: an order must name every dimension
 * whose size is not 1, and vpp needs pp > 1.
 */
llmp_status llmp_spec_check(const llmp_spec *spec, char *msg, size_t msglen);

/* parse_partial + check, for a layout that comes from one source. */
llmp_status llmp_spec_parse(const char *text, llmp_spec *spec, char *msg, size_t msglen);

/*
 * Write the keys that were given, canonically ("tp=2,pp=2,order=tp-cp-ep-dp-pp");
 * parsing the result gives back an equal spec. Returns the length written
 * (excluding the NUL), or the length needed if buflen is too small, like snprintf.
 */
size_t llmp_spec_format(const llmp_spec *spec, char *buf, size_t buflen);

/* True when both specs mean the same layout request. */
bool llmp_spec_equal(const llmp_spec *a, const llmp_spec *b);

/* The grammar, as printed for --llm-parallel=help and `llmp plan --parallel help`. */
const char *llmp_spec_grammar(void);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_SPEC_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_ckpt_spec.h - the --llm-checkpoint option grammar.
 *
 *     DIR[,every=N|Nmin][,keep=N][,restarts=N][,files=rank|node]
 *        [,stripe=COUNT[:SIZE][:POOL]]
 *
 *   DIR         the checkpoint root (one directory per step below it);
 *               relative to the job's working directory unless absolute
 *   every=N     a checkpoint every N steps; every=Nmin: every N minutes
 *               (rank 0's clock decides, all ranks agree at a step
 *               boundary). Unset: only when the job is asked to stop.
 *   keep=N      complete checkpoints kept (default 2)
 *   restarts=N  consecutive failed runs without a new checkpoint after
 *               which the job is no longer requeued (default 3; 0: never
 *               requeue after a failure)
 *   files=node  one shard file per node instead of one per rank (default
 *               files=rank): fewer files on a parallel filesystem
 *   stripe=COUNT[:SIZE][:POOL]
 *               on Lustre, the layout every step directory gives the files
 *               created in it: COUNT OSTs (-1: all), SIZE bytes per stripe
 *               (K, M, G suffixes; a multiple of 64K), from OST pool POOL
 *               (stripe=8::flash: a pool, the default size). Elsewhere it is
 *               ignored with a warning (doc/checkpoint.md, Filesystem hints).
 *
 * DIR may also be given as dir=DIR, and may come last. Like the layout, the
 * option is assembled from several sources (site defaults < LLMP_CHECKPOINT
 * < --llm-checkpoint): parse each with llmp_ckpt_spec_parse_partial(), layer
 * them with llmp_ckpt_spec_overlay(), then llmp_ckpt_spec_check() once, which
 * fills the defaults. The plugin and the runtime use this one parser.
 */
#ifndef LLMP_CKPT_SPEC_H
#define LLMP_CKPT_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmp_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LLMP_CKPT_DIR_MAX 1024                           /* bytes of DIR, NUL included */
#define LLMP_CKPT_SPEC_MAX_LEN (LLMP_CKPT_DIR_MAX + 160) /* the canonical text of any DIR fits */
#define LLMP_CKPT_DEFAULT_KEEP 2
#define LLMP_CKPT_DEFAULT_RESTARTS 3
#define LLMP_CKPT_NUMBER_MAX 1000000000u /* largest every, keep or restarts */
#define LLMP_CKPT_STRIPE_COUNT_MAX 2000  /* Lustre's most OSTs in one layout */
#define LLMP_CKPT_STRIPE_UNIT 65536u     /* a stripe size is a multiple of 64 KiB */
#define LLMP_CKPT_STRIPE_POOL_MAX 16     /* bytes of a pool name, NUL included (Lustre: 15) */

/* Which keys a (partial) spec was given, as bits of llmp_ckpt_spec.given. */
enum {
	LLMP_CKPT_GIVEN_DIR = 1u << 0,
	LLMP_CKPT_GIVEN_EVERY = 1u << 1,
	LLMP_CKPT_GIVEN_KEEP = 1u << 2,
	LLMP_CKPT_GIVEN_RESTARTS = 1u << 3,
	LLMP_CKPT_GIVEN_FILES = 1u << 4,
	LLMP_CKPT_GIVEN_STRIPE = 1u << 5,
};

typedef struct llmp_ckpt_spec {
	char dir[LLMP_CKPT_DIR_MAX];
	uint32_t every;        /* 0: only when stopping */
	bool every_minutes;    /* every counts minutes, not steps */
	uint32_t keep;         /* >= 1 once checked */
	uint32_t max_restarts; /* consecutive failed runs tolerated */
	unsigned given;        /* LLMP_CKPT_GIVEN_* */
	bool help;             /* the text was "help": print the grammar */
	bool node_files;       /* files=node: a shard file per node (llmp_ckpt_opts.files) */
	/* stripe= (llmp_ckpt_opts.stripe_*): count 0 when not given, -1: all OSTs */
	int32_t stripe_count;
	uint64_t stripe_size;                        /* 0: the filesystem's */
	char stripe_pool[LLMP_CKPT_STRIPE_POOL_MAX]; /* "": the filesystem's */
} llmp_ckpt_spec;

/* An empty spec: nothing given. */
void llmp_ckpt_spec_init(llmp_ckpt_spec *spec);

/*
 * Parse one source into *spec (initialised first). Keys may repeat (the last
 * wins), but a bare DIR comes at most once and not beside dir=, so a comma
 * inside a path is an error, not a second item. The single word "help" sets
 * spec->help and nothing else. On error msg names the key or
 * text at fault and *spec is unusable.
 */
llmp_status llmp_ckpt_spec_parse_partial(const char *text, llmp_ckpt_spec *spec, char *msg, size_t msglen);

/* Copy into *base every key *top was given; a help request carries over. */
void llmp_ckpt_spec_overlay(llmp_ckpt_spec *base, const llmp_ckpt_spec *top);

/* Require DIR and fill the defaults of the keys not given (given is kept).
 * A spec asking for help is refused: the caller answers it first. */
llmp_status llmp_ckpt_spec_check(llmp_ckpt_spec *spec, char *msg, size_t msglen);

/*
 * The canonical text of a checked spec ("DIR,every=30min,keep=2,restarts=3";
 * no every when it is 0; dir=DIR when DIR holds '=' or is "help"), which
 * parses back to the same spec. Returns the length it needed, like
 * snprintf.
 */
int llmp_ckpt_spec_format(const llmp_ckpt_spec *spec, char *out, size_t outlen);

/*
 * Whether a stripe layout is one Lustre accepts: count -1 (all OSTs) or
 * 1..LLMP_CKPT_STRIPE_COUNT_MAX, or 0 (no layout asked for) with no size and
 * no pool; size 0 or a multiple of 64 KiB below 4 GiB; pool NULL, "" or up
 * to 15 letters, digits, '_' and '-'. On error msg names stripe= and why.
 * llmp_ckpt_open checks its options with it too.
 */
llmp_status llmp_ckpt_stripe_check(int64_t count, uint64_t size, const char *pool, char *msg, size_t msglen);

/* The grammar, for --llm-checkpoint=help. */
const char *llmp_ckpt_spec_grammar(void);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_CKPT_SPEC_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wireup.h - joining the job through PMIx.
 *
 * Init asks the launcher's PMIx server who this process is, publishes the
 * two things peers need (its UCX address and its layout) and exchanges them
 * with one collecting fence: the only fence of llmp_init, whatever the world
 * size and however many communicators are made later. Without a launcher the
 * process is a PMIx singleton: rank 0 of a world of 1.
 */
#ifndef LLMP_WIREUP_H
#define LLMP_WIREUP_H

#include <stddef.h>

#include "rt.h"

/* PMIx_Init and the job facts: rank, world, local rank and size. */
llmp_status rt_wireup_init(llmp_ctx *ctx);

/* Put the UCX address and ctx->layout, commit, and fence once, collecting. */
llmp_status rt_wireup_exchange(llmp_ctx *ctx, const void *addr, size_t addrlen);

/* Put one key for the fence (before rt_wireup_exchange commits). */
llmp_status rt_wireup_put(llmp_ctx *ctx, const char *key, pmix_value_t *value);
/*
 * A peer's value of key, already local after the collecting fence (the
 * lookup is optional: PMIX_ERR_NOT_FOUND when the peer put none).
 */
pmix_status_t rt_wireup_get(llmp_ctx *ctx, uint32_t rank, const char *key, pmix_value_t **value);

/* Every rank's layout equals ours; else LLMP_ERR_MISMATCH naming one that differs. */
llmp_status rt_wireup_check_layouts(llmp_ctx *ctx);

/*
 * A renumbered step (ctx->renumbered): read every process's published rank
 * and map ranks to PMIx ranks, so that rt_wireup_get and everything above
 * it speak of ranks. LLMP_ERR_MISMATCH when two processes claim one rank.
 */
llmp_status rt_wireup_map_ranks(llmp_ctx *ctx);

/* A peer's UCX address; release with rt_wireup_release(). */
llmp_status rt_wireup_peer_address(llmp_ctx *ctx, uint32_t rank, pmix_value_t **value);
void rt_wireup_release(pmix_value_t *value);

/* A peer's process id as published (liveness.h: "BOOT-ID:PIDNS:PID"). */
llmp_status rt_wireup_peer_process(llmp_ctx *ctx, uint32_t rank, char *buf, size_t len);

/*
 * The host rank published: Slurm's name for its node (SLURMD_NODENAME),
 * else its hostname. Quiet: false with buf "" when it is not known, and
 * the context's message untouched (it is asked while a failure is told).
 */
bool rt_wireup_peer_host(llmp_ctx *ctx, uint32_t rank, char *buf, size_t len);

void rt_wireup_fini(llmp_ctx *ctx);

#endif /* LLMP_WIREUP_H */

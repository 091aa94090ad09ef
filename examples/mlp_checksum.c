/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_checksum.c - the final checksum: the model gathered over tp into its
 * global order, hashed with FNV-1a.
 *
 * Gathering W1 (column-parallel: each rank holds whole rows) concatenates
 * the shards into W1 as it is. W2 is row-parallel: each rank holds a band of
 * columns, so the gathered blocks [tp][O][H/tp] are interleaved back into
 * rows [O][H] before hashing. A checksum is thus of the model, not of the
 * layout: tp=1 and tp=4 print the same one for the same parameters.
 */
#define _POSIX_C_SOURCE 200809L

#include "mlp_checksum.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FNV_OFFSET 0x811c9dc5u
#define FNV_PRIME 0x01000193u

/* FNV-1a and a running sum over float32 values, byte order fixed. */
typedef struct hasher {
	uint32_t fnv;
	double sum;
} hasher;

static void hash_floats(hasher *h, const float *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t bits;
		memcpy(&bits, &v[i], sizeof bits);
		for (int byte = 0; byte < 4; byte++) /* little-endian, on any host */
			h->fnv = (h->fnv ^ ((bits >> (8 * byte)) & 0xffu)) * FNV_PRIME;
		h->sum += v[i];
	}
}

static llmp_status gather(mlp_trainer *tr, const float *mine, size_t count, float *all, const char *what)
{
	llmp_status st = llmp_allgather(tr->tp, mine, all, count, LLMP_FLOAT32);
	if (st != LLMP_OK)
		fprintf(stderr, MLP_PROG ": rank %u: checksum: allgather of %s over tp: %s\n",
			llmp_rank(tr->ctx), what, llmp_errmsg(tr->ctx));
	return st;
}

/* all[tp][O][hl] (the gathered column bands) -> rows[O][H]. */
static void interleave_columns(const float *all, const mlp_dims *d, const mlp_shard *s, float *rows)
{
	for (uint32_t r = 0; r < s->tp_size; r++)
		for (uint32_t o = 0; o < d->out; o++)
			memcpy(rows + (size_t)o * d->hidden + (size_t)r * s->hl,
			       all + ((size_t)r * d->out + o) * s->hl, sizeof(float) * s->hl);
}

static llmp_status hash_model(mlp_trainer *tr, float *buf, float *rows, hasher *h)
{
	const mlp_dims *d = &tr->opts->dims;
	const mlp_shard *s = &tr->shard;
	const mlp_params *p = &tr->params;
	llmp_status st;

	if ((st = gather(tr, p->w1, (size_t)s->hl * d->in, buf, "W1")) != LLMP_OK)
		return st;
	hash_floats(h, buf, (size_t)d->hidden * d->in);
	if ((st = gather(tr, p->b1, s->hl, buf, "b1")) != LLMP_OK)
		return st;
	hash_floats(h, buf, d->hidden);
	if ((st = gather(tr, p->w2, (size_t)d->out * s->hl, buf, "W2")) != LLMP_OK)
		return st;
	interleave_columns(buf, d, s, rows);
	hash_floats(h, rows, (size_t)d->out * d->hidden);
	hash_floats(h, p->b2, d->out);
	return LLMP_OK;
}

/* The dp replicas must have stayed identical: a min and a max over dp agree. */
static llmp_status check_replicas(mlp_trainer *tr, uint32_t fnv)
{
	int64_t lo = fnv, hi = fnv;
	llmp_status st;

	if ((st = llmp_allreduce(tr->dp, &lo, &lo, 1, LLMP_INT64, LLMP_MIN)) != LLMP_OK ||
	    (st = llmp_allreduce(tr->dp, &hi, &hi, 1, LLMP_INT64, LLMP_MAX)) != LLMP_OK) {
		fprintf(stderr, MLP_PROG ": rank %u: checksum: allreduce over dp: %s\n", llmp_rank(tr->ctx),
			llmp_errmsg(tr->ctx));
		return st;
	}
	if (lo != hi) {
		fprintf(stderr,
			MLP_PROG ": rank %u: the dp replicas diverged: checksums from 0x%08" PRIx64
				 " to 0x%08" PRIx64 " in this rank's dp group\n",
			llmp_rank(tr->ctx), (uint64_t)lo, (uint64_t)hi);
		return LLMP_ERR_MISMATCH;
	}
	return LLMP_OK;
}

llmp_status mlp_checksum(mlp_trainer *tr, uint32_t *fnv, double *sum)
{
	const mlp_dims *d = &tr->opts->dims;
	size_t largest = (size_t)d->hidden * (d->in > d->out ? d->in : d->out);
	float *buf = malloc(sizeof(float) * largest), *rows = malloc(sizeof(float) * largest);
	hasher h = { FNV_OFFSET, 0 };
	llmp_status st = LLMP_ERR_NOMEM;

	if (!buf || !rows)
		fprintf(stderr, MLP_PROG ": rank %u: checksum: out of memory for %zu floats\n",
			llmp_rank(tr->ctx), largest);
	else if ((st = hash_model(tr, buf, rows, &h)) == LLMP_OK)
		st = check_replicas(tr, h.fnv);
	free(buf);
	free(rows);
	*fnv = h.fnv;
	*sum = h.sum;
	return st;
}

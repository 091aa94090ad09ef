/* SPDX-License-Identifier: BSD-3-Clause */
/* ckpt.c - checkpoint handles, registration, and what every rank must agree on. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_device.h"
#include "ckpt_internal.h"
#include "runtime/comm/abi.h"

/*
 * The alignment of large datasets when none is given: the preferred I/O
 * size of the filesystem holding root (st_blksize of root, or of the
 * nearest directory above it that exists): a Lustre stripe, a GPFS block,
 * NFS's transfer size, 4 KiB on a local disk. A value that is not a power
 * of two from 4 KiB to 256 MiB gives the former default, 1 MiB.
 */
static size_t preferred_alignment(const char *root)
{
	const size_t fallback = (size_t)1 << 20;
	char dir[PATH_MAX];
	struct stat st;
	if (snprintf(dir, sizeof dir, "%s", root) >= (int)sizeof dir)
		return fallback;
	while (stat(dir, &st) != 0) {
		char *slash = strrchr(dir, '/');
		if (strcmp(dir, ".") == 0 || strcmp(dir, "/") == 0)
			return fallback; /* nothing above to ask */
		if (!slash)
			snprintf(dir, sizeof dir, "."); /* a relative root: the working directory */
		else
			*(slash == dir ? slash + 1 : slash) = '\0';
	}
	size_t bs = (size_t)st.st_blksize;
	return bs >= 4096 && bs <= ((size_t)256 << 20) && (bs & (bs - 1)) == 0 ? bs : fallback;
}

llmp_status llmp_ckpt_open(llmp_ctx *ctx, const llmp_ckpt_opts *given, llmp_ckpt **out)
{
	if (!out)
		return LLMP_ERR_ARG;
	*out = NULL;
	if (!ctx)
		return LLMP_ERR_ARG;
	llmp_ckpt_opts mine;
	const llmp_ckpt_opts *opts = NULL;
	if (given) {
		llmp_status st = rt_struct_in(ctx, "llmp_ckpt_opts", &mine, sizeof mine, given,
					      RT_V1_SIZE(llmp_ckpt_opts, stripe_pool));
		if (st != LLMP_OK)
			return st;
		opts = &mine;
	}
	if (!opts || !opts->root || !*opts->root)
		return rt_fail(ctx, LLMP_ERR_ARG, "llmp_ckpt_open: no checkpoint root directory");
	if (opts->files != LLMP_CKPT_FILES_RANK && opts->files != LLMP_CKPT_FILES_NODE)
		return rt_fail(ctx, LLMP_ERR_ARG,
			       "llmp_ckpt_open: files is %u (0: a file per rank, 1: per node)", opts->files);
	llmp_ckpt *ck = calloc(1, sizeof *ck);
	if (!ck || !(ck->root = strdup(opts->root))) {
		free(ck);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "llmp_ckpt_open");
	}
	ck->ctx = ctx;
	ck->keep = opts->keep ? opts->keep : 2;
	ck->alignment = opts->alignment ? opts->alignment : preferred_alignment(opts->root);
	ck->staging_max = opts->staging_max;
	ck->node_files = opts->files == LLMP_CKPT_FILES_NODE;
	llmp_status st = ck_stripe_open(ck, opts);
	if (st != LLMP_OK) {
		free(ck->root);
		free(ck);
		return st;
	}
	*out = ck;
	return LLMP_OK;
}

void llmp_ckpt_close(llmp_ckpt *ck)
{
	if (!ck)
		return;
	llmp_ckpt_wait(ck); /* its status stays in llmp_errmsg() */
	ck_dev_free(ck);
	ck_stripe_close(ck);
	free(ck->staging);
	free(ck->leader_of);
	free(ck->plan);
	free(ck->tensors);
	free(ck->root);
	free(ck);
}

/* Names become HDF5 paths and MANIFEST words: printable, no spaces, no empty parts. */
static bool valid_name(const char *name)
{
	size_t len = strlen(name);
	if (len == 0 || len > LLMP_CKPT_MAX_NAME || name[0] == '/' || name[len - 1] == '/' ||
	    strstr(name, "//") || strcmp(name, ".") == 0)
		return false;
	for (const char *p = name; *p; p++)
		if (*p <= ' ' || *p > '~')
			return false;
	return true;
}

llmp_status llmp_ckpt_register(llmp_ckpt *ck, const char *name, llmp_dtype dtype, unsigned ndim,
			       const uint64_t *global_shape, const uint64_t *offset, const uint64_t *shape,
			       void *data)
{
	if (!ck)
		return LLMP_ERR_ARG;
	llmp_ctx *ctx = ck->ctx;
	if (!name || !valid_name(name))
		return rt_fail(ctx, LLMP_ERR_ARG,
			       "llmp_ckpt_register: tensor name '%.40s' must be 1-%d "
			       "printable characters without spaces",
			       name ? name : "(null)", LLMP_CKPT_MAX_NAME);
	if ((unsigned)dtype >= LLMP_NDTYPES)
		return rt_fail(ctx, LLMP_ERR_ARG, "tensor %s: dtype %d is not an llmp_dtype", name,
			       (int)dtype);
	if (ndim < 1 || ndim > LLMP_CKPT_MAX_DIMS)
		return rt_fail(ctx, LLMP_ERR_ARG, "tensor %s: %u dimensions (1..%d)", name, ndim,
			       LLMP_CKPT_MAX_DIMS);
	if (!global_shape || !offset || !shape)
		return rt_fail(ctx, LLMP_ERR_ARG, "tensor %s: a shape or offset array is NULL", name);
	for (size_t i = 0; i < ck->ntensors; i++)
		if (strcmp(ck->tensors[i].slice.name, name) == 0)
			return rt_fail(ctx, LLMP_ERR_ARG, "tensor %s is already registered on this rank",
				       name);
	struct ck_slice s = { .dtype = (uint32_t)dtype, .ndim = ndim, .rank = ctx->rank };
	snprintf(s.name, sizeof s.name, "%s", name);
	for (unsigned d = 0; d < ndim; d++) {
		if (global_shape[d] == 0 || shape[d] == 0 || offset[d] > global_shape[d] ||
		    shape[d] > global_shape[d] - offset[d])
			return rt_fail(ctx, LLMP_ERR_RANGE,
				       "tensor %s, dimension %u: slice [%llu, +%llu) "
				       "outside the global size %llu",
				       name, d, (unsigned long long)offset[d], (unsigned long long)shape[d],
				       (unsigned long long)global_shape[d]);
		s.global[d] = global_shape[d];
		s.offset[d] = offset[d];
		s.shape[d] = shape[d];
	}
	if (!data)
		return rt_fail(ctx, LLMP_ERR_ARG, "tensor %s: data is NULL", name);
	bool device;
	llmp_status st = ck_dev_register(ck, name, data, &device);
	if (st != LLMP_OK)
		return st;
	if (ck->ntensors == ck->cap) {
		size_t cap = ck->cap ? 2 * ck->cap : 16;
		struct ck_tensor *grown = realloc(ck->tensors, cap * sizeof *grown);
		if (!grown)
			return rt_fail(ctx, LLMP_ERR_NOMEM, "registering tensor %s", name);
		ck->tensors = grown;
		ck->cap = cap;
	}
	ck->tensors[ck->ntensors++] = (struct ck_tensor){ .slice = s, .data = data, .device = device };
	ck->plan_current = false;
	return LLMP_OK;
}

llmp_status llmp_ckpt_get_stats(const llmp_ckpt *ck, llmp_ckpt_stats *stats)
{
	if (!ck || !stats)
		return LLMP_ERR_ARG;
	llmp_ckpt_stats mine = ck->stats;
	mine.alignment = ck->alignment;
	ck_dev_stats(ck, &mine);
	return rt_struct_out(ck->ctx, "llmp_ckpt_stats", stats, &mine, sizeof mine,
			     RT_V1_SIZE(llmp_ckpt_stats, device_staging_bytes));
}

llmp_status ck_agree(llmp_ckpt *ck, const char *doing, llmp_status local)
{
	return rt_agree(ck->ctx, doing, local);
}

/* --------------------------------------------------- gathering the plan */

static int compare_slices(const void *pa, const void *pb)
{
	const struct ck_slice *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	for (unsigned d = 0; d < a->ndim && d < b->ndim; d++) {
		if (a->offset[d] != b->offset[d])
			return a->offset[d] < b->offset[d] ? -1 : 1;
		if (a->shape[d] != b->shape[d])
			return a->shape[d] < b->shape[d] ? -1 : 1;
	}
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static bool same_slice(const struct ck_slice *a, const struct ck_slice *b)
{
	if (strcmp(a->name, b->name) || a->ndim != b->ndim)
		return false;
	for (unsigned d = 0; d < a->ndim; d++)
		if (a->offset[d] != b->offset[d] || a->shape[d] != b->shape[d])
			return false;
	return true;
}

/* FNV-1a of what same_slice compares: the name, and offset and shape in each dimension. */
static uint64_t slice_hash(const struct ck_slice *s)
{
	uint64_t h = 14695981039346656037ULL;
	for (const char *p = s->name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	for (unsigned d = 0; d < s->ndim && d < LLMP_CKPT_MAX_DIMS; d++)
		h = ((h ^ s->offset[d]) * 1099511628211ULL ^ s->shape[d]) * 1099511628211ULL;
	return h;
}

/* A distinct slice: its first record (the lowest rank), and where its records go. */
struct slice_group {
	const struct ck_slice *first;
	size_t at, count;
};

static int compare_groups(const void *pa, const void *pb)
{
	return compare_slices(((const struct slice_group *)pa)->first,
			      ((const struct slice_group *)pb)->first);
}

/*
 * Where each record goes (dest[i]) in the order of compare_slices. A
 * comparison sort of every record cost O(n log n) string comparisons and
 * moves of whole records, and most records are replicas (dp of each
 * weight): so the records are grouped by slice in a hash table, in linear
 * time, and only the distinct slices are sorted. The records of one slice
 * keep the gather's rank order, the last key of compare_slices.
 */
static bool plan_order(const struct ck_slice *all, size_t n, uint32_t *dest)
{
	size_t cap = 16, ngroups = 0;
	while (cap < 2 * n)
		cap *= 2;
	uint32_t *table = malloc(cap * sizeof *table), *group_of = malloc((n ? n : 1) * sizeof *group_of);
	struct slice_group *groups = malloc((n ? n : 1) * sizeof *groups);
	size_t *rank_of = malloc((n ? n : 1) * sizeof *rank_of); /* a group's place in the order */
	bool ok = table && group_of && groups && rank_of;
	if (ok)
		memset(table, 0xff, cap * sizeof *table);
	for (size_t i = 0; ok && i < n; i++) {
		size_t slot = (size_t)slice_hash(&all[i]) & (cap - 1);
		while (table[slot] != UINT32_MAX && !same_slice(groups[table[slot]].first, &all[i]))
			slot = (slot + 1) & (cap - 1);
		if (table[slot] == UINT32_MAX) {
			table[slot] = (uint32_t)ngroups;
			groups[ngroups++] = (struct slice_group){ .first = &all[i] };
		}
		group_of[i] = table[slot];
		groups[table[slot]].count++;
	}
	if (ok) {
		qsort(groups, ngroups, sizeof *groups, compare_groups);
		for (size_t g = 0, at = 0; g < ngroups; at += groups[g++].count)
			groups[g].at = at;
	}
	/* The table names groups by their unsorted number: map each to its sorted place. */
	for (size_t g = 0; ok && g < ngroups; g++)
		rank_of[group_of[groups[g].first - all]] = g;
	for (size_t i = 0; ok && i < n; i++)
		dest[i] = (uint32_t)groups[rank_of[group_of[i]]].at++;
	free(table);
	free(group_of);
	free(groups);
	free(rank_of);
	return ok;
}

llmp_status ck_order_slices(struct ck_slice *all, size_t records, size_t *count, char *msg, size_t len)
{
	size_t kept = 0;
	for (size_t i = 0; i < records; i++)
		if (all[i].name[0])
			all[kept++] = all[i];
	*count = kept;
	uint32_t *dest = kept < UINT32_MAX ? malloc((kept ? kept : 1) * sizeof *dest) : NULL;
	if (!dest || !plan_order(all, kept, dest)) {
		free(dest);
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "ordering %zu slice records: out of memory", kept);
	}
	/* Each record moved to its place in place, cycle by cycle. */
	for (size_t i = 0; i < kept; i++)
		while (dest[i] != i) {
			size_t j = dest[i];
			struct ck_slice tmp = all[j];
			all[j] = all[i];
			all[i] = tmp;
			dest[i] = dest[j];
			dest[j] = (uint32_t)j;
		}
	free(dest);
	for (size_t i = 0; i < kept; i++) {
		all[i].owner = i > 0 && same_slice(&all[i - 1], &all[i]) ? all[i - 1].owner : all[i].rank;
		all[i].file = all[i].owner; /* its own shard; files=node changes it (ckpt_node.c) */
		all[i].node_file = false;
	}
	return ck_validate_slices(all, kept, NULL, msg, len);
}

static llmp_status gather_slices(llmp_ckpt *ck, struct ck_slice **out, size_t *nout)
{
	llmp_ctx *ctx = ck->ctx;
	llmp_comm *world;
	uint32_t n = ctx->world;
	llmp_status st = llmp_comm_world(ctx, &world);
	if (st != LLMP_OK)
		return st;
	int64_t mine = (int64_t)ck->ntensors, most = mine;
	if ((st = llmp_allreduce(world, &most, &most, 1, LLMP_INT64, LLMP_MAX)) != LLMP_OK)
		return st;
	size_t per = (size_t)most, rec = sizeof(struct ck_slice);
	struct ck_slice *send = calloc(per ? per : 1, rec);
	struct ck_slice *all = calloc(per * n > 0 ? per * n : 1, rec);
	if (!send || !all) {
		free(send);
		free(all);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "gathering %zu x %u slice records", per, n);
	}
	for (size_t i = 0; i < ck->ntensors; i++) {
		send[i] = ck->tensors[i].slice;
		send[i].tensor = (uint32_t)i;
	}
	/* Unused records have an empty name; they sort first and are dropped. */
	st = llmp_allgather(world, send, all, per * rec, LLMP_UINT8);
	free(send);
	if (st != LLMP_OK) {
		free(all);
		return st;
	}
	size_t count;
	if ((st = ck_order_slices(all, per * n, &count, ctx->errmsg, sizeof ctx->errmsg)) != LLMP_OK) {
		free(all);
		return st;
	}
	*out = all;
	*nout = count;
	return LLMP_OK;
}

llmp_status ck_plan_slices(llmp_ckpt *ck, struct ck_slice **out, size_t *nout)
{
	llmp_ctx *ctx = ck->ctx;
	llmp_comm *world;
	int64_t stale = !ck->plan_current;
	llmp_status st = llmp_comm_world(ctx, &world);
	if (st == LLMP_OK)
		st = llmp_allreduce(world, &stale, &stale, 1, LLMP_INT64, LLMP_MAX);
	if (st == LLMP_OK && stale) {
		free(ck->plan);
		ck->plan = NULL;
		ck->nplan = 0;
		st = gather_slices(ck, &ck->plan, &ck->nplan);
		ck->plan_current = st == LLMP_OK;
	}
	if (st != LLMP_OK)
		return st;
	size_t bytes = (ck->nplan ? ck->nplan : 1) * sizeof **out;
	if (!(*out = malloc(bytes)))
		return rt_fail(ctx, LLMP_ERR_NOMEM, "checkpoint save: %zu slice records", ck->nplan);
	memcpy(*out, ck->plan, ck->nplan * sizeof **out);
	*nout = ck->nplan;
	return LLMP_OK;
}

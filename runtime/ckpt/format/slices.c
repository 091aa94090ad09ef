/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slices.c - the slices of a checkpoint's tensors: their sizes, and the
 * check that a set of them tiles every tensor exactly. The runtime checks
 * the slices every rank registered with it, `llmp ckpt verify` those a
 * MANIFEST lists.
 */
#include <stdio.h>
#include <string.h>

#include "ckpt_format.h"

uint64_t ck_volume(const struct ck_slice *s)
{
	uint64_t v = 1;
	for (unsigned d = 0; d < s->ndim; d++)
		v *= s->shape[d];
	return v;
}

uint64_t ck_bytes(const struct ck_slice *s)
{
	return ck_volume(s) * llmp_dtype_size((llmp_dtype)s->dtype);
}

bool ck_intersects(const struct ck_slice *a, const struct ck_slice *b)
{
	for (unsigned d = 0; d < a->ndim; d++)
		if (a->offset[d] >= b->offset[d] + b->shape[d] || b->offset[d] >= a->offset[d] + a->shape[d])
			return false;
	return true;
}

/*
 * Identical on every rank, so every rank fails alike; the tool checks a
 * MANIFEST's slices with it too, hence "the slice of rank R", not "rank R
 * registered".
 */
llmp_status ck_validate_slices(const struct ck_slice *all, size_t n, size_t *culprit, char *msg, size_t len)
{
	for (size_t first = 0; first < n;) {
		size_t end = first;
		uint64_t covered = 0, global = 1;
		const struct ck_slice *t = &all[first];
		for (unsigned d = 0; d < t->ndim; d++)
			global *= t->global[d];
		while (end < n && strcmp(all[end].name, t->name) == 0)
			end++;
		if (culprit)
			*culprit = first;
		for (size_t i = first; i < end; i++) {
			const struct ck_slice *s = &all[i];
			bool shape_ok = s->ndim == t->ndim && s->dtype == t->dtype;
			for (unsigned d = 0; shape_ok && d < t->ndim; d++)
				shape_ok = s->global[d] == t->global[d];
			if (!shape_ok) {
				snprintf(msg, len,
					 "tensor %s: the slice of rank %u has another dtype or global "
					 "shape than that of rank %u",
					 t->name, s->rank, t->rank);
				return LLMP_ERR_MISMATCH;
			}
			if (s->owner != s->rank)
				continue; /* a replica */
			covered += ck_volume(s);
			for (size_t j = first; j < i; j++)
				if (all[j].owner == all[j].rank && ck_intersects(&all[j], s)) {
					snprintf(msg, len,
						 "tensor %s: the slices of ranks %u and %u overlap "
						 "without being equal",
						 t->name, all[j].rank, s->rank);
					return LLMP_ERR_MISMATCH;
				}
		}
		if (covered != global) {
			snprintf(msg, len, "tensor %s: the slices cover %llu of its %llu elements", t->name,
				 (unsigned long long)covered, (unsigned long long)global);
			return LLMP_ERR_MISMATCH;
		}
		first = end;
	}
	return LLMP_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_scatter.c - llmp_reduce_scatter around a ring.
 *
 * At step s member r passes on its partial result for block r-s-1 and
 * folds its own contribution into block r-s-2 as the segments of the
 * left neighbour's partial arrive; after n-1 steps it holds
 * block r reduced over every member. One member reduces each block, so the
 * result does not depend on who asks.
 */
#include <string.h>

#include "coll.h"
#include "kernels/reduce.h"
#include "shm.h"

static llmp_status reduce_scatter_call(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
				       llmp_dtype dtype, llmp_op op)
{
	rt_call call;
	llmp_status st = rt_call_begin_blocks(&call, comm, "reduce_scatter", sendbuf, recvbuf, count, dtype,
					      op, true);
	if (st != LLMP_OK || count == 0)
		return st;
	uint32_t n = comm->size, r = comm->rank;
	size_t bytes = count * call.esize;
	const char *in_blocks = sendbuf;
	if (n == 1) {
		if (recvbuf != sendbuf)
			memcpy(recvbuf, sendbuf, bytes);
		return LLMP_OK;
	}
	if (rt_shm_ready(&call, bytes * n, &st))
		return rt_shm_reduce_scatter(&call, sendbuf, recvbuf, count);
	if (st != LLMP_OK)
		return st;

	/* Partial results alternate between two buffers: one is sent while the other fills. */
	char *scratch;
	if ((st = rt_scratch(comm, 2 * bytes, (void **)&scratch)) != LLMP_OK)
		return st;
	char *partial[2] = { scratch, scratch + bytes };
	uint32_t right = (r + 1) % n, left = (r + n - 1) % n;
	for (uint32_t step = 0; st == LLMP_OK && step + 1 < n; step++) {
		uint32_t out = (r + 2 * n - step - 1) % n, in = (r + 2 * n - step - 2) % n;
		const char *send = step == 0 ? in_blocks + out * bytes : partial[step % 2];
		struct rt_fold fold = { step + 2 == n ? recvbuf : partial[(step + 1) % 2],
					in_blocks + in * bytes, &call };
		st = rt_exchange_segments(&call, send, bytes, right, NULL, bytes, left, rt_fold_segment,
					  &fold);
	}
	if (st == LLMP_OK && op == LLMP_AVG)
		st = kern_reduce_divide(recvbuf, count, dtype, n);
	return st;
}

llmp_status llmp_reduce_scatter(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
				llmp_dtype dtype, llmp_op op)
{
	if (!comm)
		return LLMP_ERR_ARG;
	rt_metrics_begin(&comm->metrics, count);
	llmp_status st = reduce_scatter_call(comm, sendbuf, recvbuf, count, dtype, op);
	rt_metrics_end(&comm->metrics);
	return st;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * barrier.c - llmp_barrier by dissemination: in round k each member
 * signals the one 2^k ahead and waits for the one 2^k behind; after
 * ceil(log2 n) rounds every member has heard, indirectly, from all.
 */
#include "coll.h"

static llmp_status barrier_call(llmp_comm *comm)
{
	rt_call call;
	llmp_status st = rt_call_begin(&call, comm, "barrier", NULL, NULL, 0, LLMP_UINT8, LLMP_SUM, false);
	uint32_t n = comm ? comm->size : 1, r = comm ? comm->rank : 0;
	for (uint32_t dist = 1; st == LLMP_OK && dist < n; dist <<= 1)
		st = rt_exchange(&call, NULL, 0, (r + dist) % n, NULL, 0, (r + n - dist % n) % n);
	return st;
}

llmp_status llmp_barrier(llmp_comm *comm)
{
	if (!comm)
		return LLMP_ERR_ARG;
	rt_metrics_begin(&comm->metrics, 0);
	llmp_status st = barrier_call(comm);
	rt_metrics_end(&comm->metrics);
	return st;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* allgather.c - llmp_allgather: every member's block to every member, around a ring. */
#include <string.h>

#include "coll.h"
#include "shm.h"

static llmp_status allgather_call(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
				  llmp_dtype dtype)
{
	rt_call call;
	llmp_status st = rt_call_begin_blocks(&call, comm, "allgather", sendbuf, recvbuf, count, dtype,
					      LLMP_SUM, false);
	if (st != LLMP_OK || count == 0)
		return st;
	size_t bytes = count * call.esize;
	char *own = (char *)recvbuf + comm->rank * bytes;
	if (own != sendbuf)
		memmove(own, sendbuf, bytes);
	if (comm->size == 1)
		return LLMP_OK;
	if (rt_shm_ready(&call, bytes * comm->size, &st))
		return rt_shm_allgather(&call, recvbuf, count);
	if (st != LLMP_OK)
		return st;
	rt_blocks blocks = rt_blocks_of(count * comm->size, comm->size, call.esize);
	return rt_ring_allgather(&call, recvbuf, &blocks, 0);
}

llmp_status llmp_allgather(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			   llmp_dtype dtype)
{
	if (!comm)
		return LLMP_ERR_ARG;
	rt_metrics_begin(&comm->metrics, count);
	llmp_status st = allgather_call(comm, sendbuf, recvbuf, count, dtype);
	rt_metrics_end(&comm->metrics);
	return st;
}

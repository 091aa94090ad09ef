/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * broadcast.c - llmp_broadcast: a binomial tree for small messages; for
 * large ones the root scatters one block to each member and a ring
 * allgather completes everyone's copy, so that the root sends the data
 * about once instead of log2(n) times.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "shm.h"

static llmp_status binomial_tree(rt_call *call, char *buf, size_t bytes, uint32_t root)
{
	llmp_comm *comm = call->comm;
	uint32_t n = comm->size, vrank = (comm->rank + n - root) % n;
	uint32_t mask = 1;
	llmp_status st = LLMP_OK;

	/* Receive from the parent: the member that differs in the lowest set bit. */
	while (mask < n) {
		if (vrank & mask) {
			st = rt_exchange(call, NULL, 0, UINT32_MAX, buf, bytes, (vrank - mask + root) % n);
			break;
		}
		mask <<= 1;
	}
	/* Then to every child at once. */
	rt_req reqs[32];
	size_t nreq = 0;
	for (mask >>= 1; st == LLMP_OK && mask > 0; mask >>= 1)
		if (vrank + mask < n) {
			uint32_t child = (vrank + mask + root) % n;
			st = rt_tx_isend(comm, child, rt_call_tag(call, comm->rank), buf, bytes,
					 &reqs[nreq++]);
			if (st != LLMP_OK)
				nreq--;
		}
	llmp_status waited = rt_tx_wait(comm, call->op_name, reqs, nreq);
	return st != LLMP_OK ? st : waited;
}

static llmp_status scatter_allgather(rt_call *call, char *buf, size_t count, uint32_t root)
{
	llmp_comm *comm = call->comm;
	uint32_t n = comm->size, r = comm->rank;
	rt_blocks blocks = rt_blocks_of(count, n, call->esize);
	llmp_status st = LLMP_OK;

	if (r == root) {
		rt_req *reqs = malloc(n * sizeof *reqs);
		if (!reqs)
			return rt_fail(comm->ctx, LLMP_ERR_NOMEM, "broadcast: %u requests", n);
		size_t nreq = 0;
		for (uint32_t m = 0; st == LLMP_OK && m < n; m++) {
			if (m == root)
				continue;
			st = rt_tx_isend(comm, m, rt_call_tag(call, r), buf + rt_block_offset(&blocks, m),
					 rt_block_elems(&blocks, m) * call->esize, &reqs[nreq++]);
			if (st != LLMP_OK)
				nreq--;
		}
		llmp_status waited = rt_tx_wait(comm, call->op_name, reqs, nreq);
		free(reqs);
		if (st == LLMP_OK)
			st = waited;
	} else {
		st = rt_exchange(call, NULL, 0, UINT32_MAX, buf + rt_block_offset(&blocks, r),
				 rt_block_elems(&blocks, r) * call->esize, root);
	}
	if (st == LLMP_OK)
		st = rt_ring_allgather(call, buf, &blocks, 0);
	return st;
}

static llmp_status broadcast_call(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
				  llmp_dtype dtype, uint32_t root)
{
	if (comm && root >= comm->size)
		return rt_fail(comm->ctx, LLMP_ERR_RANGE, "broadcast on %s: root %u, but it has %u members",
			       llmp_comm_name(comm), root, comm->size);
	/* Only the root's send buffer is read: the others may pass NULL. */
	bool is_root = comm && comm->rank == root;
	rt_call call;
	llmp_status st = rt_call_begin(&call, comm, "broadcast", is_root ? sendbuf : recvbuf, recvbuf, count,
				       dtype, LLMP_SUM, false);
	if (st != LLMP_OK || count == 0)
		return st;
	size_t bytes = count * call.esize;
	if (is_root && recvbuf != sendbuf)
		memcpy(recvbuf, sendbuf, bytes);
	if (comm->size == 1)
		return LLMP_OK;
	if (rt_shm_ready(&call, bytes, &st))
		return rt_shm_broadcast(&call, recvbuf, count, root);
	if (st != LLMP_OK)
		return st;
	if (bytes >= comm->ctx->ring_threshold && count >= comm->size)
		return scatter_allgather(&call, recvbuf, count, root);
	return binomial_tree(&call, recvbuf, bytes, root);
}

llmp_status llmp_broadcast(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			   llmp_dtype dtype, uint32_t root)
{
	if (!comm)
		return LLMP_ERR_ARG;
	rt_metrics_begin(&comm->metrics, count);
	llmp_status st = broadcast_call(comm, sendbuf, recvbuf, count, dtype, root);
	rt_metrics_end(&comm->metrics);
	return st;
}

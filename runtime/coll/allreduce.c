/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allreduce.c - llmp_allreduce: recursive doubling for small messages, a
 * ring (reduce-scatter then allgather) for large ones.
 *
 * Recursive doubling takes log2(n) rounds of full-size exchanges: the
 * fewest message latencies. The ring moves 2(n-1)/n of the data per rank,
 * the least any algorithm can, in 2(n-1) steps. ctx->ring_threshold (bytes)
 * picks between them. Both give every member bit-identical results: each
 * element is combined in the same order everywhere (recursive doubling
 * combines partial results pairwise, and IEEE addition and multiplication
 * are commutative; in the ring one member reduces each block and the others
 * receive copies).
 */
#include <string.h>

#include "coll.h"
#include "kernels/reduce.h"
#include "shm.h"

/*
 * In place in buf. With n not a power of two, the first 2*extra members
 * pair up first: even ones hand their data to the odd ones and sit out
 * the doubling, then get the result back.
 */
static llmp_status recursive_doubling(rt_call *call, char *buf, size_t count)
{
	llmp_comm *comm = call->comm;
	uint32_t n = comm->size, r = comm->rank;
	size_t bytes = count * call->esize;
	uint32_t pow2 = 1;
	while (pow2 * 2 <= n)
		pow2 *= 2;
	uint32_t extra = n - pow2;
	void *tmp;
	llmp_status st = rt_scratch(comm, bytes, &tmp);
	if (st != LLMP_OK)
		return st;

	uint32_t vrank; /* rank among the pow2 members taking part; UINT32_MAX if sitting out */
	if (r < 2 * extra) {
		if (r % 2 == 0) {
			st = rt_exchange(call, buf, bytes, r + 1, NULL, 0, UINT32_MAX);
			vrank = UINT32_MAX;
		} else {
			st = rt_exchange(call, NULL, 0, UINT32_MAX, tmp, bytes, r - 1);
			if (st == LLMP_OK)
				st = kern_reduce(buf, buf, tmp, count, call->dtype, call->op);
			vrank = r / 2;
		}
	} else {
		vrank = r - extra;
	}
	for (uint32_t mask = 1; st == LLMP_OK && vrank != UINT32_MAX && mask < pow2; mask <<= 1) {
		uint32_t vpeer = vrank ^ mask;
		uint32_t peer = vpeer < extra ? vpeer * 2 + 1 : vpeer + extra;
		st = rt_exchange(call, buf, bytes, peer, tmp, bytes, peer);
		if (st == LLMP_OK)
			st = kern_reduce(buf, buf, tmp, count, call->dtype, call->op);
	}
	if (st == LLMP_OK && r < 2 * extra) {
		if (r % 2 == 0)
			st = rt_exchange(call, NULL, 0, UINT32_MAX, buf, bytes, r + 1);
		else
			st = rt_exchange(call, buf, bytes, r - 1, NULL, 0, UINT32_MAX);
	}
	if (st == LLMP_OK && call->op == LLMP_AVG)
		st = kern_reduce_divide(buf, count, call->dtype, n);
	return st;
}

/*
 * Reduce-scatter around the ring: at step s member r sends block r-s
 * (its own data at s = 0, a partial result after) and folds block r-s-1
 * into recvbuf as its segments arrive, so that it ends owning block r+1
 * fully reduced. Out of place its own contribution is read from sendbuf,
 * so recvbuf needs no initial copy. Then a ring allgather.
 */
static llmp_status ring(rt_call *call, const char *sendbuf, char *recvbuf, size_t count)
{
	llmp_comm *comm = call->comm;
	uint32_t n = comm->size, r = comm->rank;
	uint32_t right = (r + 1) % n, left = (r + n - 1) % n;
	rt_blocks blocks = rt_blocks_of(count, n, call->esize);
	llmp_status st = LLMP_OK;

	for (uint32_t step = 0; st == LLMP_OK && step + 1 < n; step++) {
		uint32_t out = (r + n - step) % n, in = (r + 2 * n - step - 1) % n;
		const char *src = step == 0 ? sendbuf : recvbuf;
		struct rt_fold fold = { recvbuf + rt_block_offset(&blocks, in),
					sendbuf + rt_block_offset(&blocks, in), call };
		st = rt_exchange_segments(
			call, src + rt_block_offset(&blocks, out), rt_block_elems(&blocks, out) * call->esize,
			right, NULL, rt_block_elems(&blocks, in) * call->esize, left, rt_fold_segment, &fold);
	}
	uint32_t owned = (r + 1) % n;
	if (st == LLMP_OK && call->op == LLMP_AVG) /* once, by the owner, before it is copied */
		st = kern_reduce_divide(recvbuf + rt_block_offset(&blocks, owned),
					rt_block_elems(&blocks, owned), call->dtype, n);
	if (st == LLMP_OK)
		st = rt_ring_allgather(call, recvbuf, &blocks, 1);
	return st;
}

static llmp_status allreduce_call(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
				  llmp_dtype dtype, llmp_op op)
{
	rt_call call;
	llmp_status st = rt_call_begin(&call, comm, "allreduce", sendbuf, recvbuf, count, dtype, op, true);
	if (st != LLMP_OK || count == 0)
		return st;
	size_t bytes = count * call.esize;
	if (comm->size == 1) {
		if (recvbuf != sendbuf)
			memcpy(recvbuf, sendbuf, bytes);
		return LLMP_OK;
	}
	if (rt_shm_ready(&call, bytes, &st))
		return rt_shm_allreduce(&call, sendbuf, recvbuf, count);
	if (st != LLMP_OK)
		return st;
	if (bytes >= comm->ctx->ring_threshold && count >= comm->size)
		return ring(&call, sendbuf, recvbuf, count);
	if (recvbuf != sendbuf)
		memcpy(recvbuf, sendbuf, bytes);
	return recursive_doubling(&call, recvbuf, count);
}

llmp_status llmp_allreduce(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			   llmp_dtype dtype, llmp_op op)
{
	if (!comm)
		return LLMP_ERR_ARG;
	rt_metrics_begin(&comm->metrics, count);
	llmp_status st = allreduce_call(comm, sendbuf, recvbuf, count, dtype, op);
	rt_metrics_end(&comm->metrics);
	return st;
}

/* coll.c - argument checks and the pieces the collective algorithms share. */
#include "coll.h"

#include <stdio.h>

llmp_status rt_check_args(rt_call *call, llmp_comm *comm, const char *op_name,
			  const void *sendbuf, const void *recvbuf, size_t elements,
			  llmp_dtype dtype, llmp_op op, bool op_used)
{
	if (!comm)
		return LLMP_ERR_ARG;
	llmp_ctx *ctx = comm->ctx;
	if (comm->broken)
		return rt_fail(ctx, LLMP_ERR_STATE, "%s on %s: the communicator broke earlier: %s",
			       op_name, llmp_comm_name(comm), comm->failure);
	if ((unsigned)dtype >= LLMP_NDTYPES)
		return rt_fail(ctx, LLMP_ERR_ARG, "%s on %s: dtype %d is not an llmp_dtype",
			       op_name, llmp_comm_name(comm), (int)dtype);
	if (op_used && (unsigned)op >= LLMP_NOPS)
		return rt_fail(ctx, LLMP_ERR_ARG, "%s on %s: op %d is not an llmp_op",
			       op_name, llmp_comm_name(comm), (int)op);
	size_t esize = llmp_dtype_size(dtype);
	if (elements > SIZE_MAX / esize)
		return rt_fail(ctx, LLMP_ERR_ARG, "%s on %s: %zu elements of %s overflow size_t",
			       op_name, llmp_comm_name(comm), elements, llmp_dtype_name(dtype));
	if (elements > 0 && (!sendbuf || !recvbuf))
		return rt_fail(ctx, LLMP_ERR_ARG, "%s on %s: %s is NULL with %zu elements",
			       op_name, llmp_comm_name(comm), !sendbuf ? "the send buffer" : "the receive buffer",
			       elements);
	llmp_status st = rt_check_host(ctx, sendbuf, "the send buffer");
	if (st == LLMP_OK && recvbuf != sendbuf)
		st = rt_check_host(ctx, recvbuf, "the receive buffer");
	if (st != LLMP_OK)
		return st;
	call->comm = comm;
	call->op_name = op_name;
	call->dtype = dtype;
	call->op = op;
	call->esize = esize;
	call->seq = comm->seq;
	return LLMP_OK;
}

llmp_status rt_call_begin(rt_call *call, llmp_comm *comm, const char *op_name,
			  const void *sendbuf, const void *recvbuf, size_t elements,
			  llmp_dtype dtype, llmp_op op, bool op_used)
{
	llmp_status st = rt_check_args(call, comm, op_name, sendbuf, recvbuf, elements, dtype, op, op_used);
	if (st == LLMP_OK)
		comm->seq++;
	return st;
}

llmp_status rt_exchange(rt_call *call, const void *sendbuf, size_t sendbytes, uint32_t dst,
			void *recvbuf, size_t recvbytes, uint32_t src)
{
	llmp_comm *comm = call->comm;
	rt_req reqs[2];
	size_t n = 0;
	llmp_status st = LLMP_OK;

	if (src != UINT32_MAX && (st = rt_tx_irecv(comm, src, rt_call_tag(call, src), recvbuf,
						  recvbytes, &reqs[n])) == LLMP_OK)
		n++;
	if (st == LLMP_OK && dst != UINT32_MAX &&
	    (st = rt_tx_isend(comm, dst, rt_call_tag(call, comm->rank), sendbuf, sendbytes,
			      &reqs[n])) == LLMP_OK)
		n++;
	if (st == LLMP_OK)
		return rt_tx_wait(comm, call->op_name, reqs, n);
	/* Posting failed (an unreachable peer): what was posted must not linger. */
	rt_tx_drop(comm->ctx, reqs, n);
	comm->broken = true;
	snprintf(comm->failure, sizeof comm->failure, "%s", comm->ctx->errmsg);
	return st;
}

llmp_status rt_ring_allgather(rt_call *call, char *buf, const rt_blocks *blocks, uint32_t shift)
{
	llmp_comm *comm = call->comm;
	uint32_t n = comm->size, r = comm->rank;
	uint32_t right = (r + 1) % n, left = (r + n - 1) % n;

	for (uint32_t step = 0; step + 1 < n; step++) {
		uint32_t out = (r + shift + n - step % n) % n;
		uint32_t in = (r + shift + 2 * n - step % n - 1) % n;
		llmp_status st = rt_exchange(call, buf + rt_block_offset(blocks, out),
					     rt_block_elems(blocks, out) * blocks->esize, right,
					     buf + rt_block_offset(blocks, in),
					     rt_block_elems(blocks, in) * blocks->esize, left);
		if (st != LLMP_OK)
			return st;
	}
	return LLMP_OK;
}

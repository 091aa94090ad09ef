/* SPDX-License-Identifier: BSD-3-Clause */
/* coll.c - argument checks and the pieces the collective algorithms share. */
#include "coll.h"

#include "kernels/reduce.h"

#include <stdio.h>
#include <stdlib.h>

llmp_status rt_check_args(rt_call *call, llmp_comm *comm, const char *op_name, const void *sendbuf,
			  const void *recvbuf, size_t elements, llmp_dtype dtype, llmp_op op, bool op_used)
{
	if (!comm)
		return LLMP_ERR_ARG;
	llmp_ctx *ctx = comm->ctx;
	if (comm->broken)
		return rt_fail(ctx, LLMP_ERR_STATE, "%s on %s: the communicator broke earlier: %s", op_name,
			       llmp_comm_name(comm), comm->failure);
	if ((unsigned)dtype >= LLMP_NDTYPES)
		return rt_fail(ctx, LLMP_ERR_ARG, "%s on %s: dtype %d is not an llmp_dtype", op_name,
			       llmp_comm_name(comm), (int)dtype);
	if (op_used && (unsigned)op >= LLMP_NOPS)
		return rt_fail(ctx, LLMP_ERR_ARG, "%s on %s: op %d is not an llmp_op", op_name,
			       llmp_comm_name(comm), (int)op);
	size_t esize = llmp_dtype_size(dtype);
	if (elements > SIZE_MAX / esize)
		return rt_fail(ctx, LLMP_ERR_ARG, "%s on %s: %zu elements of %s overflow size_t", op_name,
			       llmp_comm_name(comm), elements, llmp_dtype_name(dtype));
	if (elements > 0 && (!sendbuf || !recvbuf))
		return rt_fail(ctx, LLMP_ERR_ARG, "%s on %s: %s is NULL with %zu elements", op_name,
			       llmp_comm_name(comm), !sendbuf ? "the send buffer" : "the receive buffer",
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

llmp_status rt_call_begin(rt_call *call, llmp_comm *comm, const char *op_name, const void *sendbuf,
			  const void *recvbuf, size_t elements, llmp_dtype dtype, llmp_op op, bool op_used)
{
	llmp_status st = rt_check_args(call, comm, op_name, sendbuf, recvbuf, elements, dtype, op, op_used);
	if (st == LLMP_OK)
		comm->seq++;
	return st;
}

llmp_status rt_call_begin_blocks(rt_call *call, llmp_comm *comm, const char *op_name, const void *sendbuf,
				 const void *recvbuf, size_t count, llmp_dtype dtype, llmp_op op,
				 bool op_used)
{
	if (comm && count > SIZE_MAX / comm->size)
		return rt_fail(comm->ctx, LLMP_ERR_ARG, "%s on %s: %zu x %u elements overflow", op_name,
			       llmp_comm_name(comm), count, comm->size);
	return rt_call_begin(call, comm, op_name, sendbuf, recvbuf, comm ? count * comm->size : 0, dtype, op,
			     op_used);
}

llmp_status rt_exchange(rt_call *call, const void *sendbuf, size_t sendbytes, uint32_t dst, void *recvbuf,
			size_t recvbytes, uint32_t src)
{
	llmp_comm *comm = call->comm;
	rt_req reqs[2];
	size_t n = 0;
	llmp_status st = LLMP_OK;

	if (src != UINT32_MAX &&
	    (st = rt_tx_irecv(comm, src, rt_call_tag(call, src), recvbuf, recvbytes, &reqs[n])) == LLMP_OK)
		n++;
	if (st == LLMP_OK && dst != UINT32_MAX &&
	    (st = rt_tx_isend(comm, dst, rt_call_tag(call, comm->rank), sendbuf, sendbytes, &reqs[n])) ==
		    LLMP_OK)
		n++;
	if (st == LLMP_OK)
		return rt_tx_wait(comm, call->op_name, reqs, n);
	/* Posting failed (an unreachable peer): what was posted must not linger. */
	rt_tx_drop(comm->ctx, reqs, n);
	comm->broken = true;
	snprintf(comm->failure, sizeof comm->failure, "%s", comm->ctx->errmsg);
	return st;
}

static size_t segment_count(size_t bytes)
{
	return (bytes + RT_SEGMENT_BYTES - 1) / RT_SEGMENT_BYTES;
}

static size_t segment_bytes(size_t total, size_t i)
{
	size_t off = i * RT_SEGMENT_BYTES;
	return total - off < RT_SEGMENT_BYTES ? total - off : RT_SEGMENT_BYTES;
}

/* A window of requests, indexed by segment number modulo RT_WINDOW. */
struct window {
	rt_req req[RT_WINDOW];
	size_t total, posted, done; /* segments */
};

static llmp_status post_segment(rt_call *call, struct window *w, bool recv, uint32_t peer, char *buf,
				size_t bytes)
{
	size_t i = w->posted, len = segment_bytes(bytes, i);
	rt_req *q = &w->req[i % RT_WINDOW];
	llmp_status st = recv ? rt_tx_irecv(call->comm, peer, rt_call_tag(call, peer), buf, len, q)
			      : rt_tx_isend(call->comm, peer, rt_call_tag(call, call->comm->rank),
					    buf + i * RT_SEGMENT_BYTES, len, q);
	if (st == LLMP_OK)
		w->posted++;
	return st;
}

static void drop_window(llmp_ctx *ctx, struct window *w)
{
	for (size_t i = w->done; i < w->posted; i++)
		rt_tx_drop(ctx, &w->req[i % RT_WINDOW], 1);
	w->done = w->posted;
}

llmp_status rt_exchange_segments(rt_call *call, const void *sendbuf, size_t sendbytes, uint32_t dst,
				 void *recvbuf, size_t recvbytes, uint32_t src, rt_consume_fn consume,
				 void *arg)
{
	llmp_comm *comm = call->comm;
	struct window in = { .total = src != UINT32_MAX ? segment_count(recvbytes) : 0 };
	struct window out = { .total = dst != UINT32_MAX ? segment_count(sendbytes) : 0 };
	char *slots = NULL;
	llmp_status st = LLMP_OK;

	llmp_ctx *ctx = comm->ctx;
	if (consume && !ctx->slots && !(ctx->slots = malloc(RT_WINDOW * RT_SEGMENT_BYTES)))
		return rt_fail(ctx, LLMP_ERR_NOMEM, "%s: segment buffers", call->op_name);
	slots = ctx->slots;
	/* Where segment i lands. */
#define LANDING(i) \
	(consume ? slots + ((i) % RT_WINDOW) * RT_SEGMENT_BYTES : (char *)recvbuf + (i)*RT_SEGMENT_BYTES)
	while (st == LLMP_OK && in.posted < in.total && in.posted < RT_WINDOW)
		st = post_segment(call, &in, true, src, LANDING(in.posted), recvbytes);
	while (st == LLMP_OK && out.posted < out.total && out.posted < RT_WINDOW)
		st = post_segment(call, &out, false, dst, (char *)sendbuf, sendbytes);

	/* Take segments in order; keep both windows full; a send retires behind each receive. */
	while (st == LLMP_OK && (in.done < in.total || out.done < out.total)) {
		if (in.done < in.total) {
			size_t i = in.done;
			st = rt_tx_wait(comm, call->op_name, &in.req[i % RT_WINDOW], 1);
			if (st != LLMP_OK)
				break;
			in.done++;
			if (consume)
				st = consume(arg, i * RT_SEGMENT_BYTES, LANDING(i),
					     segment_bytes(recvbytes, i));
			if (st == LLMP_OK && in.posted < in.total)
				st = post_segment(call, &in, true, src, LANDING(in.posted), recvbytes);
		}
		if (st == LLMP_OK && out.done < out.total && (out.done < in.done || in.done == in.total)) {
			st = rt_tx_wait(comm, call->op_name, &out.req[out.done % RT_WINDOW], 1);
			if (st != LLMP_OK)
				break;
			out.done++;
			if (out.posted < out.total)
				st = post_segment(call, &out, false, dst, (char *)sendbuf, sendbytes);
		}
	}
#undef LANDING
	if (st != LLMP_OK) {
		drop_window(comm->ctx, &in);
		drop_window(comm->ctx, &out);
		comm->broken = true;
		if (!comm->failure[0])
			snprintf(comm->failure, sizeof comm->failure, "%s", comm->ctx->errmsg);
	}
	return st;
}

llmp_status rt_fold_segment(void *arg, size_t offset, const void *data, size_t bytes)
{
	const struct rt_fold *f = arg;
	return kern_reduce(f->dst + offset, f->mine + offset, data, bytes / f->call->esize, f->call->dtype,
			   f->call->op);
}

llmp_status rt_ring_allgather(rt_call *call, char *buf, const rt_blocks *blocks, uint32_t shift)
{
	llmp_comm *comm = call->comm;
	uint32_t n = comm->size, r = comm->rank;
	uint32_t right = (r + 1) % n, left = (r + n - 1) % n;

	for (uint32_t step = 0; step + 1 < n; step++) {
		uint32_t out = (r + shift + n - step % n) % n;
		uint32_t in = (r + shift + 2 * n - step % n - 1) % n;
		llmp_status st = rt_exchange_segments(
			call, buf + rt_block_offset(blocks, out), rt_block_elems(blocks, out) * blocks->esize,
			right, buf + rt_block_offset(blocks, in), rt_block_elems(blocks, in) * blocks->esize,
			left, NULL, NULL);
		if (st != LLMP_OK)
			return st;
	}
	return LLMP_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll.h - what the collective algorithms share: argument checks, the
 * split of a buffer into one block per member, and the ring allgather that
 * ends allreduce, allgather and large broadcasts.
 */
#ifndef LLMP_COLL_H
#define LLMP_COLL_H

#include "runtime/comm/rt.h"
#include "runtime/comm/transport.h"

/*
 * agree.c: every rank learns whether any rank's local status failed, and
 * the first failing rank's message (from its llmp_errmsg), prefixed with
 * what was being done. Collective over the world.
 */
llmp_status rt_agree(llmp_ctx *ctx, const char *doing, llmp_status local);

/* The arguments of one collective call, checked. */
typedef struct rt_call {
	llmp_comm *comm;
	const char *op_name; /* "allreduce", ... for messages */
	llmp_dtype dtype;
	llmp_op op;
	size_t esize; /* bytes per element */
	uint64_t seq; /* this operation's sequence number on comm */
} rt_call;

/*
 * Check what every call takes: a usable communicator, dtype (and op
 * when op_used), buffers that are not NULL when elements > 0 and are host
 * memory, and elements * dtype size that fits in size_t. comm == NULL can
 * only be reported by status.
 */
llmp_status rt_check_args(rt_call *call, llmp_comm *comm, const char *op_name, const void *sendbuf,
			  const void *recvbuf, size_t elements, llmp_dtype dtype, llmp_op op, bool op_used);

/* rt_check_args, then give a collective its sequence number on comm. */
llmp_status rt_call_begin(rt_call *call, llmp_comm *comm, const char *op_name, const void *sendbuf,
			  const void *recvbuf, size_t elements, llmp_dtype dtype, llmp_op op, bool op_used);

/* rt_call_begin for a call whose buffer holds one block of count per member. */
llmp_status rt_call_begin_blocks(rt_call *call, llmp_comm *comm, const char *op_name, const void *sendbuf,
				 const void *recvbuf, size_t count, llmp_dtype dtype, llmp_op op,
				 bool op_used);

/* The tag of this call's messages from comm rank src. */
static inline uint64_t rt_call_tag(const rt_call *call, uint32_t src)
{
	return rt_tag(call->comm->kind, false, call->seq, src);
}

/* count elements in n blocks, the first count % n one element longer. */
typedef struct rt_blocks {
	size_t quot, rem, esize;
} rt_blocks;

static inline rt_blocks rt_blocks_of(size_t count, uint32_t n, size_t esize)
{
	rt_blocks b = { count / n, count % n, esize };
	return b;
}
static inline size_t rt_block_elems(const rt_blocks *b, uint32_t i)
{
	return b->quot + (i < b->rem);
}
static inline size_t rt_block_offset(const rt_blocks *b, uint32_t i) /* bytes */
{
	return (i * b->quot + (i < b->rem ? i : b->rem)) * b->esize;
}

/*
 * Large transfers go as segments, RT_WINDOW of them in flight each way, so
 * that a received segment is reduced while it is still in cache and the
 * next ones arrive meanwhile. Chosen by measurement on the development VM
 * (doc/benchmarks.md: 16 KiB-1 MiB segments, windows of 4-32); a multiple
 * of every element size. The landing slots (RT_WINDOW segments) belong to
 * the context: calls on it are serialised.
 */
#define RT_SEGMENT_BYTES ((size_t)256 << 10)
#define RT_WINDOW 8

/* Takes one received segment: `bytes` at `offset` of the transfer. */
typedef llmp_status (*rt_consume_fn)(void *arg, size_t offset, const void *data, size_t bytes);

/*
 * Send sendbytes to dst and receive recvbytes from src in segments. With
 * consume NULL they land in recvbuf; otherwise in scratch slots, each
 * handed to consume (in order) as soon as it arrives.
 */
llmp_status rt_exchange_segments(rt_call *call, const void *sendbuf, size_t sendbytes, uint32_t dst,
				 void *recvbuf, size_t recvbytes, uint32_t src, rt_consume_fn consume,
				 void *arg);

/* Where received segments are reduced: dst[k] = mine[k] op segment[k]. */
struct rt_fold {
	char *dst;
	const char *mine;
	const rt_call *call;
};
/* An rt_consume_fn; arg is a struct rt_fold. */
llmp_status rt_fold_segment(void *arg, size_t offset, const void *data, size_t bytes);

/*
 * Ring allgather in place over blocks: member r starts with block
 * (r + shift) mod n complete in buf and ends with all of them.
 */
llmp_status rt_ring_allgather(rt_call *call, char *buf, const rt_blocks *blocks, uint32_t shift);

/* Send to dst and receive from src (either may be UINT32_MAX: none), then wait. */
llmp_status rt_exchange(rt_call *call, const void *sendbuf, size_t sendbytes, uint32_t dst, void *recvbuf,
			size_t recvbytes, uint32_t src);

#endif /* LLMP_COLL_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device_coll.c - collectives on device buffers: NCCL's, on the caller's
 * CUDA stream, over the communicator of the llmp_comm's group.
 *
 * A call enqueues and returns, as NCCL does: the result is there when the
 * stream reaches it. What fails later is the watchdog's to find
 * (watchdog.c); a call made after a failure returns it, naming the group or
 * the rank. Arithmetic is NCCL's: bf16 and fp16 sums are rounded at every
 * step of its algorithm, not once in fp32 as the host path does.
 */
#include "device_internal.h"

#include <string.h>

#include <llmp/llmp_device.h>

#ifdef LLMP_HAVE_NCCL
bool rt_nccl_type(llmp_dtype dtype, ncclDataType_t *out)
{
	switch (dtype) {
	case LLMP_FLOAT32: *out = ncclFloat32; return true;
	case LLMP_FLOAT64: *out = ncclFloat64; return true;
	case LLMP_BFLOAT16: *out = ncclBfloat16; return true;
	case LLMP_FLOAT16: *out = ncclFloat16; return true;
	case LLMP_INT32: *out = ncclInt32; return true;
	case LLMP_INT64: *out = ncclInt64; return true;
	case LLMP_UINT8: *out = ncclUint8; return true;
	default: return false;
	}
}

static bool nccl_op(llmp_op op, ncclRedOp_t *out)
{
	switch (op) {
	case LLMP_SUM: *out = ncclSum; return true;
	case LLMP_PROD: *out = ncclProd; return true;
	case LLMP_MIN: *out = ncclMin; return true;
	case LLMP_MAX: *out = ncclMax; return true;
	case LLMP_AVG: *out = ncclAvg; return true;
	default: return false;
	}
}

enum coll { ALLREDUCE, REDUCE_SCATTER, ALLGATHER, BROADCAST };

/*
 * The communicator's counters (metrics.h, llmp_comm_get_stats): a call, and
 * the bytes each rank sends and receives in NCCL's ring algorithm for a
 * buffer of `bytes` per member (allreduce 2(n-1)/n of it, reduce-scatter
 * and allgather (n-1) times it, broadcast once). Its time is the GPU's,
 * after the call has returned: counted once the stream has passed it
 * (inflight.c).
 */
static void count_bytes(llmp_comm *comm, enum coll c, size_t bytes)
{
	double n = comm->size, moved = c == ALLREDUCE   ? 2 * (n - 1) / n * (double)bytes
				       : c == BROADCAST ? (double)bytes
							: (n - 1) * (double)bytes;
	comm->metrics.ops++;
	comm->metrics.bytes_sent += (uint64_t)moved;
	comm->metrics.bytes_recvd += (uint64_t)moved;
}
static const char *const coll_names[] = { "llmp_device_allreduce", "llmp_device_reduce_scatter",
					  "llmp_device_allgather", "llmp_device_broadcast" };

/* Check the arguments, find the communicator, enqueue; under the device lock, so no abort runs meanwhile. */
static llmp_status enqueue(llmp_comm *comm, enum coll c, const void *send, void *recv, size_t count,
			   llmp_dtype dtype, llmp_op op, uint32_t root, void *stream)
{
	if (!comm)
		return LLMP_ERR_ARG;
	llmp_ctx *ctx = comm->ctx;
	const char *name = coll_names[c];
	llmp_status st;
	struct rt_device *d = rt_device_ready(ctx, name, &st);
	ncclDataType_t type;
	ncclRedOp_t nop = ncclSum;
	if (!d)
		return st;
	if (!rt_nccl_type(dtype, &type))
		return rt_fail(ctx, LLMP_ERR_ARG, "%s: dtype %d is not an llmp_dtype", name, (int)dtype);
	if ((c == ALLREDUCE || c == REDUCE_SCATTER) && !nccl_op(op, &nop))
		return rt_fail(ctx, LLMP_ERR_ARG, "%s: op %d is not an llmp_op", name, (int)op);
	if ((count && (!send || !recv)) || (c == BROADCAST && root >= comm->size))
		return rt_fail(ctx, LLMP_ERR_ARG, "%s on the %s group: %s", name, llmp_comm_name(comm),
			       c == BROADCAST && root >= comm->size ? "root is not a member"
								    : "a NULL buffer");
	int kind = comm->kind;
	pthread_mutex_lock(&d->lock);
	st = d->failed;
	ncclComm_t nc = st ? NULL : d->g[kind].comm;
	ncclResult_t r = ncclSuccess;
	if (!st && !nc) {
		pthread_mutex_unlock(&d->lock);
		return rt_fail(ctx, LLMP_ERR_ARG,
			       "%s: the %s group has one member: nothing to do on the device", name,
			       llmp_comm_name(comm));
	}
	if (!st &&
	    (st = rt_inflight_started(ctx, d, comm, name, count, stream)) != LLMP_OK) { /* nothing enqueued */
		pthread_mutex_unlock(&d->lock);
		return st;
	}
	if (!st) {
		cudaStream_t s = (cudaStream_t)stream;
		switch (c) {
		case ALLREDUCE: r = d->nccl.all_reduce(send, recv, count, type, nop, nc, s); break;
		case REDUCE_SCATTER: r = d->nccl.reduce_scatter(send, recv, count, type, nop, nc, s); break;
		case ALLGATHER: r = d->nccl.all_gather(send, recv, count, type, nc, s); break;
		case BROADCAST: r = d->nccl.broadcast(send, recv, count, type, (int)root, nc, s); break;
		}
	}
	char why[LLMP_MSG_MAX];
	bool enqueued = !st && (r == ncclSuccess || r == ncclInProgress);
	if (!st && !enqueued) {
		rt_nccl_why(&d->nccl, nc, r, why, sizeof why);
		rt_inflight_abandoned(d);
	}
	llmp_status watched = enqueued ? rt_inflight_enqueued(ctx, d, name, stream) : LLMP_OK;
	pthread_mutex_unlock(&d->lock);
	if (st)
		return rt_fail(ctx, st, "%s on the %s group: %s", name, llmp_comm_name(comm), d->why);
	if (!enqueued) {
		st = rt_device_fail(d, LLMP_ERR_DEVICE, "%s on the %s group: %s", name, llmp_comm_name(comm),
				    why);
		return rt_fail(ctx, st, "%s", d->why);
	}
	if (watched != LLMP_OK) /* enqueued, but beyond the deadline's sight: the rank's state is unknown */
		return rt_fail(ctx, rt_device_fail(d, watched, "%s", llmp_errmsg(ctx)), "%s", d->why);
	count_bytes(comm, c, count * llmp_dtype_size(dtype));
	return LLMP_OK;
}
#endif /* LLMP_HAVE_NCCL */

llmp_status llmp_device_allreduce(llmp_comm *comm, const void *send, void *recv, size_t count,
				  llmp_dtype dtype, llmp_op op, void *stream)
{
#ifdef LLMP_HAVE_NCCL
	return enqueue(comm, ALLREDUCE, send, recv, count, dtype, op, 0, stream);
#else
	(void)send, (void)recv, (void)count, (void)dtype, (void)op, (void)stream;
	return comm ? rt_device_not_built(comm->ctx, "llmp_device_allreduce") : LLMP_ERR_ARG;
#endif
}

llmp_status llmp_device_reduce_scatter(llmp_comm *comm, const void *send, void *recv, size_t count,
				       llmp_dtype dtype, llmp_op op, void *stream)
{
#ifdef LLMP_HAVE_NCCL
	return enqueue(comm, REDUCE_SCATTER, send, recv, count, dtype, op, 0, stream);
#else
	(void)send, (void)recv, (void)count, (void)dtype, (void)op, (void)stream;
	return comm ? rt_device_not_built(comm->ctx, "llmp_device_reduce_scatter") : LLMP_ERR_ARG;
#endif
}

llmp_status llmp_device_allgather(llmp_comm *comm, const void *send, void *recv, size_t count,
				  llmp_dtype dtype, void *stream)
{
#ifdef LLMP_HAVE_NCCL
	return enqueue(comm, ALLGATHER, send, recv, count, dtype, LLMP_SUM, 0, stream);
#else
	(void)send, (void)recv, (void)count, (void)dtype, (void)stream;
	return comm ? rt_device_not_built(comm->ctx, "llmp_device_allgather") : LLMP_ERR_ARG;
#endif
}

llmp_status llmp_device_broadcast(llmp_comm *comm, const void *send, void *recv, size_t count,
				  llmp_dtype dtype, uint32_t root, void *stream)
{
#ifdef LLMP_HAVE_NCCL
	return enqueue(comm, BROADCAST, send, recv, count, dtype, LLMP_SUM, root, stream);
#else
	(void)send, (void)recv, (void)count, (void)dtype, (void)root, (void)stream;
	return comm ? rt_device_not_built(comm->ctx, "llmp_device_broadcast") : LLMP_ERR_ARG;
#endif
}

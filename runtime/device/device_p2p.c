/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device_p2p.c - pipeline transfers of device buffers: NCCL's send and
 * receive on the communicator of the llmp_comm's group, grouped per
 * schedule step by llmp_device_group_start/_end (llmp_device.h).
 *
 * A failure is the context's, as for the collectives: the first one aborts
 * every communicator (watchdog.c) and every later call returns it.
 */
#include "device_internal.h"

#include <llmp/llmp_device.h>

#ifdef LLMP_HAVE_NCCL
/* One send or receive: checked, then enqueued under the device lock (no abort meanwhile). */
static llmp_status transfer(llmp_comm *comm, bool send, void *buf, size_t count, llmp_dtype dtype,
			    uint32_t peer, void *stream)
{
	if (!comm)
		return LLMP_ERR_ARG;
	llmp_ctx *ctx = comm->ctx;
	const char *name = send ? "llmp_device_send" : "llmp_device_recv";
	llmp_status st;
	struct rt_device *d = rt_device_ready(ctx, name, &st);
	ncclDataType_t type;
	if (!d)
		return st;
	if (!rt_nccl_type(dtype, &type))
		return rt_fail(ctx, LLMP_ERR_ARG, "%s: dtype %d is not an llmp_dtype", name, (int)dtype);
	if (peer >= comm->size || peer == comm->rank || (count && !buf))
		return rt_fail(ctx, LLMP_ERR_ARG, "%s on the %s group: %s", name, llmp_comm_name(comm),
			       count && !buf ? "a NULL buffer" : "peer is not another member");
	pthread_mutex_lock(&d->lock);
	st = d->failed;
	ncclComm_t nc = st ? NULL : d->g[comm->kind].comm;
	ncclResult_t r = ncclSuccess;
	char why[LLMP_MSG_MAX];
	if (!st && nc &&
	    (st = rt_inflight_started(ctx, d, comm, name, count, stream)) != LLMP_OK) { /* nothing enqueued */
		pthread_mutex_unlock(&d->lock);
		return st;
	}
	if (!st && nc)
		r = send ? d->nccl.send(buf, count, type, (int)peer, nc, (cudaStream_t)stream)
			 : d->nccl.recv(buf, count, type, (int)peer, nc, (cudaStream_t)stream);
	bool enqueued = !st && nc && (r == ncclSuccess || r == ncclInProgress);
	if (!st && nc && !enqueued) {
		rt_nccl_why(&d->nccl, nc, r, why, sizeof why);
		rt_inflight_abandoned(d);
	}
	llmp_status watched = enqueued ? rt_inflight_enqueued(ctx, d, name, stream) : LLMP_OK;
	pthread_mutex_unlock(&d->lock);
	if (st)
		return rt_fail(ctx, st, "%s on the %s group: %s", name, llmp_comm_name(comm), d->why);
	if (!nc)
		return rt_fail(ctx, LLMP_ERR_STATE, "%s: the %s group has no NCCL communicator", name,
			       llmp_comm_name(comm));
	if (!enqueued) {
		st = rt_device_fail(d, LLMP_ERR_DEVICE, "%s on the %s group: %s", name, llmp_comm_name(comm),
				    why);
		return rt_fail(ctx, st, "%s", d->why);
	}
	if (watched != LLMP_OK) /* enqueued, but beyond the deadline's sight: the rank's state is unknown */
		return rt_fail(ctx, rt_device_fail(d, watched, "%s", llmp_errmsg(ctx)), "%s", d->why);
	/* The communicator's counters (metrics.h): the call and its bytes; its GPU time once passed (inflight.c). */
	comm->metrics.ops++;
	*(send ? &comm->metrics.bytes_sent : &comm->metrics.bytes_recvd) += count * llmp_dtype_size(dtype);
	return LLMP_OK;
}

static llmp_status group_call(llmp_ctx *ctx, bool start)
{
	const char *name = start ? "llmp_device_group_start" : "llmp_device_group_end";
	llmp_status st;
	struct rt_device *d = rt_device_ready(ctx, name, &st);
	if (!d)
		return st;
	if (d->failed)
		return rt_fail(ctx, d->failed, "%s: %s", name, d->why);
	/* Outside the lock: the watchdog may have to abort while NCCL works. */
	ncclResult_t r = start ? d->nccl.group_start() : d->nccl.group_end();
	pthread_mutex_lock(&d->lock);
	st = d->failed;
	if (!st)
		d->group_depth += start ? 1 : d->group_depth > 0 ? -1 : 0;
	bool launched = !st && !start && d->group_depth == 0 && (r == ncclSuccess || r == ncclInProgress);
	/* The group's operations are on their streams now: their deadline starts. */
	llmp_status watched = launched ? rt_inflight_group_ended(ctx, d) : LLMP_OK;
	char why[LLMP_MSG_MAX];
	if (!st && r != ncclSuccess && r != ncclInProgress)
		rt_nccl_why(&d->nccl, NULL, r, why, sizeof why);
	pthread_mutex_unlock(&d->lock);
	if (st)
		return rt_fail(ctx, st, "%s: %s", name, d->why);
	if (r != ncclSuccess && r != ncclInProgress) {
		st = rt_device_fail(d, LLMP_ERR_DEVICE, "%s: %s", name, why);
		return rt_fail(ctx, st, "%s", d->why);
	}
	if (watched != LLMP_OK)
		return rt_fail(ctx, rt_device_fail(d, watched, "%s", llmp_errmsg(ctx)), "%s", d->why);
	return LLMP_OK;
}
#endif

llmp_status llmp_device_group_start(llmp_ctx *ctx)
{
	if (!ctx)
		return LLMP_ERR_ARG;
#ifdef LLMP_HAVE_NCCL
	return group_call(ctx, true);
#else
	return rt_device_not_built(ctx, "llmp_device_group_start");
#endif
}

llmp_status llmp_device_group_end(llmp_ctx *ctx)
{
	if (!ctx)
		return LLMP_ERR_ARG;
#ifdef LLMP_HAVE_NCCL
	return group_call(ctx, false);
#else
	return rt_device_not_built(ctx, "llmp_device_group_end");
#endif
}

llmp_status llmp_device_send(llmp_comm *comm, const void *buf, size_t count, llmp_dtype dtype, uint32_t peer,
			     void *stream)
{
#ifdef LLMP_HAVE_NCCL
	return transfer(comm, true, (void *)buf, count, dtype, peer, stream);
#else
	(void)buf, (void)count, (void)dtype, (void)peer, (void)stream;
	return comm ? rt_device_not_built(comm->ctx, "llmp_device_send") : LLMP_ERR_ARG;
#endif
}

llmp_status llmp_device_recv(llmp_comm *comm, void *buf, size_t count, llmp_dtype dtype, uint32_t peer,
			     void *stream)
{
#ifdef LLMP_HAVE_NCCL
	return transfer(comm, false, buf, count, dtype, peer, stream);
#else
	(void)buf, (void)count, (void)dtype, (void)peer, (void)stream;
	return comm ? rt_device_not_built(comm->ctx, "llmp_device_recv") : LLMP_ERR_ARG;
#endif
}

llmp_status llmp_device_sendrecv(llmp_comm *comm, const void *sendbuf, size_t sendcount, uint32_t dst,
				 void *recvbuf, size_t recvcount, uint32_t src, llmp_dtype dtype,
				 void *stream)
{
	if (!comm)
		return LLMP_ERR_ARG;
	llmp_status st = llmp_device_group_start(comm->ctx);
	if (st != LLMP_OK)
		return st;
	st = llmp_device_send(comm, sendbuf, sendcount, dtype, dst, stream);
	if (st == LLMP_OK)
		st = llmp_device_recv(comm, recvbuf, recvcount, dtype, src, stream);
	llmp_status end = llmp_device_group_end(comm->ctx); /* always closed, even after a refused call */
	return st != LLMP_OK ? st : end;
}

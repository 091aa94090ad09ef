/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inflight.c - a deadline, and the GPU time, of every device operation.
 *
 * A collective or a pipeline step enqueued on a stream returns at once.
 * When a member is stuck (its process alive but never making the matching
 * call, a link down with no error), the stream never gets past the
 * operation, and NCCL has nothing to report. So every operation enqueued is
 * followed by a CUDA event recorded on the caller's stream, and the
 * watchdog (watchdog.c) asks each event whether the stream has passed it;
 * one still pending after the context's timeout (LLMP_TIMEOUT) fails the
 * device path: every communicator is aborted, so the stuck kernels return,
 * and every later call names the operation, its group and how long it
 * waited. The job layer then stops and requeues as for the host path.
 *
 * Every operation also gets a start event, recorded on the stream just
 * before NCCL enqueues it; once the stream has passed the end event, the
 * time the GPU took between the two (cuEventElapsedTime) is added to the
 * communicator's time in calls (metrics.h, device_ns), by whichever finds
 * it passed first: the watchdog, or the next caller reusing its events.
 * That time runs from the moment the stream could start the operation
 * (the work before it on the stream done) to its end, so it includes the
 * wait for the slowest member: NCCL reports no member's arrival, so a
 * device operation blames none (doc/metrics-json.md).
 *
 * Operations inside llmp_device_group_start/_end are launched by NCCL at
 * the group's end, so their end events are recorded there, one per stream
 * the group used, and their start events at the stream's first operation
 * in the group; the group's time goes to that operation's communicator.
 *
 * The pending operations form a ring, oldest first. Events are reused, in
 * pairs: the caller takes back those at the head the streams have passed,
 * and makes a new pair only when none is free, so a program whose GPU runs
 * behind holds two events per operation pending, and one that keeps up
 * holds a few. Operations on different streams complete out of order; the
 * watchdog marks them done where it finds them.
 *
 * The events come from the CUDA driver, loaded with dlopen (cuda_api.h).
 * Without one (no driver: a test with NCCL's test double alone) operations
 * are watched only through NCCL's errors and the members' processes, as
 * llmp_device_get_info says (deadline, deadline_why).
 *
 * Locking: the caller holds the device lock (d->lock) for every function
 * here but rt_inflight_check, which takes it.
 */
#include "device_internal.h"

#include <stdlib.h>
#include <string.h>

#ifdef LLMP_HAVE_NCCL
#define INFLIGHT_FIRST_CAP 64

void rt_inflight_init(struct rt_device *d)
{
	struct rt_inflight *in = &d->inflight;
	char msg[LLMP_MSG_MAX];
	if (rt_cuda_load(&in->cu, msg, sizeof msg) != LLMP_OK) {
		snprintf(in->why, sizeof in->why, "no deadline per device operation: %.200s", msg);
		return;
	}
	in->on = true;
}

static void destroy_pair(struct rt_inflight *in, struct rt_event_pair ev)
{
	in->cu.event_destroy(ev.start);
	in->cu.event_destroy(ev.end);
}

void rt_inflight_fini(struct rt_device *d)
{
	struct rt_inflight *in = &d->inflight;
	if (!in->on)
		return;
	/* The events belong to the program's context, which may be gone at exit: best effort. */
	bool pushed = in->ctx && in->cu.ctx_push_current(in->ctx) == RT_CUDA_SUCCESS;
	for (size_t i = 0; pushed && i < in->nops; i++)
		destroy_pair(in, in->ring[(in->head + i) % in->cap].ev);
	for (size_t i = 0; pushed && i < in->nspare; i++)
		destroy_pair(in, in->spare[i]);
	for (size_t i = 0; pushed && i < in->ngrouped; i++)
		destroy_pair(in, in->grouped[i].ev);
	if (pushed && in->has_started)
		destroy_pair(in, in->started);
	if (pushed) {
		rt_cu_ctx popped;
		in->cu.ctx_pop_current(&popped);
	}
	free(in->ring);
	free(in->spare);
	rt_cuda_unload(&in->cu);
	memset(in, 0, sizeof *in);
}

static llmp_status cuda_fail(llmp_ctx *ctx, struct rt_inflight *in, const char *name, const char *call,
			     rt_cu_result r)
{
	char why[160];
	return rt_fail(ctx, LLMP_ERR_DEVICE, "%s: %s (for its deadline): %s", name, call,
		       rt_cuda_why(&in->cu, r, why, sizeof why));
}

static struct rt_inflight_op *at(struct rt_inflight *in, size_t i)
{
	return &in->ring[(in->head + i) % in->cap];
}

/*
 * The stream has passed op: its GPU time to its communicator, once. An
 * elapsed time the driver refuses is not counted (the events are ours and
 * timed, so that would be a driver fault, not a reason to fail training).
 */
static void passed(struct rt_inflight *in, struct rt_inflight_op *op)
{
	float ms = 0;
	op->done = true;
	if (in->cu.event_elapsed_time(&ms, op->ev.start, op->ev.end) == RT_CUDA_SUCCESS && ms > 0)
		rt_metrics_device_time(&op->comm->metrics, (uint64_t)((double)ms * 1e6 + 0.5));
}

/* Give the events of the operations the streams have passed, from the head, back to the spares. */
static void reap(struct rt_inflight *in)
{
	while (in->nops > 0) {
		struct rt_inflight_op *op = at(in, 0);
		if (!op->done && in->cu.event_query(op->ev.end) != RT_CUDA_SUCCESS)
			break;
		if (!op->done)
			passed(in, op);
		in->spare[in->nspare++] = op->ev;
		in->head = (in->head + 1) % in->cap;
		in->nops--;
	}
}

/* Room for one more event pair, wherever it ends up (ring or spares): both doubled, the ring in order. */
static bool grow(struct rt_inflight *in)
{
	size_t pairs = in->nops + in->nspare + in->ngrouped + in->has_started;
	if (pairs < in->cap)
		return true;
	size_t cap = in->cap ? 2 * in->cap : INFLIGHT_FIRST_CAP;
	struct rt_inflight_op *ring = malloc(cap * sizeof *ring);
	struct rt_event_pair *spare = realloc(in->spare, cap * sizeof *spare);
	if (spare)
		in->spare = spare;
	if (!ring || !spare) {
		free(ring);
		return false;
	}
	for (size_t i = 0; i < in->nops; i++)
		ring[i] = *at(in, i);
	free(in->ring);
	in->ring = ring;
	in->head = 0;
	in->cap = cap;
	return true;
}

/* A new pair of timed events among the spares. */
static llmp_status new_pair(llmp_ctx *ctx, struct rt_inflight *in, const char *name)
{
	struct rt_event_pair ev;
	rt_cu_result r = in->cu.event_create(&ev.start, RT_CU_EVENT_DEFAULT);
	if (r != RT_CUDA_SUCCESS)
		return cuda_fail(ctx, in, name, "cuEventCreate", r);
	r = in->cu.event_create(&ev.end, RT_CU_EVENT_DEFAULT);
	if (r != RT_CUDA_SUCCESS) {
		in->cu.event_destroy(ev.start);
		return cuda_fail(ctx, in, name, "cuEventCreate", r);
	}
	in->spare[in->nspare++] = ev;
	return LLMP_OK;
}

/* An event pair at hand among the spares: one passed, else a new one. */
static llmp_status reserve(llmp_ctx *ctx, struct rt_inflight *in, const char *name)
{
	if (in->nspare == 0)
		reap(in);
	if (in->nspare > 0)
		return LLMP_OK;
	rt_cu_ctx current = NULL;
	rt_cu_result r = in->cu.ctx_get_current(&current);
	if (r != RT_CUDA_SUCCESS)
		return cuda_fail(ctx, in, name, "cuCtxGetCurrent", r);
	if (!current)
		return rt_fail(ctx, LLMP_ERR_STATE,
			       "%s: no CUDA context is current in this thread (set the device first, as "
			       "for llmp_device_connect)",
			       name);
	if (!grow(in))
		return rt_fail(ctx, LLMP_ERR_NOMEM, "%s: room for %zu pending device operations", name,
			       2 * in->cap);
	llmp_status st = new_pair(ctx, in, name);
	if (st == LLMP_OK && !in->ctx)
		in->ctx = current; /* the watchdog queries the events in it */
	return st;
}

/* A spare pair taken, its start event recorded on stream. */
static llmp_status record_start(llmp_ctx *ctx, struct rt_inflight *in, const char *name, void *stream,
				struct rt_event_pair *ev)
{
	llmp_status st = reserve(ctx, in, name);
	if (st != LLMP_OK)
		return st;
	*ev = in->spare[--in->nspare];
	rt_cu_result r = in->cu.event_record(ev->start, (rt_cu_stream)stream);
	if (r != RT_CUDA_SUCCESS) {
		in->spare[in->nspare++] = *ev;
		return cuda_fail(ctx, in, name, "cuEventRecord", r);
	}
	return LLMP_OK;
}

llmp_status rt_inflight_started(llmp_ctx *ctx, struct rt_device *d, llmp_comm *comm, const char *name,
				void *stream)
{
	struct rt_inflight *in = &d->inflight;
	if (!in->on)
		return LLMP_OK;
	if (d->group_depth == 0) {
		llmp_status st = record_start(ctx, in, name, stream, &in->started);
		in->has_started = st == LLMP_OK;
		in->started_comm = comm;
		return st;
	}
	/* Launched at the group's end: the stream's first operation starts its time. */
	for (size_t i = 0; i < in->ngrouped; i++)
		if (in->grouped[i].stream == stream)
			return LLMP_OK;
	if (in->ngrouped == RT_GROUPED_STREAMS_MAX)
		return rt_fail(ctx, LLMP_ERR_ARG, "%s: more than %d streams in one device group", name,
			       RT_GROUPED_STREAMS_MAX);
	struct rt_grouped *g = &in->grouped[in->ngrouped];
	llmp_status st = record_start(ctx, in, name, stream, &g->ev);
	if (st != LLMP_OK)
		return st;
	g->stream = stream, g->kind = comm->kind, g->name = name, g->comm = comm;
	in->ngrouped++;
	return LLMP_OK;
}

void rt_inflight_abandoned(struct rt_device *d)
{
	struct rt_inflight *in = &d->inflight;
	if (in->has_started) /* its start may pass on the stream: recorded again before it is read */
		in->spare[in->nspare++] = in->started;
	in->has_started = false;
}

/* Record ev's end event on stream, and watch it from now for `name` on comm. */
static llmp_status record_end(llmp_ctx *ctx, struct rt_inflight *in, struct rt_event_pair ev, llmp_comm *comm,
			      const char *name, void *stream)
{
	rt_cu_result r = in->cu.event_record(ev.end, (rt_cu_stream)stream);
	if (r != RT_CUDA_SUCCESS) {
		in->spare[in->nspare++] = ev;
		return cuda_fail(ctx, in, name, "cuEventRecord", r);
	}
	*at(in, in->nops++) = (struct rt_inflight_op){
		.ev = ev, .since = rt_now(), .kind = comm->kind, .name = name, .comm = comm
	};
	return LLMP_OK;
}

llmp_status rt_inflight_enqueued(llmp_ctx *ctx, struct rt_device *d, const char *name, void *stream)
{
	struct rt_inflight *in = &d->inflight;
	if (!in->on || d->group_depth > 0 || !in->has_started)
		return LLMP_OK; /* in a group: watched from its end */
	in->has_started = false;
	return record_end(ctx, in, in->started, in->started_comm, name, stream);
}

llmp_status rt_inflight_group_ended(llmp_ctx *ctx, struct rt_device *d)
{
	struct rt_inflight *in = &d->inflight;
	llmp_status st = LLMP_OK;
	size_t i = 0;
	for (; in->on && i < in->ngrouped && st == LLMP_OK; i++)
		st = record_end(ctx, in, in->grouped[i].ev, in->grouped[i].comm, in->grouped[i].name,
				in->grouped[i].stream);
	for (; i < in->ngrouped; i++) /* after a failure: not watched, their events spare */
		in->spare[in->nspare++] = in->grouped[i].ev;
	in->ngrouped = 0;
	return st;
}

/*
 * Mark the operations the streams have passed; the oldest still pending
 * past timeout_s (its place), or one whose event reports an error (*bad),
 * or -1.
 */
static long find_late(struct rt_inflight *in, double timeout_s, rt_cu_result *bad)
{
	double now = rt_now();
	*bad = RT_CUDA_SUCCESS;
	for (size_t i = 0; i < in->nops; i++) {
		struct rt_inflight_op *op = at(in, i);
		if (op->done)
			continue;
		rt_cu_result r = in->cu.event_query(op->ev.end);
		if (r == RT_CUDA_SUCCESS) {
			passed(in, op);
		} else if (r != RT_CUDA_ERROR_NOT_READY) {
			*bad = r;
			return (long)i;
		} else if (now - op->since > timeout_s) {
			return (long)i; /* the ring is oldest first */
		}
	}
	return -1;
}

void rt_inflight_check(struct rt_device *d, double timeout_s)
{
	struct rt_inflight *in = &d->inflight;
	char msg[LLMP_MSG_MAX] = "", why[160];
	llmp_status st = LLMP_ERR_TIMEOUT;
	pthread_mutex_lock(&d->lock);
	if (in->on && in->ctx && !d->failed && in->nops > 0 &&
	    in->cu.ctx_push_current(in->ctx) == RT_CUDA_SUCCESS) {
		rt_cu_result bad;
		long i = find_late(in, timeout_s, &bad);
		if (i >= 0 && bad != RT_CUDA_SUCCESS) {
			st = LLMP_ERR_DEVICE;
			snprintf(msg, sizeof msg, "%s on the %s group failed on the GPU: %s", at(in, i)->name,
				 kind_name(at(in, i)->kind), rt_cuda_why(&in->cu, bad, why, sizeof why));
		} else if (i >= 0) {
			snprintf(msg, sizeof msg,
				 "%s on the %s group did not complete within %g s (LLMP_TIMEOUT): a member "
				 "of the group is stuck, or never made the matching call",
				 at(in, i)->name, kind_name(at(in, i)->kind), timeout_s);
		}
		reap(in);
		rt_cu_ctx popped;
		in->cu.ctx_pop_current(&popped);
	}
	pthread_mutex_unlock(&d->lock);
	if (msg[0])
		rt_device_fail(d, st, "%s", msg);
}
#endif /* LLMP_HAVE_NCCL */

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
 * An operation that is timed (LLMP_DEVICE_TIMING: every one when on, a
 * sample when sampled, none when off) also gets a start event, recorded on
 * the stream just before NCCL enqueues it; once the stream has passed the
 * end event, the time the GPU took between the two (cuEventElapsedTime),
 * times the operations it stands for, is added to the communicator's time
 * in calls (metrics.h, device_ns), by whichever finds it passed first: the
 * watchdog, or the next caller reusing its events. That time runs from the
 * moment the stream could start the operation (the work before it on the
 * stream done) to its end, so it includes the wait for the slowest member:
 * NCCL reports no member's arrival, so a device operation blames none
 * (doc/metrics-json.md). An operation that is not timed has its end event
 * alone, made without timing: the driver then records no timestamp, and a
 * small call costs the host one event record instead of two timed ones and
 * an elapsed time (doc/benchmarks.md).
 *
 * Operations inside llmp_device_group_start/_end are launched by NCCL at
 * the group's end, so their end events are recorded there, one per stream
 * the group used, and their start events at the stream's first operation
 * in the group; the group's time goes to that operation's communicator.
 *
 * The pending operations form a ring, oldest first. Events are reused,
 * timed pairs and untimed ends apart: the caller takes back those at the
 * head the streams have passed, and makes new ones only when none of the
 * kind it needs is free, so a program whose GPU runs behind holds one or
 * two events per operation pending, and one that keeps up holds a few.
 * Operations on different streams complete out of order; the watchdog
 * marks them done where it finds them, and at each stream's first
 * operation not passed stops asking about that stream (a stream runs in
 * order), so a look costs a query per operation passed and one per stream
 * behind, however many are pending: it holds the device lock, which every
 * call takes.
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
	in->timing = d->timing;
	if (rt_cuda_load(&in->cu, msg, sizeof msg) != LLMP_OK) {
		snprintf(in->why, sizeof in->why, "no deadline per device operation: %.200s", msg);
		return;
	}
	in->on = true;
}

static void destroy_pair(struct rt_inflight *in, struct rt_event_pair ev)
{
	if (ev.start)
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
	for (size_t i = 0; pushed && i < in->nspare_end; i++)
		in->cu.event_destroy(in->spare_end[i]);
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
	free(in->spare_end);
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

/* Events back among the spares of their kind: a timed pair, or an untimed end alone. */
static void give_back(struct rt_inflight *in, struct rt_event_pair ev)
{
	if (ev.start)
		in->spare[in->nspare++] = ev;
	else
		in->spare_end[in->nspare_end++] = ev.end;
}

/* The slot of a stream with operations not passed; with add, a free one taken when it has none (NULL: full). */
static struct rt_stream_pending *pending_of(struct rt_inflight *in, void *stream, bool add)
{
	struct rt_stream_pending *free_slot = NULL;
	for (size_t i = 0; i < in->nstreams; i++) {
		if (in->streams[i].ops > 0 && in->streams[i].stream == stream)
			return &in->streams[i];
		if (in->streams[i].ops == 0 && !free_slot)
			free_slot = &in->streams[i];
	}
	if (!add)
		return NULL;
	if (!free_slot && in->nstreams < RT_GROUPED_STREAMS_MAX)
		free_slot = &in->streams[in->nstreams++];
	if (free_slot)
		free_slot->stream = stream;
	return free_slot;
}

/*
 * One more operation not passed on its stream. CU_STREAM_PER_THREAD names
 * a different stream in each thread: never one slot.
 */
static void count_pending(struct rt_inflight *in, struct rt_inflight_op *op)
{
	struct rt_stream_pending *p = op->stream != (void *)RT_CU_STREAM_PER_THREAD
					      ? pending_of(in, op->stream, true)
					      : NULL;
	op->tracked = p != NULL;
	if (p)
		p->ops++;
	else
		in->untracked++;
}

/* Streams with operations not passed; SIZE_MAX when some are not tracked (each must then be looked at). */
static size_t streams_pending(const struct rt_inflight *in)
{
	size_t n = 0;
	for (size_t i = 0; i < in->nstreams; i++)
		n += in->streams[i].ops > 0;
	return in->untracked ? SIZE_MAX : n;
}

/*
 * The stream has passed op: its GPU time, if it was timed, to its
 * communicator, once, for the operations it stands for. An elapsed time
 * the driver refuses is not counted (the events are ours and timed, so
 * that would be a driver fault, not a reason to fail training).
 */
static void passed(struct rt_inflight *in, struct rt_inflight_op *op)
{
	float ms = 0;
	struct rt_stream_pending *p = op->tracked ? pending_of(in, op->stream, false) : NULL;
	op->done = true;
	if (p)
		p->ops--;
	else
		in->untracked--;
	if (op->ev.start && in->cu.event_elapsed_time(&ms, op->ev.start, op->ev.end) == RT_CUDA_SUCCESS &&
	    ms > 0)
		rt_metrics_device_time(&op->comm->metrics, (uint64_t)((double)ms * 1e6 * op->weight + 0.5));
}

/*
 * Give the events of the operations the streams have passed, from the
 * head, back to the spares; with ask, those not yet known to be passed are
 * asked about (the watchdog's look has just asked, and does not ask again).
 */
static void reap(struct rt_inflight *in, bool ask)
{
	while (in->nops > 0) {
		struct rt_inflight_op *op = at(in, 0);
		if (!op->done && (!ask || in->cu.event_query(op->ev.end) != RT_CUDA_SUCCESS))
			break;
		if (!op->done)
			passed(in, op);
		give_back(in, op->ev);
		in->head = (in->head + 1) % in->cap;
		in->nops--;
	}
}

/*
 * Room for one more set of events, wherever it ends up (ring or spares):
 * all three arrays doubled, the ring in order.
 */
static bool grow(struct rt_inflight *in)
{
	size_t held = in->nops + in->nspare + in->nspare_end + in->ngrouped + in->has_started;
	if (held < in->cap)
		return true;
	size_t cap = in->cap ? 2 * in->cap : INFLIGHT_FIRST_CAP;
	struct rt_inflight_op *ring = malloc(cap * sizeof *ring);
	struct rt_event_pair *spare = realloc(in->spare, cap * sizeof *spare);
	if (spare)
		in->spare = spare;
	rt_cu_event *spare_end = realloc(in->spare_end, cap * sizeof *spare_end);
	if (spare_end)
		in->spare_end = spare_end;
	if (!ring || !spare || !spare_end) {
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

/* New events among the spares: a pair made with timing, or an end made without. */
static llmp_status new_events(llmp_ctx *ctx, struct rt_inflight *in, const char *name, bool timed)
{
	struct rt_event_pair ev = { NULL, NULL };
	rt_cu_result r;
	if (timed && (r = in->cu.event_create(&ev.start, RT_CU_EVENT_DEFAULT)) != RT_CUDA_SUCCESS)
		return cuda_fail(ctx, in, name, "cuEventCreate", r);
	/* Without timing the driver records no timestamp: what the deadline needs costs less. */
	r = in->cu.event_create(&ev.end, timed ? RT_CU_EVENT_DEFAULT : RT_CU_EVENT_DISABLE_TIMING);
	if (r != RT_CUDA_SUCCESS) {
		if (timed)
			in->cu.event_destroy(ev.start);
		return cuda_fail(ctx, in, name, "cuEventCreate", r);
	}
	give_back(in, ev);
	return LLMP_OK;
}

static size_t spares(const struct rt_inflight *in, bool timed)
{
	return timed ? in->nspare : in->nspare_end;
}

/* Events of the kind at hand among the spares: passed ones, else new ones. */
static llmp_status reserve(llmp_ctx *ctx, struct rt_inflight *in, const char *name, bool timed)
{
	if (spares(in, timed) == 0)
		reap(in, true);
	if (spares(in, timed) > 0)
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
	llmp_status st = new_events(ctx, in, name, timed);
	if (st == LLMP_OK && !in->ctx)
		in->ctx = current; /* the watchdog queries the events in it */
	return st;
}

/*
 * Spare events taken for an operation counted `weight` times (0: not
 * timed, an end event alone), its start event recorded on stream if it is
 * timed.
 */
static llmp_status take_events(llmp_ctx *ctx, struct rt_inflight *in, const char *name, void *stream,
			       uint32_t weight, struct rt_event_pair *ev)
{
	llmp_status st = reserve(ctx, in, name, weight > 0);
	if (st != LLMP_OK)
		return st;
	if (weight > 0)
		*ev = in->spare[--in->nspare];
	else
		*ev = (struct rt_event_pair){ NULL, in->spare_end[--in->nspare_end] };
	rt_cu_result r = ev->start ? in->cu.event_record(ev->start, (rt_cu_stream)stream) : RT_CUDA_SUCCESS;
	if (r != RT_CUDA_SUCCESS) {
		give_back(in, *ev);
		return cuda_fail(ctx, in, name, "cuEventRecord", r);
	}
	return LLMP_OK;
}

/*
 * How many operations the GPU time of one of count elements on comm
 * stands for: 1 (timed), RT_METRICS_SAMPLE (a sampled small one, metrics.h)
 * or 0 (not timed: its deadline alone).
 */
static uint32_t weight_of(const struct rt_inflight *in, llmp_comm *comm, size_t count)
{
	switch (in->timing) {
	case RT_TIMING_ON: return 1;
	case RT_TIMING_OFF: return 0;
	default: return rt_metrics_draw(&comm->metrics, count);
	}
}

llmp_status rt_inflight_started(llmp_ctx *ctx, struct rt_device *d, llmp_comm *comm, const char *name,
				size_t count, void *stream)
{
	struct rt_inflight *in = &d->inflight;
	if (!in->on)
		return LLMP_OK;
	if (d->group_depth == 0) {
		uint32_t weight = weight_of(in, comm, count);
		llmp_status st = take_events(ctx, in, name, stream, weight, &in->started);
		in->has_started = st == LLMP_OK;
		in->started_comm = comm;
		in->started_weight = weight;
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
	uint32_t weight = weight_of(in, comm, count);
	llmp_status st = take_events(ctx, in, name, stream, weight, &g->ev);
	if (st != LLMP_OK)
		return st;
	g->stream = stream, g->kind = comm->kind, g->weight = weight, g->name = name, g->comm = comm;
	in->ngrouped++;
	return LLMP_OK;
}

void rt_inflight_abandoned(struct rt_device *d)
{
	struct rt_inflight *in = &d->inflight;
	if (in->has_started) /* its start may pass on the stream: recorded again before it is read */
		give_back(in, in->started);
	in->has_started = false;
}

/* Record ev's end event on stream, and watch it from now for `name` on comm. */
static llmp_status record_end(llmp_ctx *ctx, struct rt_inflight *in, struct rt_event_pair ev, llmp_comm *comm,
			      uint32_t weight, const char *name, void *stream)
{
	rt_cu_result r = in->cu.event_record(ev.end, (rt_cu_stream)stream);
	if (r != RT_CUDA_SUCCESS) {
		give_back(in, ev);
		return cuda_fail(ctx, in, name, "cuEventRecord", r);
	}
	struct rt_inflight_op *op = at(in, in->nops++);
	*op = (struct rt_inflight_op){ .ev = ev,
				       .since = rt_now(),
				       .stream = stream,
				       .kind = comm->kind,
				       .weight = weight,
				       .name = name,
				       .comm = comm };
	count_pending(in, op);
	return LLMP_OK;
}

llmp_status rt_inflight_enqueued(llmp_ctx *ctx, struct rt_device *d, const char *name, void *stream)
{
	struct rt_inflight *in = &d->inflight;
	if (!in->on || d->group_depth > 0 || !in->has_started)
		return LLMP_OK; /* in a group: watched from its end */
	in->has_started = false;
	return record_end(ctx, in, in->started, in->started_comm, in->started_weight, name, stream);
}

llmp_status rt_inflight_group_ended(llmp_ctx *ctx, struct rt_device *d)
{
	struct rt_inflight *in = &d->inflight;
	llmp_status st = LLMP_OK;
	size_t i = 0;
	for (; in->on && i < in->ngrouped && st == LLMP_OK; i++) {
		struct rt_grouped *g = &in->grouped[i];
		st = record_end(ctx, in, g->ev, g->comm, g->weight, g->name, g->stream);
	}
	for (; i < in->ngrouped; i++) /* after a failure: not watched, their events spare */
		give_back(in, in->grouped[i].ev);
	in->ngrouped = 0;
	return st;
}

/*
 * The streams one look found behind: a stream runs its operations in
 * order, so every later operation on one of them is behind too, and its
 * deadline later. CU_STREAM_PER_THREAD is not one stream (each thread has
 * its own), so it is never taken for one.
 */
struct behind {
	void *stream[RT_GROUPED_STREAMS_MAX];
	size_t n;
};

static bool is_behind(const struct behind *b, void *stream)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->stream[i] == stream)
			return true;
	return false;
}

static void note_behind(struct behind *b, void *stream)
{
	if (stream != (void *)RT_CU_STREAM_PER_THREAD && b->n < RT_GROUPED_STREAMS_MAX)
		b->stream[b->n++] = stream;
}

/*
 * Mark the operations the streams have passed; the oldest still pending
 * past timeout_s (its place), or one whose event reports an error (*bad),
 * or -1. One query per operation passed and one per stream behind, and
 * the walk ends once every stream with operations pending was found
 * behind: a GPU thousands of operations behind costs a look, which holds
 * the device lock, no more than one.
 */
static long find_late(struct rt_inflight *in, double timeout_s, rt_cu_result *bad)
{
	struct behind behind = { .n = 0 };
	double now = rt_now();
	size_t streams = streams_pending(in);
	*bad = RT_CUDA_SUCCESS;
	for (size_t i = 0; i < in->nops && behind.n < streams; i++) {
		struct rt_inflight_op *op = at(in, i);
		if (op->done || is_behind(&behind, op->stream))
			continue;
		rt_cu_result r = in->cu.event_query(op->ev.end);
		if (r == RT_CUDA_SUCCESS) {
			passed(in, op);
		} else if (r != RT_CUDA_ERROR_NOT_READY) {
			*bad = r;
			return (long)i;
		} else if (now - op->since > timeout_s) {
			return (long)i; /* the ring is oldest first */
		} else {
			note_behind(&behind, op->stream);
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
		reap(in, false);
		rt_cu_ctx popped;
		in->cu.ctx_pop_current(&popped);
	}
	pthread_mutex_unlock(&d->lock);
	if (msg[0])
		rt_device_fail(d, st, "%s", msg);
}
#endif /* LLMP_HAVE_NCCL */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * watchdog.c - failures of the device path found while no call waits.
 *
 * Work on a CUDA stream runs after the call that enqueued it has returned,
 * so a communicator can break, or a member die, with no llmp call to
 * notice. One thread per context polls, every few milliseconds, each
 * communicator's ncclCommGetAsyncError and the processes of the members
 * that run on this machine (liveness.h), and whether the streams got past
 * each operation before its deadline (inflight.c). The first failure aborts every
 * communicator of the rank (ncclCommAbort is local and may be called from
 * any thread: kernels waiting on a dead peer return), and every later call
 * fails with it, naming the group or the rank; the job layer's stop and
 * requeue then go on as for the host path.
 */
#include "device_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef LLMP_HAVE_NCCL
#include "runtime/comm/liveness.h"
#include "runtime/comm/wireup.h"

#define WATCH_PERIOD_NS (20 * 1000 * 1000) /* 20 ms */

struct rt_watched {
	uint32_t rank; /* a member of one of this rank's groups, on this machine */
	pid_t pid;
	int kind; /* the first group kind it shares with this rank */
};

llmp_status rt_device_fail(struct rt_device *d, llmp_status st, const char *fmt, ...)
{
	pthread_mutex_lock(&d->lock);
	if (!d->failed) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->why, sizeof d->why, fmt, ap);
		va_end(ap);
		d->failed = st;
		for (int k = 0; k < KINDS; k++)
			if (d->g[k].comm && d->g[k].same_as < 0)
				d->nccl.comm_abort(d->g[k].comm);
		for (int k = 0; k < KINDS; k++)
			d->g[k].comm = NULL;
	}
	st = d->failed;
	pthread_mutex_unlock(&d->lock);
	return st;
}

/* One look at every communicator and every watched process; a failure found is recorded. */
static void look(struct rt_device *d)
{
	char why[LLMP_MSG_MAX];
	for (int k = 0; k < KINDS; k++) {
		pthread_mutex_lock(&d->lock);
		ncclComm_t comm = d->failed || d->g[k].same_as >= 0 ? NULL : d->g[k].comm;
		ncclResult_t state = ncclSuccess,
			     r = comm ? d->nccl.comm_get_async_error(comm, &state) : ncclSuccess;
		if (comm && (r != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)))
			rt_nccl_why(&d->nccl, comm, r != ncclSuccess ? r : state, why, sizeof why);
		pthread_mutex_unlock(&d->lock);
		if (comm && (r != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)))
			rt_device_fail(d, LLMP_ERR_DEVICE, "the NCCL communicator of the %s group failed: %s",
				       kind_name(k), why);
	}
	for (size_t i = 0; i < d->nwatched; i++)
		if (!rt_pid_alive(d->watched[i].pid))
			rt_device_fail(
				d, LLMP_ERR_PEER,
				"rank %u (of the %s group) died: its process %d on this machine is gone",
				d->watched[i].rank, kind_name(d->watched[i].kind), (int)d->watched[i].pid);
	rt_inflight_check(d, d->timeout_s);
}

static void *watch(void *arg)
{
	struct rt_device *d = arg;
	struct timespec period = { 0, WATCH_PERIOD_NS };
	for (;;) {
		pthread_mutex_lock(&d->lock);
		bool stop = d->stop;
		pthread_mutex_unlock(&d->lock);
		if (stop)
			break;
		look(d);
		nanosleep(&period, NULL);
	}
	return NULL;
}

/* The members of this rank's groups that run on this machine, each once. */
static llmp_status find_neighbours(llmp_ctx *ctx, struct rt_device *d)
{
	char process[160];
	d->watched = calloc(ctx->world ? ctx->world : 1, sizeof *d->watched);
	bool *seen = calloc(ctx->world ? ctx->world : 1, sizeof *seen);
	if (!d->watched || !seen) {
		free(seen);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "the device watchdog's list of %u ranks", ctx->world);
	}
	llmp_status st = LLMP_OK;
	for (int k = 0; k < KINDS && st == LLMP_OK; k++) {
		const struct rt_device_group *g = &d->g[k];
		for (uint32_t i = 0; g->member && g->same_as < 0 && i < g->size && st == LLMP_OK; i++) {
			uint32_t r = g->members[i];
			pid_t pid;
			if (r == ctx->rank || seen[r])
				continue;
			seen[r] = true;
			st = rt_wireup_peer_process(ctx, r, process, sizeof process);
			if (st == LLMP_OK && rt_same_machine(process, ctx->machine_id, &pid))
				d->watched[d->nwatched++] = (struct rt_watched){ .rank = r,
										 .pid = pid,
										 .kind = k };
		}
	}
	free(seen);
	return st;
}

llmp_status rt_watchdog_start(llmp_ctx *ctx, struct rt_device *d)
{
	llmp_status st = find_neighbours(ctx, d);
	if (st != LLMP_OK)
		return st;
	int rc = pthread_create(&d->watchdog, NULL, watch, d);
	if (rc != 0)
		return rt_fail(ctx, LLMP_ERR_NOMEM, "the device watchdog's thread: %s", strerror(rc));
	d->watching = true;
	return LLMP_OK;
}

void rt_watchdog_stop(struct rt_device *d)
{
	if (d->watching) {
		pthread_mutex_lock(&d->lock);
		d->stop = true;
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->watchdog, NULL);
		d->watching = false;
	}
	free(d->watched);
	d->watched = NULL;
	d->nwatched = 0;
}
#endif /* LLMP_HAVE_NCCL */

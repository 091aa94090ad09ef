/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device.c - NCCL communicators for the groups a rank belongs to.
 *
 * One id per group, made by its lowest member and published under the group
 * kind's name in llmp_init's one fence (ncclCommSplit would need every rank
 * of the parent, NVIDIA/nccl src/init.cc commGetSplitInfo, and a fence per
 * group would cost a round trip each). Kinds whose groups have the same
 * members here (tp-cp and tp when cp is 1) share one id and one
 * communicator: the first kind in llmp's order names it, and every member
 * reaches the same conclusion because groups of one kind never overlap. The
 * world is a group too.
 *
 * llmp_device_connect makes every communicator in one ncclGroupStart/End,
 * non-blocking (config.blocking = 0), in the same order on every rank, and
 * polls them against the context's timeout: a member that never comes
 * leaves the others an error naming the group, not a hang.
 */
#include "device_internal.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llmp/llmp_device.h>
#include "runtime/comm/transport.h"
#include "runtime/comm/wireup.h"
#include <llmp/llmp_env.h>

/* ------------------------------------------------------------ the choice */

enum device_mode { DEVICE_AUTO, DEVICE_NCCL, DEVICE_OFF };

static llmp_status read_mode(llmp_ctx *ctx, enum device_mode *mode)
{
	const char *v = getenv(LLMP_ENV_DEVICE);
	if (!v || !*v || strcmp(v, "auto") == 0)
		*mode = DEVICE_AUTO;
	else if (strcmp(v, "nccl") == 0)
		*mode = DEVICE_NCCL;
	else if (strcmp(v, "off") == 0)
		*mode = DEVICE_OFF;
	else
		return rt_fail(ctx, LLMP_ERR_ARG, "LLMP_DEVICE='%.40s': expected auto, nccl or off", v);
	return LLMP_OK;
}

/*
 * LLMP_DEVICE_TIMING: whether device operations are timed on the GPU for
 * their communicator's time in calls. Two CUDA events with timing around
 * every operation cost the most on the small ones (doc/benchmarks.md), so
 * "sampled" times them as the host path times its own calls (metrics.h),
 * and "off" not at all; the deadline's event stays after every operation.
 * Read at llmp_init, so that a wrong value fails there, as LLMP_DEVICE does.
 */
static llmp_status read_timing(llmp_ctx *ctx, enum rt_device_timing *timing)
{
	static const struct {
		const char *word;
		enum rt_device_timing timing;
	} words[] = { { "on", RT_TIMING_ON },
		      { "1", RT_TIMING_ON },
		      { "sampled", RT_TIMING_SAMPLED },
		      { "off", RT_TIMING_OFF },
		      { "0", RT_TIMING_OFF } };
	const char *v = getenv(LLMP_ENV_DEVICE_TIMING);
	*timing = RT_TIMING_ON;
	if (!v || !*v)
		return LLMP_OK;
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strcmp(v, words[i].word) == 0) {
			*timing = words[i].timing;
			return LLMP_OK;
		}
	return rt_fail(ctx, LLMP_ERR_ARG, LLMP_ENV_DEVICE_TIMING "='%.40s': expected on, sampled or off", v);
}

#ifdef LLMP_HAVE_NCCL
/*
 * Whether the process sees a GPU, asked of the CUDA driver itself (loaded
 * with dlopen: libllmp never links it). No driver, or one that finds no
 * device, is no GPU.
 */
static bool gpu_visible(char *why, size_t len)
{
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!driver) {
		snprintf(why, len, "no GPU: the CUDA driver (libcuda.so.1) is not installed");
		return false;
	}
	int (*init)(unsigned) = NULL, (*count)(int *) = NULL;
	*(void **)&init = dlsym(driver, "cuInit");
	*(void **)&count = dlsym(driver, "cuDeviceGetCount");
	int n = 0, rc = init && count ? init(0) : -1;
	if (rc == 0)
		rc = count(&n);
	if (rc != 0 || n == 0) {
		snprintf(why, len, "no GPU: the CUDA driver %s",
			 rc ? "does not initialise" : "sees no device");
		return false;
	}
	return true; /* the driver stays loaded: NCCL and the program use it */
}

/* This rank's group of every kind, and which kinds repeat an earlier one. */
static llmp_status find_groups(llmp_ctx *ctx, struct rt_device *d)
{
	for (int k = 0; k < KINDS; k++) {
		struct rt_device_group *g = &d->g[k];
		g->same_as = -1;
		uint32_t cap = k == LLMP_NGROUPS ? ctx->world
						 : llmp_plan_group_size(ctx->plan, (enum llmp_group)k);
		g->members = malloc((cap ? cap : 1) * sizeof *g->members);
		if (!g->members)
			return rt_fail(ctx, LLMP_ERR_NOMEM, "members of the %s group", kind_name(k));
		uint32_t n = 0;
		if (k == LLMP_NGROUPS) {
			for (n = 0; n < ctx->world; n++)
				g->members[n] = n;
			g->number = 0;
		} else if (llmp_plan_group_of(ctx->plan, (enum llmp_group)k, ctx->rank, g->members, cap, &n,
					      &g->number) != LLMP_OK) {
			n = 0; /* a middle pipeline stage is in no embedding group */
		}
		/* A group of one needs no communicator, but for the world of a one-rank job,
		 * whose device collectives then run on one GPU (make gpu-check). */
		if (n < 2 && !(k == LLMP_NGROUPS && ctx->world == 1))
			continue;
		g->member = true;
		g->size = n;
		g->root = g->members[0];
		for (uint32_t i = 0; i < n; i++) {
			g->root = g->members[i] < g->root ? g->members[i] : g->root;
			if (g->members[i] == ctx->rank)
				g->rank = i;
		}
		for (int j = 0; j < k && g->same_as < 0; j++)
			if (d->g[j].member && d->g[j].same_as < 0 && d->g[j].size == n &&
			    memcmp(d->g[j].members, g->members, n * sizeof *g->members) == 0)
				g->same_as = j;
		d->groups += g->same_as < 0;
	}
	return LLMP_OK;
}

/* Make and put the id of every group this rank roots. */
static llmp_status put_ids(llmp_ctx *ctx, struct rt_device *d)
{
	char key[64], why[LLMP_MSG_MAX];
	for (int k = 0; k < KINDS; k++) {
		struct rt_device_group *g = &d->g[k];
		if (!g->member || g->same_as >= 0 || g->root != ctx->rank)
			continue;
		ncclResult_t r = d->nccl.get_unique_id(&g->id);
		if (r != ncclSuccess)
			return rt_fail(ctx, LLMP_ERR_DEVICE, "ncclGetUniqueId for the %s group: %s",
				       kind_name(k), rt_nccl_why(&d->nccl, NULL, r, why, sizeof why));
		pmix_value_t value;
		value.type = PMIX_BYTE_OBJECT;
		value.data.bo.bytes = g->id.internal; /* PMIx_Put copies it */
		value.data.bo.size = sizeof g->id.internal;
		id_key(k, key, sizeof key);
		llmp_status st = rt_wireup_put(ctx, key, &value);
		if (st != LLMP_OK)
			return st;
		d->ids_created++;
	}
	return LLMP_OK;
}
#endif /* LLMP_HAVE_NCCL */

llmp_status rt_device_prepare(llmp_ctx *ctx)
{
	enum device_mode mode = DEVICE_AUTO;
	enum rt_device_timing timing = RT_TIMING_ON;
	llmp_status st = read_mode(ctx, &mode);
	if (st == LLMP_OK)
		st = read_timing(ctx, &timing);
	if (st != LLMP_OK)
		return st;
	if (mode == DEVICE_OFF) {
		snprintf(ctx->device_why, sizeof ctx->device_why, "LLMP_DEVICE=off");
		return LLMP_OK;
	}
#ifndef LLMP_HAVE_NCCL
	snprintf(ctx->device_why, sizeof ctx->device_why,
		 "this libllmp was built without nccl.h (configure --with-nccl=DIR)");
	if (mode == DEVICE_NCCL)
		return rt_fail(ctx, LLMP_ERR_UNSUPPORTED, "LLMP_DEVICE=nccl, but %s", ctx->device_why);
	return LLMP_OK;
#else
	if (mode == DEVICE_AUTO && !gpu_visible(ctx->device_why, sizeof ctx->device_why))
		return LLMP_OK;
	struct rt_device *d = calloc(1, sizeof *d);
	if (!d)
		return rt_fail(ctx, LLMP_ERR_NOMEM, "the device path's state");
	pthread_mutex_init(&d->lock, NULL);
	char msg[LLMP_MSG_MAX];
	if (rt_nccl_load(&d->nccl, msg, sizeof msg) != LLMP_OK) {
		pthread_mutex_destroy(&d->lock);
		free(d);
		snprintf(ctx->device_why, sizeof ctx->device_why, "%.250s", msg);
		if (mode == DEVICE_NCCL)
			return rt_fail(ctx, LLMP_ERR_UNSUPPORTED, "LLMP_DEVICE=nccl: %s", msg);
		return LLMP_OK; /* auto: the host path, and the reason kept for a device buffer's error */
	}
	ctx->device = d;
	d->timing = timing;
	if ((st = find_groups(ctx, d)) == LLMP_OK)
		st = put_ids(ctx, d);
	rt_log(ctx, RT_LOG_DEVICE, RT_LOG_DEBUG,
	       "NCCL %d loaded from %s: %u communicator%s to make, %u id%s of them made here",
	       d->nccl.version, d->nccl.path, d->groups, d->groups == 1 ? "" : "s", d->ids_created,
	       d->ids_created == 1 ? "" : "s");
	return st;
#endif
}

llmp_status rt_device_collect(llmp_ctx *ctx)
{
#ifdef LLMP_HAVE_NCCL
	struct rt_device *d = ctx->device;
	char key[64];
	for (int k = 0; d && k < KINDS; k++) {
		struct rt_device_group *g = &d->g[k];
		if (!g->member || g->same_as >= 0 || g->root == ctx->rank)
			continue;
		pmix_value_t *v = NULL;
		id_key(k, key, sizeof key);
		pmix_status_t rc = rt_wireup_get(ctx, g->root, key, &v);
		bool ok = rc == PMIX_SUCCESS && v->type == PMIX_BYTE_OBJECT &&
			  v->data.bo.size == sizeof g->id.internal;
		if (ok)
			memcpy(g->id.internal, v->data.bo.bytes, sizeof g->id.internal);
		if (v)
			PMIX_VALUE_RELEASE(v);
		if (!ok)
			return rt_fail(ctx, LLMP_ERR_WIREUP,
				       "the NCCL id of the %s group from its root, rank %u: %s (did it run "
				       "with LLMP_DEVICE=off, or without a GPU?)",
				       kind_name(k), g->root,
				       rc != PMIX_SUCCESS ? PMIx_Error_string(rc) : "not an NCCL id");
		d->ids_fetched++;
	}
#else
	(void)ctx;
#endif
	return LLMP_OK;
}

/*
 * A rank that is done must not look dead to the ranks still at work beside
 * it: their watchdogs fail the device path when a neighbour's process is
 * gone (watchdog.c), and a peer's operations may have completed long before
 * this rank's. So while the watchdog runs and nothing has failed, leaving
 * is collective: a world barrier, under the usual timeout, before anyone
 * stops watching. Once it returns, every rank is in llmp_finalize, done
 * with the device; a neighbour gone after that fails nothing that matters.
 * After a failure the barrier is skipped: the job is ending on an error,
 * and a rank already gone would only make the others wait for it.
 */
void rt_device_leave(llmp_ctx *ctx)
{
#ifdef LLMP_HAVE_NCCL
	struct rt_device *d = ctx->device;
	llmp_comm *world;
	if (!d || !d->watching || ctx->world < 2)
		return;
	pthread_mutex_lock(&d->lock);
	bool failed = d->failed != LLMP_OK;
	pthread_mutex_unlock(&d->lock);
	if (!failed && llmp_comm_world(ctx, &world) == LLMP_OK)
		(void)llmp_barrier(world); /* a failure here is the others' to report */
#else
	(void)ctx;
#endif
}

void rt_device_fini(llmp_ctx *ctx)
{
#ifdef LLMP_HAVE_NCCL
	struct rt_device *d = ctx->device;
	if (!d)
		return;
	rt_watchdog_stop(d);
	rt_inflight_fini(d);
	for (int k = 0; k < KINDS; k++) {
		struct rt_device_group *g = &d->g[k];
		if (g->comm && g->same_as < 0) {
			/* Finalize would wait for peers that may be gone: a local destroy after abort is safe. */
			d->nccl.comm_abort(g->comm);
		}
		free(g->members);
	}
	rt_nccl_unload(&d->nccl);
	pthread_mutex_destroy(&d->lock);
	free(d);
	ctx->device = NULL;
#else
	(void)ctx;
#endif
}

/* ---------------------------------------------------------------- API */

llmp_status llmp_device_get_info(const llmp_ctx *ctx, llmp_device_info *info)
{
	if (!ctx || !info)
		return LLMP_ERR_ARG;
	memset(info, 0, sizeof *info);
	info->ucx_cuda = rt_tx_moves_cuda(ctx);
	snprintf(info->why_not, sizeof info->why_not, "%.250s", ctx->device ? "" : ctx->device_why);
#ifdef LLMP_HAVE_NCCL
	const struct rt_device *d = ctx->device;
	if (d) {
		info->enabled = true;
		info->nccl_version = d->nccl.version;
		info->groups = d->groups;
		info->ids_created = d->ids_created;
		info->ids_fetched = d->ids_fetched;
		info->comms = d->comms;
		info->connect_seconds = d->connect_seconds;
		info->deadline = d->inflight.on;
		snprintf(info->deadline_why, sizeof info->deadline_why, "%.250s",
			 d->connected && !d->inflight.on ? d->inflight.why : "");
	}
#endif
	return LLMP_OK;
}

#ifdef LLMP_HAVE_NCCL
/* Abort every communicator not yet ready; the one named failed for why. */
static llmp_status give_up(llmp_ctx *ctx, struct rt_device *d, llmp_status st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static llmp_status give_up(llmp_ctx *ctx, struct rt_device *d, llmp_status st, const char *fmt, ...)
{
	char msg[LLMP_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	d->comms = 0;
	/* The ids were used: a second try could only hang, so the failure is for good. */
	st = rt_device_fail(d, st, "%s", msg);
	return rt_fail(ctx, st, "%s", d->why);
}

struct rt_device *rt_device_ready(llmp_ctx *ctx, const char *name, llmp_status *st)
{
	struct rt_device *d = ctx->device;
	*st = LLMP_OK;
	if (!d)
		*st = rt_fail(ctx, LLMP_ERR_UNSUPPORTED, "%s: the device path is off: %s", name,
			      ctx->device_why);
	else if (!d->connected && !d->failed)
		*st = rt_fail(ctx, LLMP_ERR_STATE, "%s: call llmp_device_connect first", name);
	return *st == LLMP_OK ? d : NULL;
}
#else
llmp_status rt_device_not_built(llmp_ctx *ctx, const char *name)
{
	return ctx ? rt_fail(ctx, LLMP_ERR_UNSUPPORTED, "%s: %s", name, ctx->device_why) : LLMP_ERR_ARG;
}
#endif

llmp_status llmp_device_connect(llmp_ctx *ctx)
{
	if (!ctx)
		return LLMP_ERR_ARG;
#ifndef LLMP_HAVE_NCCL
	return rt_device_not_built(ctx, "llmp_device_connect");
#else
	struct rt_device *d = ctx->device;
	if (!d)
		return rt_fail(ctx, LLMP_ERR_UNSUPPORTED, "llmp_device_connect: the device path is off: %s",
			       ctx->device_why);
	if (d->failed)
		return rt_fail(ctx, d->failed, "%s", d->why);
	if (d->connected)
		return LLMP_OK;
	char why[LLMP_MSG_MAX], name[KINDS][48];
	double start = rt_now();
	for (int k = 0; k < KINDS; k++)
		if (d->g[k].member && d->g[k].same_as < 0)
			rt_log(ctx, RT_LOG_DEVICE, RT_LOG_DEBUG,
			       "llmp_device_connect: the %s group's NCCL communicator: %u members, this rank "
			       "%u of them, its root rank %u",
			       kind_name(k), d->g[k].size, d->g[k].rank, d->g[k].root);
	ncclResult_t r = d->nccl.group_start();
	if (r != ncclSuccess)
		return give_up(ctx, d, LLMP_ERR_DEVICE, "ncclGroupStart: %s",
			       rt_nccl_why(&d->nccl, NULL, r, why, sizeof why));
	for (int k = 0; k < KINDS; k++) {
		struct rt_device_group *g = &d->g[k];
		if (!g->member || g->same_as >= 0)
			continue;
		ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
		config.blocking = 0;
		snprintf(name[k], sizeof name[k], "llmp.%s.%u", kind_name(k), g->number);
		config.commName = name[k];
		r = d->nccl.comm_init_rank_config(&g->comm, (int)g->size, g->id, (int)g->rank, &config);
		if (r != ncclSuccess && r != ncclInProgress) {
			d->nccl.group_end();
			return give_up(ctx, d, LLMP_ERR_DEVICE, "ncclCommInitRankConfig for the %s group: %s",
				       kind_name(k), rt_nccl_why(&d->nccl, g->comm, r, why, sizeof why));
		}
		d->comms++;
	}
	r = d->nccl.group_end();
	if (r != ncclSuccess && r != ncclInProgress)
		return give_up(ctx, d, LLMP_ERR_DEVICE, "creating the NCCL communicators: %s",
			       rt_nccl_why(&d->nccl, NULL, r, why, sizeof why));
	/* Poll until every one is ready, one fails, or the deadline passes. */
	for (;;) {
		int pending = -1;
		for (int k = 0; k < KINDS; k++) {
			struct rt_device_group *g = &d->g[k];
			if (!g->comm || g->same_as >= 0)
				continue;
			ncclResult_t state = ncclSuccess;
			r = d->nccl.comm_get_async_error(g->comm, &state);
			if (r == ncclSuccess && state == ncclInProgress) {
				pending = pending < 0 ? k : pending;
				continue;
			}
			if (r != ncclSuccess || state != ncclSuccess)
				return give_up(ctx, d, LLMP_ERR_DEVICE,
					       "the NCCL communicator of the %s group: %s", kind_name(k),
					       rt_nccl_why(&d->nccl, g->comm, r != ncclSuccess ? r : state,
							   why, sizeof why));
		}
		if (pending < 0)
			break;
		if (rt_now() - start > ctx->timeout_s)
			return give_up(
				ctx, d, LLMP_ERR_TIMEOUT,
				"the NCCL communicator of the %s group (%u members, its root rank %u) was "
				"not ready within %g s: a member did not call llmp_device_connect, or "
				"cannot be reached",
				kind_name(pending), d->g[pending].size, d->g[pending].root, ctx->timeout_s);
		usleep(1000);
	}
	for (int k = 0; k < KINDS; k++)
		if (d->g[k].same_as >= 0)
			d->g[k].comm = d->g[d->g[k].same_as].comm;
	d->connected = true;
	d->connect_seconds = rt_now() - start;
	rt_log(ctx, RT_LOG_DEVICE, RT_LOG_DEBUG,
	       "llmp_device_connect: %u NCCL communicator%s ready in %.3f s", d->comms,
	       d->comms == 1 ? "" : "s", d->connect_seconds);
	d->timeout_s = ctx->timeout_s;
	rt_inflight_init(d);
	return rt_watchdog_start(ctx, d);
#endif
}

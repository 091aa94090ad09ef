/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * init.c - llmp_init and llmp_finalize: a process joining and leaving the
 * job. It brings up every layer in order (options and layout, PMIx wire-up
 * and the UCX transport in comm/, the device path in device/) and takes
 * them down in reverse, so it sits above them all and nothing includes it.
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp_env.h>
#include "runtime/comm/abi.h"
#include "runtime/comm/rt.h"
#include "runtime/comm/transport.h"
#include "runtime/comm/wireup.h"
#include "runtime/device/device.h"

void llmp_init_opts_default(llmp_init_opts *opts)
{
	if (opts) {
		memset(opts, 0, sizeof *opts);
		opts->size = sizeof *opts;
	}
}

/* A positive number from the environment, or `fallback` when unset. */
static llmp_status env_number(llmp_ctx *ctx, const char *name, double fallback, double *out)
{
	const char *text = getenv(name);
	*out = fallback;
	if (!text || !*text)
		return LLMP_OK;
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || *end || !(v > 0) || !isfinite(v))
		return rt_fail(ctx, LLMP_ERR_ARG, "%s='%.40s': expected a positive number", name, text);
	*out = v;
	return LLMP_OK;
}

/*
 * A size in bytes: `given` (an llmp_init_opts field) when not 0, else the
 * variable `name` (a positive number; "off" gives SIZE_MAX where off_ok),
 * else fallback.
 */
static llmp_status size_option(llmp_ctx *ctx, size_t given, const char *name, size_t fallback, bool off_ok,
			       size_t *out)
{
	if (given) {
		*out = given;
		return LLMP_OK;
	}
	const char *text = getenv(name);
	if (off_ok && text && strcmp(text, "off") == 0) {
		*out = SIZE_MAX;
		return LLMP_OK;
	}
	double v;
	llmp_status st = env_number(ctx, name, (double)fallback, &v);
	*out = v >= (double)SIZE_MAX ? SIZE_MAX : (size_t)v;
	return st;
}

static llmp_status read_options(llmp_ctx *ctx, const llmp_init_opts *opts)
{
	llmp_status st;
	char msg[LLMP_MSG_MAX];
	if (rt_log_conf_parse(getenv(LLMP_ENV_DEBUG), &ctx->log, msg, sizeof msg) != 0)
		return rt_fail(ctx, LLMP_ERR_ARG, "%s", msg);
	if (opts && opts->timeout_s != 0) {
		if (!(opts->timeout_s > 0) || !isfinite(opts->timeout_s))
			return rt_fail(ctx, LLMP_ERR_ARG,
				       "timeout_s=%g: must be a positive number of seconds", opts->timeout_s);
		ctx->timeout_s = opts->timeout_s;
	} else if ((st = env_number(ctx, LLMP_ENV_TIMEOUT, RT_DEFAULT_TIMEOUT_S, &ctx->timeout_s)) !=
		   LLMP_OK) {
		return st;
	}
	if ((st = size_option(ctx, opts ? opts->ring_threshold : 0, LLMP_ENV_RING_THRESHOLD,
			      RT_DEFAULT_RING_THRESHOLD, false, &ctx->ring_threshold)) != LLMP_OK ||
	    (st = size_option(ctx, opts ? opts->shm_threshold : 0, LLMP_ENV_SHM_THRESHOLD,
			      RT_DEFAULT_SHM_THRESHOLD, true, &ctx->shm_threshold)) != LLMP_OK)
		return st;
	/* A multiple of every element size and of a cache line. */
	double chunk;
	if ((st = env_number(ctx, LLMP_ENV_SHM_CHUNK, (double)RT_DEFAULT_SHM_CHUNK, &chunk)) != LLMP_OK)
		return st;
	if (chunk < 4096 || chunk > (double)(64 << 20))
		return rt_fail(ctx, LLMP_ERR_ARG, LLMP_ENV_SHM_CHUNK "='%s': expected 4096 to %d bytes",
			       getenv(LLMP_ENV_SHM_CHUNK), 64 << 20);
	ctx->shm_chunk = (size_t)chunk / 64 * 64;
	return LLMP_OK;
}

/*
 * A step renumbered on the topology (LLMP_PLACEMENT=topology:...) gives each
 * task its rank in LLMP_RANK; PMIx keeps Slurm's task id, which wireup maps
 * once every rank has published its own.
 */
static llmp_status read_placement(llmp_ctx *ctx)
{
	const char *placement = getenv(LLMP_ENV_PLACEMENT);
	snprintf(ctx->placement, sizeof ctx->placement, "block");
	if (!placement || strcmp(placement, "block") == 0)
		return LLMP_OK;
	if (strlen(placement) >= sizeof ctx->placement)
		return rt_fail(ctx, LLMP_ERR_ARG, LLMP_ENV_PLACEMENT "='%.40s...': too long", placement);
	if (strncmp(placement, "topology:", 9) != 0)
		return rt_fail(ctx, LLMP_ERR_ARG,
			       LLMP_ENV_PLACEMENT "='%.40s': expected block or topology:DIGEST", placement);
	const char *text = getenv(LLMP_ENV_RANK);
	char *end;
	unsigned long v = text ? strtoul(text, &end, 10) : 0;
	if (!text || !*text || *end || v >= ctx->world)
		return rt_fail(ctx, LLMP_ERR_ARG,
			       LLMP_ENV_PLACEMENT " says the ranks were renumbered, but " LLMP_ENV_RANK
						  "=%.20s is not a rank of a world of %u",
			       text ? text : "(unset)", ctx->world);
	ctx->renumbered = true;
	ctx->rank = (uint32_t)v;
	snprintf(ctx->placement, sizeof ctx->placement, "%s", placement);
	return LLMP_OK;
}

/* The plugin's numbering must be PMIx's, or the layout would be applied to other ranks. */
static llmp_status check_plugin_env(llmp_ctx *ctx)
{
	static const struct {
		const char *name;
		size_t offset;
	} vars[] = {
		{ LLMP_ENV_RANK, offsetof(llmp_ctx, rank) },
		{ LLMP_ENV_WORLD_SIZE, offsetof(llmp_ctx, world) },
	};
	llmp_status st = read_placement(ctx);
	if (st != LLMP_OK)
		return st;
	for (size_t i = ctx->renumbered ? 1 : 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *text = getenv(vars[i].name);
		if (!text)
			continue;
		uint32_t pmix_value;
		memcpy(&pmix_value, (const char *)ctx + vars[i].offset, sizeof pmix_value);
		char *end;
		unsigned long v = strtoul(text, &end, 10);
		if (*end || v != pmix_value)
			return rt_fail(ctx, LLMP_ERR_MISMATCH,
				       "%s=%.20s from the plugin, but PMIx says %u: was the step "
				       "launched with another task numbering?",
				       vars[i].name, text, pmix_value);
	}
	return LLMP_OK;
}

/* The resolved layout, as text every rank can compare: sizes after dp is derived. */
static void describe_plan(llmp_ctx *ctx)
{
	const llmp_plan *p = ctx->plan;
	snprintf(ctx->layout, sizeof ctx->layout,
		 "tp=%u,cp=%u,ep=%u,etp=%u,dp=%u,pp=%u,vpp=%u,order=%s,world=%u",
		 llmp_plan_size(p, LLMP_AXIS_TP), llmp_plan_size(p, LLMP_AXIS_CP),
		 llmp_plan_size(p, LLMP_AXIS_EP), llmp_plan_size(p, LLMP_AXIS_ETP),
		 llmp_plan_size(p, LLMP_AXIS_DP), llmp_plan_size(p, LLMP_AXIS_PP), llmp_plan_vpp(p),
		 llmp_plan_order(p), ctx->world);
}

static llmp_status plan_layout(llmp_ctx *ctx, const llmp_init_opts *opts)
{
	const char *given = opts ? opts->spec : NULL;
	const char *plugin = getenv(LLMP_ENV_PARALLEL);
	const char *text = given ? given : plugin ? plugin : "dp=auto";
	const char *source = given ? "llmp_init_opts.spec" : plugin ? LLMP_ENV_PARALLEL : "the default";
	char msg[LLMP_MSG_MAX];
	llmp_spec spec;

	if (llmp_spec_parse(text, &spec, msg, sizeof msg) != LLMP_OK)
		return rt_fail(ctx, LLMP_ERR_SPEC, "%s: %s", source, msg);
	if (spec.help)
		return rt_fail(ctx, LLMP_ERR_SPEC, "%s: 'help' is not a layout", source);
	if (given && plugin) {
		llmp_spec from_plugin;
		if (llmp_spec_parse(plugin, &from_plugin, msg, sizeof msg) != LLMP_OK)
			return rt_fail(ctx, LLMP_ERR_SPEC, LLMP_ENV_PARALLEL ": %s", msg);
		if (!llmp_spec_equal(&spec, &from_plugin))
			return rt_fail(
				ctx, LLMP_ERR_MISMATCH,
				"llmp_init_opts.spec '%.100s' differs from the plugin's " LLMP_ENV_PARALLEL
				" '%.100s'",
				given, plugin);
	}
	if (llmp_plan_create(&spec, ctx->world, 0, &ctx->plan, msg, sizeof msg) != LLMP_OK)
		return rt_fail(ctx, LLMP_ERR_LAYOUT, "%s: %s", source, msg);
	describe_plan(ctx);
	return LLMP_OK;
}

/*
 * Everything init does before the exchange. A failure here does not skip
 * the exchange: the rank still joins the fence with its error in place of
 * a layout, so the other ranks fail at once, naming it, instead of waiting
 * for it until their timeout.
 */
static llmp_status prepare(llmp_ctx *ctx, const llmp_init_opts *opts, void **addr, size_t *addrlen)
{
	llmp_status st = check_plugin_env(ctx);
	if (st == LLMP_OK)
		st = plan_layout(ctx, opts);
	if (st == LLMP_OK)
		st = rt_tx_init(ctx, addr, addrlen);
	if (st == LLMP_OK)
		st = rt_device_prepare(ctx);
	if (st != LLMP_OK)
		snprintf(ctx->layout, sizeof ctx->layout, "!%.*s", (int)sizeof ctx->layout - 2, ctx->errmsg);
	return st;
}

/*
 * Whether a context exists in this process. It is the one piece of state
 * outside a context, because what it guards is process-wide: init
 * publishes under fixed PMIx keys, which a second context would overwrite.
 */
static atomic_bool context_exists;

llmp_status llmp_init(const llmp_init_opts *opts, llmp_ctx **out)
{
	if (!out)
		return LLMP_ERR_ARG;
	llmp_ctx *ctx = calloc(1, sizeof *ctx);
	*out = ctx;
	if (!ctx)
		return LLMP_ERR_NOMEM;
	double start = rt_now();
	if (atomic_exchange(&context_exists, true))
		return rt_fail(ctx, LLMP_ERR_STATE,
			       "llmp_init: this process already has a context; "
			       "finalize it first (init publishes under fixed PMIx keys)");
	ctx->owns_process = true;

	llmp_init_opts given;
	if (opts) {
		llmp_status st = rt_struct_in(ctx, "llmp_init_opts", &given, sizeof given, opts,
					      RT_V1_SIZE(llmp_init_opts, shm_threshold));
		if (st != LLMP_OK)
			return st;
		opts = &given;
	}
	llmp_status st = read_options(ctx, opts);
	if (st == LLMP_OK)
		st = rt_wireup_init(ctx);
	if (st != LLMP_OK)
		return st;
	rt_memtype_init(ctx);
	if (rt_log_on(ctx, RT_LOG_INIT, RT_LOG_DEBUG)) {
		char shm[32] = "off";
		if (ctx->shm_threshold != SIZE_MAX)
			snprintf(shm, sizeof shm, "%zu B", ctx->shm_threshold);
		rt_log(ctx, RT_LOG_INIT, RT_LOG_DEBUG,
		       "llmp_init: rank %u of %u, local rank %u of %u, PMIx namespace %s; timeout %g s, "
		       "ring threshold %zu B, shared memory from %s in chunks of %zu B",
		       ctx->rank, ctx->world, ctx->local_rank, ctx->local_size, ctx->me.nspace,
		       ctx->timeout_s, ctx->ring_threshold, shm, ctx->shm_chunk);
	}

	void *addr = NULL;
	size_t addrlen = 0;
	llmp_status local = prepare(ctx, opts, &addr, &addrlen);
	char local_msg[LLMP_MSG_MAX];
	memcpy(local_msg, ctx->errmsg, sizeof local_msg);
	rt_log(ctx, RT_LOG_INIT, RT_LOG_DEBUG, "llmp_init: %s %s, placement %s; device path: %s",
	       local == LLMP_OK ? "layout" : "failed before the fence, which it joins all the same:",
	       local == LLMP_OK ? ctx->layout : local_msg, ctx->placement,
	       ctx->device          ? "NCCL loaded"
	       : ctx->device_why[0] ? ctx->device_why
				    : "off");

	st = rt_wireup_exchange(ctx, addr ? addr : "", addr ? addrlen : 0);
	if (addr)
		rt_tx_release_address(ctx, addr);
	if (local != LLMP_OK) {
		memcpy(ctx->errmsg, local_msg, sizeof local_msg);
		return local;
	}
	if (st == LLMP_OK)
		st = rt_wireup_check_layouts(ctx);
	if (st == LLMP_OK && ctx->renumbered)
		st = rt_wireup_map_ranks(ctx);
	if (st == LLMP_OK)
		st = rt_device_collect(ctx);
	ctx->stats.init_seconds = rt_now() - start;
	rt_log(ctx, RT_LOG_INIT, RT_LOG_DEBUG, "llmp_init: %s in %.3f s%s%s",
	       st == LLMP_OK ? "done" : "failed", ctx->stats.init_seconds, st == LLMP_OK ? "" : ": ",
	       st == LLMP_OK ? "" : ctx->errmsg);
	return st;
}

llmp_status llmp_finalize(llmp_ctx *ctx)
{
	if (!ctx)
		return LLMP_OK;
	rt_device_leave(ctx); /* with the device watchdog on: every rank is leaving too */
	rt_device_fini(ctx);  /* first: its watchdog adds device time to the communicators */
	for (int k = 0; k < RT_NCOMMS; k++)
		rt_comm_free(ctx->comms[k]);
	rt_tx_fini(ctx);
	rt_wireup_fini(ctx);
	llmp_plan_destroy(ctx->plan);
	free(ctx->slots);
	free(ctx->proc_of_rank);
	if (ctx->owns_process)
		atomic_store(&context_exists, false);
	free(ctx);
	return LLMP_OK;
}

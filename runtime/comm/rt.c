/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt.c - what every layer asks of a context: record an error, tell the
 * time, and the getters of llmp.h. Bringing a context up and down is
 * runtime/init/, above every layer.
 */
#include "rt.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "common/fail.h" /* llmp_show_line */

llmp_status rt_fail(llmp_ctx *ctx, llmp_status status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
	va_end(ap);
	llmp_show_line(ctx->errmsg); /* a path or name from the job's environment stays on one line */
	return status;
}

double rt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *llmp_errmsg(const llmp_ctx *ctx)
{
	if (!ctx)
		return "no context (llmp_init failed to allocate one, or NULL was passed)";
	return ctx->errmsg[0] ? ctx->errmsg : "no error";
}

uint32_t llmp_rank(const llmp_ctx *ctx)
{
	return ctx ? ctx->rank : 0;
}
uint32_t llmp_world_size(const llmp_ctx *ctx)
{
	return ctx ? ctx->world : 0;
}
uint32_t llmp_local_rank(const llmp_ctx *ctx)
{
	return ctx ? ctx->local_rank : 0;
}
uint32_t llmp_local_size(const llmp_ctx *ctx)
{
	return ctx ? ctx->local_size : 0;
}
const llmp_plan *llmp_layout(const llmp_ctx *ctx)
{
	return ctx ? ctx->plan : NULL;
}

llmp_status llmp_get_stats(const llmp_ctx *ctx, llmp_stats *stats)
{
	if (!ctx || !stats)
		return LLMP_ERR_ARG;
	*stats = ctx->stats;
	return LLMP_OK;
}

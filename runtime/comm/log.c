/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c - rt_log, the runtime's one way to stderr (log.h).
 *
 * Lines carry the wall-clock time to the millisecond, so the output of a
 * job that was stopped and requeued reads as a timeline (and the requeue
 * benchmark measures its phases from the job's lines).
 */
#include "rt.h"

#include <stdarg.h>
#include <stdio.h>

#include "common/fail.h" /* llmp_show_line */

void rt_log_time(const struct timespec *when, char *buf, size_t len)
{
	struct tm tm;
	char day[32];
	localtime_r(&when->tv_sec, &tm);
	strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ld", day, when->tv_nsec / 1000000);
}

bool rt_log_on(const llmp_ctx *ctx, enum rt_log_part part, enum rt_log_level level)
{
	return ctx && (unsigned)part < RT_LOG_NPARTS && level > RT_LOG_NONE && level <= ctx->log.level[part];
}

void rt_log(const llmp_ctx *ctx, enum rt_log_part part, enum rt_log_level level, const char *fmt, ...)
{
	if (!rt_log_on(ctx, part, level))
		return;
	struct timespec now;
	char when[64], what[LLMP_MSG_MAX + 128];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &now);
	rt_log_time(&now, when, sizeof when);
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	llmp_show_line(what); /* a path or name from the job's environment stays on one line */
	if (ctx->log.set)
		fprintf(stderr, "llmp: %s rank %u %s %s: %s\n", when, ctx->rank, rt_log_part_name(part),
			rt_log_level_name(level), what);
	/* LLMP_DEBUG unset: the lines as they were before it, job's with time and rank, others bare. */
	else if (part == RT_LOG_JOB)
		fprintf(stderr, "llmp: %s rank %u: %s\n", when, ctx->rank, what);
	else
		fprintf(stderr, "llmp: %s%s\n", level == RT_LOG_WARN ? "warning: " : "", what);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_log.c - the story of a run, one line per rank and event on stderr.
 *
 * Lines carry the wall-clock time to the millisecond, so the output of a
 * job that was stopped and requeued reads as a timeline (and the requeue
 * benchmark measures its phases from it).
 */
#include "job_internal.h"

#include <stdarg.h>
#include <stdio.h>

void job_format_time(const struct timespec *when, char *buf, size_t len)
{
	struct tm tm;
	char day[32];
	localtime_r(&when->tv_sec, &tm);
	strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ld", day, when->tv_nsec / 1000000);
}

void job_log(const llmp_job *job, const char *fmt, ...)
{
	struct timespec now;
	char when[64], what[LLMP_MSG_MAX + 128];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &now);
	job_format_time(&now, when, sizeof when);
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	/* One call, so that lines of ranks sharing the output do not interleave. */
	fprintf(stderr, "llmp: %s rank %u: %s\n", when, job->ctx->rank, what);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_report.c - naming what was wrong in a collective check (report.c counts).
 *
 * Every line starts with "rank R: " so the output of all tasks of a step,
 * interleaved by srun, can still be read and grepped per rank. Only the
 * first few wrong elements are printed; the summary counts all of them.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"
#include "rt_values.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void describe(const chk_case *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s group=%s", c->what, c->group ? c->group : "-");
	if (c->op >= 0 && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " op=%s", chk_op_name(c->op));
	if (c->dtype >= 0 && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " dtype=%s", chk_dtype_name(c->dtype));
	if (n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " count=%zu %s", c->count,
			      c->inplace ? "in-place" : "out-of-place");
	if (c->root >= 0 && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " root/peer=%lld", (long long)c->root);
}

void chk_wrong_elem(const chk_case *c, size_t index, const void *got, const void *expected, const char *why)
{
	char what[256], g[64], e[64];
	describe(c, what, sizeof what);
	chk_elem_format((llmp_dtype)c->dtype, got, g, sizeof g);
	chk_elem_format((llmp_dtype)c->dtype, expected, e, sizeof e);
	report_wrong("%s index=%zu: got %s expected %s%s%s", what, index, g, e, why ? ": " : "",
		     why ? why : "");
}

void chk_wrong_status(const chk_case *c, llmp_status st, const char *errmsg)
{
	char what[256];
	describe(c, what, sizeof what);
	report_note("WRONG: %s returned %s: %s", what, llmp_strerror(st), errmsg ? errmsg : "(null)");
}

double chk_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void chk_sleep(double seconds)
{
	struct timespec t;
	t.tv_sec = (time_t)seconds;
	t.tv_nsec = (long)((seconds - (double)t.tv_sec) * 1e9);
	while (nanosleep(&t, &t) != 0)
		;
}

bool chk_names_rank(const char *msg, uint32_t rank)
{
	char word[32];
	size_t len = (size_t)snprintf(word, sizeof word, "rank %u", rank);
	for (const char *p = msg; (p = strstr(p, word)) != NULL; p++) {
		if (!isdigit((unsigned char)p[len]))
			return true;
	}
	return false;
}

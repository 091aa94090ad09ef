/*
 * rt_report.c - counting checks and naming what was wrong.
 *
 * Every line starts with "rank R: " so the output of all tasks of a step,
 * interleaved by srun, can still be read and grepped per rank. Only the
 * first few wrong elements are printed; the summary counts all of them.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"
#include "rt_values.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_PRINTED 12

/* A test program's own bookkeeping; the library keeps no such globals. */
static uint32_t report_rank = UINT32_MAX;
static unsigned long checks, wrong, printed;

void chk_report_set_rank(uint32_t rank)
{
	report_rank = rank;
}

static void prefix(void)
{
	if (report_rank == UINT32_MAX)
		printf("rank ?: ");
	else
		printf("rank %u: ", report_rank);
}

void chk_note(const char *fmt, ...)
{
	va_list ap;
	prefix();
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void chk_done(bool ok)
{
	checks++;
	if (!ok)
		wrong++;
}

bool chk_expect(bool ok, const char *fmt, ...)
{
	va_list ap;
	chk_done(ok);
	if (ok)
		return true;
	if (printed++ < MAX_PRINTED) {
		prefix();
		printf("WRONG: ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		putchar('\n');
		fflush(stdout);
	}
	return false;
}

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

void chk_wrong_line(const char *fmt, ...)
{
	va_list ap;
	if (printed++ >= MAX_PRINTED)
		return;
	prefix();
	printf("WRONG: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void chk_wrong_elem(const chk_case *c, size_t index, const void *got,
		   const void *expected, const char *why)
{
	char what[256], g[64], e[64];
	if (printed++ >= MAX_PRINTED)
		return;
	describe(c, what, sizeof what);
	chk_elem_format((llmp_dtype)c->dtype, got, g, sizeof g);
	chk_elem_format((llmp_dtype)c->dtype, expected, e, sizeof e);
	prefix();
	printf("WRONG: %s index=%zu: got %s expected %s%s%s\n", what, index, g, e,
	       why ? ": " : "", why ? why : "");
	fflush(stdout);
}

void chk_wrong_status(const chk_case *c, llmp_status st, const char *errmsg)
{
	char what[256];
	describe(c, what, sizeof what);
	prefix();
	printf("WRONG: %s returned %s: %s\n", what, llmp_strerror(st), errmsg ? errmsg : "(null)");
	fflush(stdout);
}

unsigned long chk_wrong_count(void)
{
	return wrong;
}

int chk_summary(void)
{
	prefix();
	printf("%lu checks, %lu wrong\n", checks, wrong);
	fflush(stdout);
	return wrong ? 1 : 0;
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

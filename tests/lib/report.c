/* SPDX-License-Identifier: BSD-3-Clause */
/* report.c - check counting and output of the cluster test programs. */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>

#define MAX_PRINTED 12

/* A test program's own bookkeeping; the library keeps no such globals. */
static uint32_t report_rank = UINT32_MAX;
static unsigned long checks, wrong, printed;

void report_set_rank(uint32_t rank)
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

static void print_line(const char *lead, const char *fmt, va_list ap)
{
	prefix();
	fputs(lead, stdout);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
}

void report_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	print_line("", fmt, ap);
	va_end(ap);
}

void report_done(bool ok)
{
	checks++;
	if (!ok)
		wrong++;
}

void report_wrong(const char *fmt, ...)
{
	va_list ap;
	if (printed++ >= MAX_PRINTED)
		return;
	va_start(ap, fmt);
	print_line("WRONG: ", fmt, ap);
	va_end(ap);
}

bool report_expect(bool ok, const char *fmt, ...)
{
	va_list ap;
	report_done(ok);
	if (ok || printed++ >= MAX_PRINTED)
		return ok;
	va_start(ap, fmt);
	print_line("WRONG: ", fmt, ap);
	va_end(ap);
	return false;
}

unsigned long report_wrong_count(void)
{
	return wrong;
}

int report_summary(void)
{
	prefix();
	printf("%lu checks, %lu wrong\n", checks, wrong);
	fflush(stdout);
	return wrong ? 1 : 0;
}

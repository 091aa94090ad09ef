/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slurm_env.c - hostlists, task counts and restart counts as Slurm writes them.
 */
#include "slurm_env.h"

#include <string.h>

/* Append c to host[*len], keeping room for the NUL. */
static int push(char *host, size_t hostlen, size_t *len, char c)
{
	if (*len + 1 >= hostlen)
		return -1;
	host[(*len)++] = c;
	return 0;
}

int plugin_hostlist_first(const char *list, char *host, size_t hostlen)
{
	size_t len = 0;
	const char *p = list;

	if (!list || !host || hostlen == 0)
		return -1;
	while (*p && *p != ',') {
		if (*p != '[') {
			if (*p == ']' || push(host, hostlen, &len, *p) < 0)
				return -1;
			p++;
			continue;
		}
		/* A range: keep the first number as written (zero padding matters). */
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		while (*p >= '0' && *p <= '9')
			if (push(host, hostlen, &len, *p++) < 0)
				return -1;
		const char *close = strchr(p, ']');
		if (!close)
			return -1;
		p = close + 1;
	}
	if (len == 0)
		return -1;
	host[len] = '\0';
	return 0;
}

/* A decimal number at *p, advancing it; -1 if there is none or it is huge. */
static int64_t number(const char **p)
{
	int64_t v = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (*s++ - '0');
		if (v > (1 << 24))
			return -1;
	}
	*p = s;
	return v;
}

int64_t plugin_tasks_per_node_uniform(const char *text)
{
	int64_t common = -1;
	const char *p = text;

	if (!p || !*p)
		return -1;
	for (;;) {
		int64_t n = number(&p);
		if (n < 0)
			return -1;
		if (*p == '(') { /* "N(xM)": M nodes with N tasks each */
			p++;
			if (*p++ != 'x' || number(&p) < 0 || *p++ != ')')
				return -1;
		}
		if (common >= 0 && n != common)
			common = -2; /* keep parsing: malformed still wins over uneven */
		else if (common == -1)
			common = n;
		if (*p == '\0')
			break;
		if (*p++ != ',')
			return -1;
	}
	return common == -2 ? 0 : common;
}

int plugin_tasks_per_node_list(const char *text, uint32_t *tasks, size_t nnodes)
{
	const char *p = text;
	size_t filled = 0;

	if (!p || !*p)
		return -1;
	for (;;) {
		int64_t n = number(&p), repeat = 1;
		if (n < 0)
			return -1;
		if (*p == '(') {
			p++;
			if (*p++ != 'x' || (repeat = number(&p)) <= 0 || *p++ != ')')
				return -1;
		}
		for (int64_t k = 0; k < repeat; k++) {
			if (filled == nnodes)
				return -1; /* more counts than nodes */
			tasks[filled++] = (uint32_t)n;
		}
		if (*p == '\0')
			break;
		if (*p++ != ',')
			return -1;
	}
	return filled == nnodes ? 0 : -1;
}

int64_t plugin_restart_count(const char *text)
{
	const char *p = text;

	if (!text)
		return 0; /* Slurm sets it only once the job has been requeued */
	int64_t n = number(&p);
	return n >= 0 && *p == '\0' ? n : -1;
}

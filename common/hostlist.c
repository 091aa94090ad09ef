/* SPDX-License-Identifier: BSD-3-Clause */
/* hostlist.c - Slurm host lists expanded and written (hostlist.h). */
#define _POSIX_C_SOURCE 200809L
#include "hostlist.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"

struct names {
	char **v;
	size_t n, cap, max;
	bool count_only; /* the first pass: how many names, nothing allocated */
};

static bool valid_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
	       c == '_' || c == '.';
}

static llmp_status add(struct names *out, const char *name, const char *list, char *msg, size_t len)
{
	char shown[LLMP_SHOW_MAX];
	if (out->n == out->max)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "host list '%s': more than %zu hosts",
				 llmp_show(shown, list, strlen(list)), out->max);
	if (out->count_only) {
		out->n++;
		return LLMP_OK;
	}
	if (out->n == out->cap) {
		size_t cap = out->cap ? 2 * out->cap : 16;
		char **v = realloc(out->v, cap * sizeof *v);
		if (!v)
			return llmp_fail(LLMP_ERR_NOMEM, msg, len, "host list: out of memory");
		out->v = v;
		out->cap = cap;
	}
	if (!(out->v[out->n] = strdup(name)))
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "host list: out of memory");
	out->n++;
	return LLMP_OK;
}

/* Digits of s[0..n) as a number; false when none, too many, or not digits. */
static bool number(const char *s, size_t n, unsigned long *out)
{
	unsigned long v = 0;
	if (n == 0 || n > 9)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*out = v;
	return true;
}

/* The width a range starting with the digits lo[0..n) gives its names: all of them when lo is zero-padded. */
static int range_width(const char *lo, size_t n)
{
	return lo[0] == '0' ? (int)n : 1;
}

/* One item: prefix, optionally [ranges] and suffix. */
static llmp_status expand_item(const char *item, size_t n, struct names *out, const char *list, char *msg,
			       size_t len)
{
	char shown[LLMP_SHOW_MAX], name[HOSTLIST_NAME_MAX + 1];
	const char *open = memchr(item, '[', n), *close = memchr(item, ']', n);
	for (size_t i = 0; i < n; i++)
		if (!valid_name_char(item[i]) && item[i] != '[' && item[i] != ']' && item[i] != ',')
			return llmp_fail(LLMP_ERR_ARG, msg, len, "host list '%s': '%c' in a host name",
					 llmp_show(shown, list, strlen(list)),
					 item[i] >= 0x20 && item[i] < 0x7f ? item[i] : '?');
	if (n == 0)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "host list '%s': an empty host name",
				 llmp_show(shown, list, strlen(list)));
	if (!open && !close) {
		if (n > HOSTLIST_NAME_MAX)
			return llmp_fail(LLMP_ERR_ARG, msg, len,
					 "host list '%s': a name longer than %d bytes",
					 llmp_show(shown, list, strlen(list)), HOSTLIST_NAME_MAX);
		memcpy(name, item, n);
		name[n] = '\0';
		return add(out, name, list, msg, len);
	}
	const char *end = item + n;
	if (!open || !close || close < open || memchr(open + 1, '[', (size_t)(end - open - 1)) ||
	    memchr(close + 1, ']', (size_t)(end - close - 1)) ||
	    memchr(close + 1, '[', (size_t)(end - close - 1)))
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "host list '%s': one [...] per host name, opened and closed",
				 llmp_show(shown, list, strlen(list)));
	if (close == open + 1) /* "node[]": no host at all, not a host list of none */
		return llmp_fail(LLMP_ERR_ARG, msg, len, "host list '%s': an empty range",
				 llmp_show(shown, list, strlen(list)));
	size_t plen = (size_t)(open - item), slen = (size_t)(end - close - 1);
	for (const char *r = open + 1; r < close;) {
		const char *comma = memchr(r, ',', (size_t)(close - r));
		const char *stop = comma ? comma : close;
		const char *dash = memchr(r, '-', (size_t)(stop - r));
		unsigned long lo, hi;
		bool ok = dash ? number(r, (size_t)(dash - r), &lo) &&
					  number(dash + 1, (size_t)(stop - dash - 1), &hi)
			       : number(r, (size_t)(stop - r), &lo);
		if (!dash)
			hi = lo;
		if (!ok || hi < lo)
			return llmp_fail(
				LLMP_ERR_ARG, msg, len,
				"host list '%s': inside [...], numbers or ranges LOW-HIGH with LOW <= HIGH",
				llmp_show(shown, list, strlen(list)));
		int width = range_width(r, (size_t)((dash ? dash : stop) - r));
		if (out->count_only && hi - lo >= out->max - out->n)
			return llmp_fail(LLMP_ERR_ARG, msg, len, "host list '%s': more than %zu hosts",
					 llmp_show(shown, list, strlen(list)), out->max);
		for (unsigned long v = lo; v <= hi; v++) {
			int k = snprintf(name, sizeof name, "%.*s%0*lu%.*s", (int)plen, item, width, v,
					 (int)slen, close + 1);
			if (k < 0 || (size_t)k >= sizeof name)
				return llmp_fail(LLMP_ERR_ARG, msg, len,
						 "host list '%s': a name longer than %d bytes",
						 llmp_show(shown, list, strlen(list)), HOSTLIST_NAME_MAX);
			llmp_status st = add(out, name, list, msg, len);
			if (st != LLMP_OK)
				return st;
		}
		r = comma ? comma + 1 : close;
		if (comma && r == close)
			return llmp_fail(LLMP_ERR_ARG, msg, len, "host list '%s': an empty range",
					 llmp_show(shown, list, strlen(list)));
	}
	return LLMP_OK;
}

/* Each item of list into out, in order. */
static llmp_status expand_items(const char *list, struct names *out, char *msg, size_t len)
{
	llmp_status st = LLMP_OK;
	const char *p = list;
	for (;;) {
		/* An item ends at a comma outside brackets. */
		const char *q = p;
		int depth = 0;
		while (*q && (depth || *q != ',')) {
			depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
			q++;
		}
		if ((st = expand_item(p, (size_t)(q - p), out, list, msg, len)) != LLMP_OK)
			break;
		if (!*q)
			break;
		p = q + 1;
	}
	return st;
}

/*
 * Two passes: the names are counted first (a range at once), so a list
 * of more than max names is refused before anything is allocated, and a
 * list of fewer costs its names and one array of the exact size.
 */
llmp_status hostlist_expand(const char *list, size_t max, char ***names, size_t *n, char *msg, size_t len)
{
	struct names count = { .max = max, .count_only = true };
	*names = NULL;
	*n = 0;
	llmp_status st = expand_items(list, &count, msg, len);
	if (st != LLMP_OK)
		return st;
	struct names out = { .max = max,
			     .cap = count.n,
			     .v = malloc((count.n ? count.n : 1) * sizeof(char *)) };
	if (!out.v)
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "host list: out of memory");
	if ((st = expand_items(list, &out, msg, len)) != LLMP_OK) {
		hostlist_free(out.v, out.n);
		return st;
	}
	*names = out.v;
	*n = out.n;
	return LLMP_OK;
}

void hostlist_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* ----------------------------------------------------------- writing */

/* Length of name without its number at the end: 1 to 9 digits, as number() reads. */
static size_t stem(const char *name, size_t *digits)
{
	size_t n = strlen(name), d = 0;
	while (d < n && name[n - 1 - d] >= '0' && name[n - 1 - d] <= '9')
		d++;
	*digits = d <= 9 ? d : 0;
	return n - *digits;
}

/* Whether a and b have the same stem and each a number to count with. */
static bool same_stem(const char *a, const char *b)
{
	size_t da, db, sa = stem(a, &da), sb = stem(b, &db);
	return da && db && sa == sb && memcmp(a, b, sa) == 0;
}

/* Whether the digits next are what a range starting at the digits first writes after the digits prev. */
static bool follows(const char *first, const char *prev, const char *next)
{
	unsigned long v;
	char want[16];
	if (!number(prev, strlen(prev), &v))
		return false;
	snprintf(want, sizeof want, "%0*lu", range_width(first, strlen(first)), v + 1);
	return strcmp(next, want) == 0;
}

int hostlist_write(FILE *out, const char *const *names, size_t n)
{
	for (size_t i = 0, end; i < n; i = end) {
		for (end = i + 1; end < n && same_stem(names[i], names[end]); end++)
			;
		if (i)
			fputc(',', out);
		if (end - i == 1) {
			fputs(names[i], out);
			continue;
		}
		size_t d, s = stem(names[i], &d);
		fprintf(out, "%.*s[", (int)s, names[i]);
		for (size_t r = i, last; r < end; r = last + 1) {
			for (last = r;
			     last + 1 < end && follows(names[r] + s, names[last] + s, names[last + 1] + s);
			     last++)
				;
			fprintf(out, "%s%s", r > i ? "," : "", names[r] + s);
			if (last > r)
				fprintf(out, "-%s", names[last] + s);
		}
		fputc(']', out);
	}
	return ferror(out) ? -1 : 0;
}

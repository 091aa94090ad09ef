/* SPDX-License-Identifier: BSD-3-Clause */
/* json_read.c - a strict JSON reader that remembers lines (json_read.h). */
#define _POSIX_C_SOURCE 200809L
#include "json_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"

struct reader {
	const char *p, *end;
	unsigned line;
	char *msg;
	size_t msglen;
	llmp_status status; /* LLMP_OK until the first error */
};

static bool failf(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool failf(struct reader *r, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	if (r->status != LLMP_OK)
		return false;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	r->status = llmp_fail(LLMP_ERR_ARG, r->msg, r->msglen, "line %u: %s", r->line, what);
	return false;
}

static bool out_of_memory(struct reader *r)
{
	if (r->status == LLMP_OK)
		r->status = llmp_fail(LLMP_ERR_NOMEM, r->msg, r->msglen, "line %u: out of memory", r->line);
	return false;
}

static void skip_space(struct reader *r)
{
	for (; r->p < r->end; r->p++) {
		if (*r->p == '\n')
			r->line++;
		else if (*r->p != ' ' && *r->p != '\t' && *r->p != '\r')
			return;
	}
}

/* What is at p, for a message: a printable character or a description. */
static const char *shown(const struct reader *r, char buf[8])
{
	if (r->p >= r->end)
		return "the end of the file";
	unsigned char c = (unsigned char)*r->p;
	if (c >= 0x20 && c < 0x7f)
		snprintf(buf, 8, "'%c'", c);
	else
		snprintf(buf, 8, "0x%02x", c);
	return buf;
}

static bool expect(struct reader *r, char c, const char *what)
{
	char buf[8];
	skip_space(r);
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return true;
	}
	return failf(r, "expected %s, found %s", what, shown(r, buf));
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool read_hex4(struct reader *r, unsigned *out)
{
	unsigned v = 0;
	if (r->end - r->p < 4)
		return failf(r, "\\u needs four hex digits");
	for (int i = 0; i < 4; i++) {
		int d = hex_digit(r->p[i]);
		if (d < 0)
			return failf(r, "\\u needs four hex digits");
		v = v * 16 + (unsigned)d;
	}
	r->p += 4;
	*out = v;
	return true;
}

static size_t put_utf8(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The escape after a backslash, as UTF-8 into out; its length, 0 on error. */
static size_t read_escape(struct reader *r, char *out)
{
	char c = *r->p++;
	switch (c) {
	case '"':
	case '\\':
	case '/': out[0] = c; return 1;
	case 'b': out[0] = '\b'; return 1;
	case 'f': out[0] = '\f'; return 1;
	case 'n': out[0] = '\n'; return 1;
	case 'r': out[0] = '\r'; return 1;
	case 't': out[0] = '\t'; return 1;
	case 'u': break;
	default: failf(r, "unknown escape \\%c in a string", c >= 0x20 && c < 0x7f ? c : '?'); return 0;
	}
	unsigned cp, low;
	if (!read_hex4(r, &cp))
		return 0;
	if (cp >= 0xdc00 && cp <= 0xdfff) {
		failf(r, "\\u%04x: a low surrogate without its high one", cp);
		return 0;
	}
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') {
			failf(r, "\\u%04x: a high surrogate without its low one", cp);
			return 0;
		}
		r->p += 2;
		if (!read_hex4(r, &low))
			return 0;
		if (low < 0xdc00 || low > 0xdfff) {
			failf(r, "\\u%04x\\u%04x: not a surrogate pair", cp, low);
			return 0;
		}
		cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
	}
	if (cp == 0) {
		failf(r, "\\u0000: a NUL in a string");
		return 0;
	}
	return put_utf8(out, cp);
}

/* A string, the opening quote next; *out is malloc'd and NUL-terminated. */
static bool read_string(struct reader *r, char **out)
{
	if (!expect(r, '"', "a string"))
		return false;
	/* Escapes never make a string longer than its source. */
	const char *q = r->p;
	while (q < r->end && *q != '"')
		q += *q == '\\' ? 2 : 1;
	char *s = malloc((size_t)(q - r->p) + 2), *w = s;
	if (!s)
		return out_of_memory(r);
	for (;;) {
		if (r->p >= r->end) {
			free(s);
			return failf(r, "a string is not closed");
		}
		unsigned char c = (unsigned char)*r->p;
		if (c == '"') {
			r->p++;
			break;
		}
		if (c < 0x20) {
			free(s);
			return failf(r, "a control character (0x%02x) in a string: write it as an escape", c);
		}
		r->p++;
		if (c == '\\') {
			if (r->p >= r->end) {
				free(s);
				return failf(r, "a string is not closed");
			}
			size_t k = read_escape(r, w);
			if (!k) {
				free(s);
				return false;
			}
			w += k;
		} else {
			*w++ = (char)c;
		}
	}
	*w = '\0';
	*out = s;
	return true;
}

static bool read_number(struct reader *r, struct json_value *v)
{
	const char *s = r->p;
	const char *p = s;
	bool integer = true;
	if (p < r->end && *p == '-')
		p++;
	if (p < r->end && *p == '0')
		p++;
	else if (p < r->end && *p >= '1' && *p <= '9')
		while (p < r->end && *p >= '0' && *p <= '9')
			p++;
	else
		return failf(r, "a number needs digits");
	if (p < r->end && *p == '.') {
		integer = false;
		p++;
		if (p >= r->end || *p < '0' || *p > '9')
			return failf(r, "a number needs digits after its '.'");
		while (p < r->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < r->end && (*p == 'e' || *p == 'E')) {
		integer = false;
		p++;
		if (p < r->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= r->end || *p < '0' || *p > '9')
			return failf(r, "a number needs digits in its exponent");
		while (p < r->end && *p >= '0' && *p <= '9')
			p++;
	}
	char buf[64];
	size_t n = (size_t)(p - s);
	if (n >= sizeof buf)
		return failf(r, "a number of more than %zu characters", sizeof buf - 1);
	memcpy(buf, s, n);
	buf[n] = '\0';
	v->kind = JSON_NUMBER;
	v->number = strtod(buf, NULL);
	if (integer) {
		errno = 0;
		long long i = strtoll(buf, NULL, 10);
		v->integer = errno == 0;
		v->int64 = i;
	}
	r->p = p;
	return true;
}

static bool read_value(struct reader *r, struct json_value *v, unsigned depth);

static bool grow(void **array, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return true;
	size_t more = *cap ? 2 * *cap : 4;
	void *p = realloc(*array, more * size);
	if (!p)
		return false;
	*array = p;
	*cap = more;
	return true;
}

static bool read_array(struct reader *r, struct json_value *v, unsigned depth)
{
	size_t cap = 0;
	v->kind = JSON_ARRAY;
	r->p++; /* '[' */
	skip_space(r);
	if (r->p < r->end && *r->p == ']') {
		r->p++;
		return true;
	}
	for (;;) {
		if (!grow((void **)&v->items, v->n, &cap, sizeof *v->items))
			return out_of_memory(r);
		memset(&v->items[v->n], 0, sizeof v->items[v->n]);
		if (!read_value(r, &v->items[v->n++], depth + 1))
			return false;
		skip_space(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		return expect(r, ']', "',' or ']' in an array");
	}
}

/* Members by key, then by place in the file: a duplicate follows its first. */
static int by_key_then_place(const void *a, const void *b)
{
	const struct json_member *x = *(const struct json_member *const *)a;
	const struct json_member *y = *(const struct json_member *const *)b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x > y) - (x < y);
}

/*
 * Every key of object v once: sorted, so a file of a million keys costs
 * O(n log n), not the O(n^2) of comparing each key with those before it
 * (a user's topology file is read where a slow parse holds a job step).
 * The duplicate named is the first repetition in file order, as a reader
 * going through the file would meet it.
 */
static bool keys_unique(struct reader *r, const struct json_value *v)
{
	if (v->n < 2)
		return true;
	const struct json_member **sorted = malloc(v->n * sizeof *sorted);
	if (!sorted)
		return out_of_memory(r);
	for (size_t i = 0; i < v->n; i++)
		sorted[i] = &v->members[i];
	qsort(sorted, v->n, sizeof *sorted, by_key_then_place);
	const struct json_member *twice = NULL;
	for (size_t i = 1; i < v->n; i++)
		if (strcmp(sorted[i - 1]->key, sorted[i]->key) == 0 && (!twice || sorted[i] < twice))
			twice = sorted[i];
	free(sorted);
	if (!twice)
		return true;
	r->line = twice->line;
	return failf(r, "key \"%.60s\" given twice in one object", twice->key);
}

static bool read_object(struct reader *r, struct json_value *v, unsigned depth)
{
	size_t cap = 0;
	v->kind = JSON_OBJECT;
	r->p++; /* '{' */
	skip_space(r);
	if (r->p < r->end && *r->p == '}') {
		r->p++;
		return true;
	}
	for (;;) {
		if (!grow((void **)&v->members, v->n, &cap, sizeof *v->members))
			return out_of_memory(r);
		struct json_member *m = &v->members[v->n];
		memset(m, 0, sizeof *m);
		skip_space(r);
		m->line = r->line;
		if (!read_string(r, &m->key))
			return false;
		v->n++;
		if (!expect(r, ':', "':' after a key"))
			return false;
		if (!read_value(r, &m->value, depth + 1))
			return false;
		skip_space(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		return expect(r, '}', "',' or '}' in an object") && keys_unique(r, v);
	}
}

static bool read_word(struct reader *r, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(r->end - r->p) >= n && memcmp(r->p, word, n) == 0) {
		r->p += n;
		return true;
	}
	return false;
}

static bool read_value(struct reader *r, struct json_value *v, unsigned depth)
{
	char buf[8];
	skip_space(r);
	v->line = r->line;
	if (depth > JSON_MAX_DEPTH)
		return failf(r, "nested more than %d deep", JSON_MAX_DEPTH);
	if (r->p >= r->end)
		return failf(r, "expected a value, found the end of the file");
	switch (*r->p) {
	case '{': return read_object(r, v, depth);
	case '[': return read_array(r, v, depth);
	case '"': v->kind = JSON_STRING; return read_string(r, &v->string);
	case 't':
	case 'f':
		v->kind = JSON_BOOL;
		v->boolean = *r->p == 't';
		if (read_word(r, v->boolean ? "true" : "false"))
			return true;
		break;
	case 'n':
		v->kind = JSON_NULL;
		if (read_word(r, "null"))
			return true;
		break;
	default:
		if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))
			return read_number(r, v);
	}
	return failf(r, "expected a value, found %s", shown(r, buf));
}

llmp_status json_parse(const char *text, size_t len, struct json_value *root, char *msg, size_t msglen)
{
	struct reader r = { .p = text, .end = text + len, .line = 1, .msg = msg, .msglen = msglen };
	memset(root, 0, sizeof *root);
	if (memchr(text, '\0', len))
		return llmp_fail(LLMP_ERR_ARG, msg, msglen, "a NUL byte in the file: not JSON text");
	if (read_value(&r, root, 0)) {
		char buf[8];
		skip_space(&r);
		if (r.p < r.end)
			failf(&r, "text after the document: %s", shown(&r, buf));
	}
	if (r.status != LLMP_OK)
		json_free(root);
	return r.status;
}

void json_free(struct json_value *v)
{
	if (!v)
		return;
	free(v->string);
	for (size_t i = 0; v->kind == JSON_ARRAY && i < v->n; i++)
		json_free(&v->items[i]);
	for (size_t i = 0; v->kind == JSON_OBJECT && i < v->n; i++) {
		free(v->members[i].key);
		json_free(&v->members[i].value);
	}
	/* A member whose key was read but not its value is freed above too. */
	free(v->items);
	free(v->members);
	memset(v, 0, sizeof *v);
}

const struct json_value *json_get(const struct json_value *v, const char *key)
{
	for (size_t i = 0; v && v->kind == JSON_OBJECT && i < v->n; i++)
		if (strcmp(v->members[i].key, key) == 0)
			return &v->members[i].value;
	return NULL;
}

const char *json_kind_name(enum json_kind kind)
{
	static const char *const names[] = { "null",     "a boolean", "a number",
					     "a string", "an array",  "an object" };
	return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

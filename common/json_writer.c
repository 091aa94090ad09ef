/* SPDX-License-Identifier: BSD-3-Clause */
/* json_writer.c - see json_writer.h. */
#include <math.h>

#include "json_writer.h"

void json_write_escaped(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		default:
			/* Other control bytes as \u00XX; bytes >= 0x80 pass through (UTF-8 stays UTF-8). */
			if (*p < 0x20 || *p == 0x7f)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

void json_begin(struct json_writer *w, FILE *out)
{
	*w = (struct json_writer){ .out = out };
	w->empty[0] = true;
}

bool json_end(struct json_writer *w)
{
	fputc('\n', w->out);
	return w->depth == 0 && !w->overflow && !ferror(w->out);
}

/* The separator and key before a value at the current level. */
static void lead(struct json_writer *w, const char *key)
{
	if (!w->empty[w->depth])
		fputc(',', w->out);
	w->empty[w->depth] = false;
	if (key) {
		json_write_escaped(w->out, key);
		fputc(':', w->out);
	}
}

static void open_nested(struct json_writer *w, const char *key, char bracket)
{
	lead(w, key);
	fputc(bracket, w->out);
	if (w->depth == JSON_WRITER_DEPTH) {
		w->overflow = true;
		return;
	}
	w->empty[++w->depth] = true;
}

static void close_nested(struct json_writer *w, char bracket)
{
	fputc(bracket, w->out);
	if (w->depth > 0)
		w->depth--;
	else
		w->overflow = true;
}

void json_object(struct json_writer *w, const char *key)
{
	open_nested(w, key, '{');
}
void json_object_end(struct json_writer *w)
{
	close_nested(w, '}');
}
void json_array(struct json_writer *w, const char *key)
{
	open_nested(w, key, '[');
}
void json_array_end(struct json_writer *w)
{
	close_nested(w, ']');
}

void json_string(struct json_writer *w, const char *key, const char *value)
{
	lead(w, key);
	if (value)
		json_write_escaped(w->out, value);
	else
		fputs("null", w->out);
}

void json_uint(struct json_writer *w, const char *key, uint64_t value)
{
	lead(w, key);
	fprintf(w->out, "%llu", (unsigned long long)value);
}

void json_double(struct json_writer *w, const char *key, double value)
{
	lead(w, key);
	if (isfinite(value))
		fprintf(w->out, "%.9g", value);
	else
		fputs("null", w->out);
}

void json_bool(struct json_writer *w, const char *key, bool value)
{
	lead(w, key);
	fputs(value ? "true" : "false", w->out);
}

void json_null(struct json_writer *w, const char *key)
{
	lead(w, key);
	fputs("null", w->out);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics_read.c - a rank's JSON-lines metrics file read back, a half-written last line skipped. */
#define _POSIX_C_SOURCE 200809L

#include "metrics_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/json_read.h"

/* A field of kind kind in object o, or NULL with a message. */
static const struct json_value *field(const struct json_value *o, const char *key, enum json_kind kind,
				      char *msg, size_t msglen)
{
	const struct json_value *v = json_get(o, key);
	if (!v || v->kind != kind) {
		snprintf(msg, msglen, "\"%s\": %s, expected %s", key, v ? json_kind_name(v->kind) : "missing",
			 json_kind_name(kind));
		return NULL;
	}
	return v;
}

static bool get_u64(const struct json_value *o, const char *key, uint64_t *out, char *msg, size_t msglen)
{
	const struct json_value *v = field(o, key, JSON_NUMBER, msg, msglen);
	if (!v)
		return false;
	if (!v->integer || v->int64 < 0) {
		snprintf(msg, msglen, "\"%s\": not a count", key);
		return false;
	}
	*out = (uint64_t)v->int64;
	return true;
}

static bool get_u32(const struct json_value *o, const char *key, uint32_t *out, char *msg, size_t msglen)
{
	uint64_t v;
	if (!get_u64(o, key, &v, msg, msglen))
		return false;
	if (v > UINT32_MAX) {
		snprintf(msg, msglen, "\"%s\": %llu is too large", key, (unsigned long long)v);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

static bool get_double(const struct json_value *o, const char *key, double *out, char *msg, size_t msglen)
{
	const struct json_value *v = field(o, key, JSON_NUMBER, msg, msglen);
	if (v)
		*out = v->number;
	return v != NULL;
}

static bool get_string(const struct json_value *o, const char *key, char *out, size_t cap, char *msg,
		       size_t msglen)
{
	const struct json_value *v = field(o, key, JSON_STRING, msg, msglen);
	if (v)
		snprintf(out, cap, "%s", v->string);
	return v != NULL;
}

static bool read_comm(const struct json_value *o, struct cli_metrics_comm *c, char *msg, size_t msglen)
{
	if (o->kind != JSON_OBJECT) {
		snprintf(msg, msglen, "\"comms\": an item is not an object");
		return false;
	}
	const struct json_value *last;
	if (!get_string(o, "group", c->group, sizeof c->group, msg, msglen) ||
	    !get_u32(o, "size", &c->size, msg, msglen) || !get_u32(o, "rank", &c->rank, msg, msglen) ||
	    !get_u64(o, "ops", &c->ops, msg, msglen) ||
	    !get_u64(o, "bytes_sent", &c->bytes_sent, msg, msglen) ||
	    !get_u64(o, "bytes_received", &c->bytes_received, msg, msglen) ||
	    !get_double(o, "seconds", &c->seconds, msg, msglen) ||
	    !get_double(o, "wait_s", &c->wait_s, msg, msglen) ||
	    !get_u64(o, "waits", &c->waits, msg, msglen) ||
	    !(last = field(o, "last", JSON_ARRAY, msg, msglen)))
		return false;
	c->nlast = 0;
	for (size_t i = 0; i < last->n && c->nlast < CLI_METRICS_MAX_LAST; i++) {
		const struct json_value *l = &last->items[i];
		if (l->kind != JSON_OBJECT || !get_u32(l, "rank", &c->last[c->nlast].rank, msg, msglen) ||
		    !get_u64(l, "times", &c->last[c->nlast].times, msg, msglen) ||
		    !get_double(l, "wait_s", &c->last[c->nlast].wait_s, msg, msglen))
			return false;
		c->nlast++;
	}
	return true;
}

static bool read_record(const struct json_value *o, struct cli_metrics_record *r, char *msg, size_t msglen)
{
	uint64_t version;
	const struct json_value *step, *final, *comms;
	if (o->kind != JSON_OBJECT) {
		snprintf(msg, msglen, "not a JSON object");
		return false;
	}
	if (!get_u64(o, "v", &version, msg, msglen))
		return false;
	if (version != 1) {
		snprintf(msg, msglen, "\"v\": version %llu, this llmp reads 1", (unsigned long long)version);
		return false;
	}
	if (!get_double(o, "time", &r->time, msg, msglen) || !get_u32(o, "rank", &r->rank, msg, msglen) ||
	    !get_u32(o, "world", &r->world, msg, msglen) ||
	    !get_string(o, "host", r->host, sizeof r->host, msg, msglen) ||
	    !get_string(o, "layout", r->layout, sizeof r->layout, msg, msglen) ||
	    !get_u64(o, "steps", &r->steps, msg, msglen) ||
	    !get_double(o, "step_s", &r->step_s, msg, msglen) ||
	    !get_double(o, "step_last_s", &r->step_last_s, msg, msglen) ||
	    !get_double(o, "step_max_s", &r->step_max_s, msg, msglen) ||
	    !get_double(o, "ckpt_stall_s", &r->ckpt_stall_s, msg, msglen) ||
	    !get_u64(o, "ckpt_stalls", &r->ckpt_stalls, msg, msglen) ||
	    !(final = field(o, "final", JSON_BOOL, msg, msglen)) ||
	    !(comms = field(o, "comms", JSON_ARRAY, msg, msglen)))
		return false;
	r->final = final->boolean;
	step = json_get(o, "step");
	r->has_step = step && step->kind == JSON_NUMBER;
	if (r->has_step && !get_u64(o, "step", &r->step, msg, msglen))
		return false;
	r->ncomms = 0;
	for (size_t i = 0; i < comms->n && r->ncomms < CLI_METRICS_MAX_COMMS; i++)
		if (!read_comm(&comms->items[i], &r->comms[r->ncomms++], msg, msglen))
			return false;
	return true;
}

int cli_metrics_parse_line(const char *line, size_t len, struct cli_metrics_record *rec, char *msg,
			   size_t msglen)
{
	struct json_value root;
	memset(rec, 0, sizeof *rec);
	if (json_parse(line, len, &root, msg, msglen) != LLMP_OK)
		return -1;
	bool ok = read_record(&root, rec, msg, msglen);
	json_free(&root);
	return ok ? 0 : -1;
}

int cli_metrics_read_text(const char *text, size_t len, struct cli_metrics_file *out, char *msg,
			  size_t msglen)
{
	memset(out, 0, sizeof *out);
	struct cli_metrics_record *rec = malloc(sizeof *rec);
	if (!rec) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	size_t line = 0, start = 0;
	int rc = 0;
	while (start < len) {
		const char *nl = memchr(text + start, '\n', len - start);
		line++;
		if (!nl) { /* being written, or cut off by a kill: not a record */
			out->partial = true;
			break;
		}
		size_t n = (size_t)(nl - (text + start));
		char why[256];
		if (n > 0 && cli_metrics_parse_line(text + start, n, rec, why, sizeof why) != 0) {
			snprintf(msg, msglen, "line %zu: %s", line, why);
			rc = -1;
			break;
		}
		if (n > 0) {
			out->prev = out->last;
			out->last = *rec;
			out->records++;
		}
		start += n + 1;
	}
	free(rec);
	return rc;
}

int cli_metrics_read_file(const char *path, struct cli_metrics_file *out, char *msg, size_t msglen)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	size_t len = 0, cap = 0;
	if (!f) {
		snprintf(msg, msglen, "%s", strerror(errno));
		return -1;
	}
	for (;;) {
		if (len == cap) {
			char *grown = realloc(text, cap = cap ? 2 * cap : 1 << 16);
			if (!grown) {
				free(text);
				fclose(f);
				snprintf(msg, msglen, "out of memory");
				return -1;
			}
			text = grown;
		}
		size_t n = fread(text + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	int err = ferror(f);
	fclose(f);
	int rc = err ? -1 : cli_metrics_read_text(text, len, out, msg, msglen);
	if (err)
		snprintf(msg, msglen, "read error");
	free(text);
	return rc;
}

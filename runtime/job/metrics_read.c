/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics_read.c - a rank's JSON-lines metrics file read back, a half-written last line skipped. */
#define _POSIX_C_SOURCE 200809L

#include "metrics_read.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_read.h"

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

static bool read_comm(const struct json_value *o, struct job_metrics_comm *c, char *msg, size_t msglen)
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
	for (size_t i = 0; i < last->n && c->nlast < JOB_METRICS_MAX_LAST; i++) {
		const struct json_value *l = &last->items[i];
		if (l->kind != JSON_OBJECT || !get_u32(l, "rank", &c->last[c->nlast].rank, msg, msglen) ||
		    !get_u64(l, "times", &c->last[c->nlast].times, msg, msglen) ||
		    !get_double(l, "wait_s", &c->last[c->nlast].wait_s, msg, msglen))
			return false;
		c->nlast++;
	}
	return true;
}

static bool read_record(const struct json_value *o, struct job_metrics_record *r, char *msg, size_t msglen)
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
	/* The grid coordinates: optional (a reader of version 1 needs none of them), each axis too. */
	static const char *const axes[] = { "tp", "cp", "ep", "dp", "pp" };
	const struct json_value *coords = json_get(o, "coords");
	r->has_coords = coords && coords->kind == JSON_OBJECT;
	for (size_t a = 0; r->has_coords && a < sizeof axes / sizeof axes[0]; a++)
		if (json_get(coords, axes[a]) && !get_u32(coords, axes[a], &r->coords[a], msg, msglen))
			return false; /* an axis left out is 0; one of the wrong type is an error */
	step = json_get(o, "step");
	r->has_step = step && step->kind == JSON_NUMBER;
	if (r->has_step && !get_u64(o, "step", &r->step, msg, msglen))
		return false;
	r->ncomms = 0;
	for (size_t i = 0; i < comms->n && r->ncomms < JOB_METRICS_MAX_COMMS; i++)
		if (!read_comm(&comms->items[i], &r->comms[r->ncomms++], msg, msglen))
			return false;
	return true;
}

int job_metrics_parse_line(const char *line, size_t len, struct job_metrics_record *rec, char *msg,
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

/* Call fn on every complete record of text[0..len); -1 with msg naming the line when one does not parse. */
static int each_record(const char *text, size_t len, int (*fn)(const struct job_metrics_record *, void *),
		       void *arg, bool *partial, char *msg, size_t msglen)
{
	struct job_metrics_record *rec = malloc(sizeof *rec);
	if (!rec) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	size_t line = 0, start = 0;
	int rc = 0;
	*partial = false;
	while (start < len && rc == 0) {
		const char *nl = memchr(text + start, '\n', len - start);
		line++;
		if (!nl) { /* being written, or cut off by a kill: not a record */
			*partial = true;
			break;
		}
		size_t n = (size_t)(nl - (text + start));
		char why[256];
		if (n > 0 && job_metrics_parse_line(text + start, n, rec, why, sizeof why) != 0) {
			snprintf(msg, msglen, "line %zu: %s", line, why);
			rc = -1;
		} else if (n > 0 && fn(rec, arg) != 0) {
			snprintf(msg, msglen, "out of memory");
			rc = -1;
		}
		start += n + 1;
	}
	free(rec);
	return rc;
}

static int keep_last(const struct job_metrics_record *rec, void *arg)
{
	struct job_metrics_file *out = arg;
	out->prev = out->last;
	out->last = *rec;
	out->records++;
	return 0;
}

int job_metrics_read_text(const char *text, size_t len, struct job_metrics_file *out, char *msg,
			  size_t msglen)
{
	memset(out, 0, sizeof *out);
	return each_record(text, len, keep_last, out, &out->partial, msg, msglen);
}

/* The whole file at path, malloc'd; NULL with msg. */
static char *slurp(const char *path, size_t *len, char *msg, size_t msglen)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	size_t cap = 0;
	*len = 0;
	if (!f) {
		snprintf(msg, msglen, "%s", strerror(errno));
		return NULL;
	}
	for (;;) {
		if (*len == cap) {
			char *grown = realloc(text, cap = cap ? 2 * cap : 1 << 16);
			if (!grown) {
				free(text);
				fclose(f);
				snprintf(msg, msglen, "out of memory");
				return NULL;
			}
			text = grown;
		}
		size_t n = fread(text + *len, 1, cap - *len, f);
		*len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(text);
		text = NULL;
		snprintf(msg, msglen, "read error");
	}
	fclose(f);
	return text;
}

int job_metrics_read_file(const char *path, struct job_metrics_file *out, char *msg, size_t msglen)
{
	size_t len;
	char *text = slurp(path, &len, msg, msglen);
	int rc = text ? job_metrics_read_text(text, len, out, msg, msglen) : -1;
	free(text);
	return rc;
}

struct series {
	struct job_metrics_record *recs;
	size_t n, cap;
};

static int append(const struct job_metrics_record *rec, void *arg)
{
	struct series *s = arg;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct job_metrics_record *grown = realloc(s->recs, cap * sizeof *grown);
		if (!grown)
			return -1;
		s->recs = grown;
		s->cap = cap;
	}
	s->recs[s->n++] = *rec;
	return 0;
}

int job_metrics_read_series(const char *path, struct job_metrics_record **recs, size_t *n, bool *partial,
			    char *msg, size_t msglen)
{
	size_t len;
	struct series s = { 0 };
	char *text = slurp(path, &len, msg, msglen);
	int rc = text ? each_record(text, len, append, &s, partial, msg, msglen) : -1;
	free(text);
	if (rc != 0) {
		free(s.recs);
		s.recs = NULL;
		s.n = 0;
	}
	*recs = s.recs;
	*n = s.n;
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int job_metrics_list(const char *dir, char ***names, size_t *n)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	size_t cap = 0;
	*names = NULL;
	*n = 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, "rank-", 5) != 0 || len < 11 ||
		    strcmp(e->d_name + len - 6, ".jsonl") != 0)
			continue;
		if (*n == cap) {
			char **grown = realloc(*names, (cap = cap ? 2 * cap : 64) * sizeof **names);
			if (!grown)
				break;
			*names = grown;
		}
		if (!((*names)[*n] = strdup(e->d_name)))
			break;
		(*n)++;
	}
	closedir(d);
	qsort(*names, *n, sizeof **names, cmp_names);
	return 0;
}

void job_metrics_list_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

void job_metrics_add_blame(const struct job_metrics_record *r, struct job_metrics_blame *blame,
			   uint32_t world)
{
	for (size_t k = 0; k < r->ncomms; k++) {
		const struct job_metrics_comm *c = &r->comms[k];
		if (r->rank < world)
			blame[r->rank].own_s += c->wait_s;
		for (size_t l = 0; l < c->nlast; l++)
			if (c->last[l].rank < world) {
				blame[c->last[l].rank].times += c->last[l].times;
				blame[c->last[l].rank].others_s += c->last[l].wait_s;
			}
	}
}

double job_metrics_score(const struct job_metrics_blame *b)
{
	return b->others_s - b->own_s;
}

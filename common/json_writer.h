/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * json_writer.h - llmp's one JSON writer: the tool's documents (`llmp
 * ckpt ... --json`, doc/ckpt-json.md; `llmp plan --format json`; `llmp
 * top --json`), the topology files (topology/topo_write.c) and the metrics
 * records (runtime/job/job_metrics.c) escape their strings here.
 *
 * The writer puts the commas and escapes the strings; the caller names
 * keys inside objects and passes NULL as the key inside arrays. Output is
 * one line, as `llmp plan --format json` writes it. Nesting is bounded
 * (JSON_WRITER_DEPTH); deeper values are dropped and the writer reports it.
 */
#ifndef LLMP_JSON_WRITER_H
#define LLMP_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_WRITER_DEPTH 16

struct json_writer {
	FILE *out;
	int depth;
	bool empty[JSON_WRITER_DEPTH + 1]; /* nothing written yet at this level */
	bool overflow;                     /* nesting went past JSON_WRITER_DEPTH */
};

void json_begin(struct json_writer *w, FILE *out);
/* The newline after the document; false if nesting was unbalanced or too deep, or the stream failed. */
bool json_end(struct json_writer *w);

void json_object(struct json_writer *w, const char *key);
void json_object_end(struct json_writer *w);
void json_array(struct json_writer *w, const char *key);
void json_array_end(struct json_writer *w);

void json_string(struct json_writer *w, const char *key, const char *value); /* NULL: null */
void json_uint(struct json_writer *w, const char *key, uint64_t value);
void json_double(struct json_writer *w, const char *key, double value); /* non-finite: null */
void json_bool(struct json_writer *w, const char *key, bool value);
void json_null(struct json_writer *w, const char *key);

/* A JSON string literal of s (quotes included), escaped as RFC 8259 requires. */
void json_write_escaped(FILE *out, const char *s);

#endif /* LLMP_JSON_WRITER_H */

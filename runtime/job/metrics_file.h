/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_file.h - the files the metrics go to (doc/metrics-json.md),
 * without a context: the LLMP_METRICS setting, a rank's JSON-lines file
 * appended one whole line at a time, and a file replaced atomically (the
 * Prometheus textfile). The job layer fills them (job_metrics.c); the unit
 * tests and `llmp top` need nothing else.
 *
 * A killed job may leave a half-written last line: readers skip a last
 * line without its newline, and job_metrics_open cuts it off before the
 * next run appends, so every complete line of a file is a whole record.
 */
#ifndef LLMP_JOB_METRICS_FILE_H
#define LLMP_JOB_METRICS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_status.h>
#include <llmp/llmp_env.h>

#define JOB_METRICS_ENV LLMP_ENV_METRICS
#define JOB_METRICS_DEFAULT_EVERY_S 10.0
#define JOB_METRICS_DIR_MAX 4000

/* LLMP_METRICS=DIR[,every=Ns|Nm][,prom] */
struct job_metrics_spec {
	char dir[JOB_METRICS_DIR_MAX];
	double every_s; /* seconds between lines (0: at every step) */
	bool prom;      /* also DIR/rank-R.prom, for node exporters' textfile collectors */
};

/* Parse the setting; LLMP_ERR_SPEC with a message naming the culprit. */
llmp_status job_metrics_spec_parse(const char *text, struct job_metrics_spec *spec, char *msg, size_t msglen);

/* DIR/rank-RRRRR.jsonl (or .prom) for rank. */
void job_metrics_path(const char *dir, uint32_t rank, const char *ext, char *buf, size_t len);

/*
 * Make dir (and its parents), open rank's file for appending, and cut a
 * half-written last line off. *fd: the descriptor.
 */
llmp_status job_metrics_open(const char *dir, uint32_t rank, int *fd, char *msg, size_t msglen);

/*
 * Append line[0..len), which ends with a newline, in one write; a write
 * cut short is finished or, failing that, cut back off the file.
 */
llmp_status job_metrics_append(int fd, const char *line, size_t len, char *msg, size_t msglen);

/* Replace path with text[0..len): a temporary file beside it, then rename. */
llmp_status job_metrics_replace(const char *path, const char *text, size_t len, char *msg, size_t msglen);

#endif /* LLMP_JOB_METRICS_FILE_H */

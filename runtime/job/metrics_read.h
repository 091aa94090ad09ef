/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics_read.h - the metrics files of a job read back (format:
 * doc/metrics-json.md), beside their writer (metrics_file.h), for `llmp
 * top` (a rank's newest record and the one before it) and `llmp report`
 * (every record). A last line without its
 * newline is a line being written, or cut off by a kill: it is skipped,
 * never taken as data.
 */
#ifndef LLMP_JOB_METRICS_READ_H
#define LLMP_JOB_METRICS_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOB_METRICS_MAX_COMMS 24
#define JOB_METRICS_MAX_LAST 4

struct job_metrics_comm {
	char group[32];
	uint32_t size, rank;
	uint64_t ops, bytes_sent, bytes_received, waits;
	double seconds, wait_s;
	size_t nlast;
	struct {
		uint32_t rank; /* world rank */
		uint64_t times;
		double wait_s;
	} last[JOB_METRICS_MAX_LAST];
};

struct job_metrics_record {
	double time;
	uint32_t rank, world;
	char host[64];
	char layout[256];
	bool has_coords;
	uint32_t coords[5]; /* tp cp ep dp pp, when the record has them */
	bool has_step;
	uint64_t step, steps, ckpt_stalls;
	double step_s, step_last_s, step_max_s, ckpt_stall_s;
	bool final;
	size_t ncomms;
	struct job_metrics_comm comms[JOB_METRICS_MAX_COMMS];
};

/* One line (without its newline); -1 with a message naming the field when it is not a record. */
int job_metrics_parse_line(const char *line, size_t len, struct job_metrics_record *rec, char *msg,
			   size_t msglen);

/* What one rank's file holds. */
struct job_metrics_file {
	struct job_metrics_record last, prev; /* prev valid when records >= 2 */
	size_t records;                       /* complete lines read */
	bool partial;                         /* a last line without its newline was skipped */
};

/* Read text[0..len), a file's contents; -1 with a message naming the line when one does not parse. */
int job_metrics_read_text(const char *text, size_t len, struct job_metrics_file *out, char *msg,
			  size_t msglen);

/* Read the file at path. */
int job_metrics_read_file(const char *path, struct job_metrics_file *out, char *msg, size_t msglen);

/* Every record of the file at path, oldest first (malloc'd; free it), and whether a partial last line was skipped. */
int job_metrics_read_series(const char *path, struct job_metrics_record **recs, size_t *n, bool *partial,
			    char *msg, size_t msglen);

/* DIR/rank-*.jsonl, sorted by name (malloc'd names); -1 when DIR cannot be read. */
int job_metrics_list(const char *dir, char ***names, size_t *n);
void job_metrics_list_free(char **names, size_t n);

/*
 * Who held whom up, from each rank's newest record: for every rank, the
 * calls of others whose longest wait was for it, how long those waits
 * were, and how long it waited itself. Over UCX a rank blames the peer it
 * waited for, which may itself be waiting for the slow one, so a
 * straggler's score is what others waited for it less what it waited.
 */
struct job_metrics_blame {
	uint64_t times;
	double others_s, own_s;
};
void job_metrics_add_blame(const struct job_metrics_record *r, struct job_metrics_blame *blame,
			   uint32_t world);
double job_metrics_score(const struct job_metrics_blame *b);

#endif /* LLMP_JOB_METRICS_READ_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_verify.c - `llmp ckpt verify DIR [--step N]`: every complete
 * checkpoint (or step N) checked whole by the runtime's ck_verify_step:
 * MANIFEST, shards and their sizes, the CRC-32C of every slice, the index,
 * meta.bin.
 *
 * Each problem is a line on stderr naming the step, the file and the
 * tensor; stdout gets one summary line per checkpoint (or the JSON
 * document, doc/ckpt-json.md). A progress line goes to stderr while bytes
 * are checked, when stderr is a terminal or with --progress.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_cli.h"
#include "common/json_writer.h"

#define PROG "llmp ckpt verify"

static void help(void)
{
	printf("usage: llmp ckpt verify DIR [--step N] [--json] [--progress | --no-progress]\n\n"
	       "Check the complete checkpoints under the checkpoint root DIR (all of them, newest\n"
	       "first, or step N): the MANIFEST, every shard and its size, the CRC-32C of every\n"
	       "slice's bytes, the index's virtual datasets, meta.bin. Each problem is a line on\n"
	       "stderr naming the step, the file and the tensor.\n"
	       "  -s, --step N            only checkpoint step-N\n"
	       "  --json, --format json   one JSON document on stdout (doc/ckpt-json.md)\n"
	       "  --progress              a progress line on stderr even when it is no terminal\n"
	       "  --no-progress           none, even on a terminal\n"
	       "Exit status: 0 every checkpoint checked is intact, 1 a problem was found\n"
	       "(or there is no complete checkpoint), 2 bad input.\n");
}

struct problem {
	char file[64];
	char tensor[LLMP_CKPT_MAX_NAME + 1];
	char *message;
};

/* One checkpoint being verified, and how progress is shown. */
struct run {
	uint64_t step;
	struct problem *problems;
	size_t nproblems, cap;
	bool out_of_memory;
	bool progress, tty;
	double last_shown;
	int shown; /* width of the progress line on the terminal, to clear it */
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Clear the progress line on a terminal, before another line goes to stderr. */
static void clear_progress(struct run *r)
{
	if (r->tty && r->shown) {
		fprintf(stderr, "\r%*s\r", r->shown, "");
		r->shown = 0;
	}
}

static void on_problem(void *arg, const char *file, const char *tensor, const char *msg)
{
	struct run *r = arg;
	clear_progress(r);
	fprintf(stderr, PROG ": step-%" PRIu64 ": %s\n", r->step, msg);
	if (r->nproblems == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 8;
		struct problem *grown = realloc(r->problems, cap * sizeof *grown);
		if (!grown) {
			r->out_of_memory = true;
			return;
		}
		r->problems = grown;
		r->cap = cap;
	}
	struct problem *p = &r->problems[r->nproblems];
	snprintf(p->file, sizeof p->file, "%s", file);
	snprintf(p->tensor, sizeof p->tensor, "%s", tensor ? tensor : "");
	if (!(p->message = strdup(msg)))
		r->out_of_memory = true;
	else
		r->nproblems++;
}

/* At most 10 lines a second on a terminal (redrawn), one a second elsewhere (appended). */
static void on_progress(void *arg, uint64_t done, uint64_t total, const char *file, const char *tensor)
{
	struct run *r = arg;
	double t = now();
	if (!r->progress || (done < total && t - r->last_shown < (r->tty ? 0.1 : 1.0)))
		return;
	r->last_shown = t;
	char d[32], all[32];
	int width = fprintf(stderr, "%sverifying step-%" PRIu64 ": %3.0f%% (%s of %s) %s %.60s",
			    r->tty ? "\r" : "", r->step, total ? 100.0 * (double)done / (double)total : 100.0,
			    cli_human_bytes(done, d, sizeof d), cli_human_bytes(total, all, sizeof all), file,
			    tensor);
	if (r->tty) {
		/* Pad over the end of a longer line drawn before. */
		if (width < r->shown)
			fprintf(stderr, "%*s", r->shown - width, "");
		r->shown = width > r->shown ? width : r->shown;
	} else {
		fputc('\n', stderr);
	}
	fflush(stderr);
}

static void free_problems(struct run *r)
{
	for (size_t i = 0; i < r->nproblems; i++)
		free(r->problems[i].message);
	free(r->problems);
	r->problems = NULL;
	r->nproblems = r->cap = 0;
}

static void json_checkpoint(struct json_writer *w, const struct run *r, const struct ck_verify_totals *t)
{
	char name[64];
	snprintf(name, sizeof name, "step-%" PRIu64, r->step);
	json_object(w, NULL);
	json_string(w, "name", name);
	json_uint(w, "step", r->step);
	json_bool(w, "ok", t->problems == 0);
	json_uint(w, "tensors", t->tensors);
	json_uint(w, "slices", t->slices);
	json_uint(w, "shards", t->shards);
	json_uint(w, "bytes_checked", t->bytes);
	json_array(w, "problems");
	for (size_t i = 0; i < r->nproblems; i++) {
		json_object(w, NULL);
		json_string(w, "file", r->problems[i].file);
		json_string(w, "tensor", r->problems[i].tensor[0] ? r->problems[i].tensor : NULL);
		json_string(w, "message", r->problems[i].message);
		json_object_end(w);
	}
	json_array_end(w);
	json_object_end(w);
}

static void text_checkpoint(const struct run *r, const struct ck_verify_totals *t)
{
	char bytes[32];
	if (t->problems == 0)
		printf("step-%" PRIu64 ": OK: %zu tensors, %zu slices in %zu shard%s, %s checked\n", r->step,
		       t->tensors, t->slices, t->shards, t->shards == 1 ? "" : "s",
		       cli_human_bytes(t->bytes, bytes, sizeof bytes));
	else
		printf("step-%" PRIu64 ": DAMAGED: %u problem%s (listed on stderr)\n", r->step, t->problems,
		       t->problems == 1 ? "" : "s");
}

/* Verify one step; false if it has a problem (or could not be checked). */
static bool verify_one(const struct ckpt_root *root, const struct ckpt_args *a, struct run *r,
		       struct json_writer *w)
{
	char dir[4200], msg[LLMP_MSG_MAX];
	struct ck_verify_hooks hooks = { .problem = on_problem, .progress = on_progress, .arg = r };
	struct ck_verify_totals totals;
	ckpt_step_dir(root, r->step, dir, sizeof dir);
	r->last_shown = 0;
	llmp_status st = ck_verify_step(dir, r->step, &hooks, &totals, msg, sizeof msg);
	clear_progress(r);
	if (st == LLMP_ERR_NOMEM || r->out_of_memory) {
		fprintf(stderr, PROG ": step-%" PRIu64 ": %s\n", r->step,
			st == LLMP_ERR_NOMEM ? msg : "out of memory");
		totals.problems += totals.problems == 0;
	}
	if (a->json)
		json_checkpoint(w, r, &totals);
	else
		text_checkpoint(r, &totals);
	free_problems(r);
	return totals.problems == 0;
}

int cli_ckpt_verify(int argc, char **argv)
{
	struct ckpt_args a;
	struct ckpt_root root;
	uint64_t step;
	int rc = ckpt_parse_args(PROG, argc, argv, CKPT_OPT_STEP | CKPT_OPT_PROGRESS, help, &a);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if ((rc = ckpt_root_open(PROG, a.dir, &root)) != CLI_EXIT_OK)
		return rc;
	if ((rc = ckpt_root_pick(PROG, &root, &a, &step)) != CLI_EXIT_OK) {
		ckpt_root_close(&root);
		return rc;
	}
	struct run r = { .tty = isatty(STDERR_FILENO) == 1 };
	r.progress = a.progress < 0 ? r.tty : a.progress == 1;
	struct json_writer w;
	size_t checked = 0, damaged = 0;
	if (a.json) {
		json_begin(&w, stdout);
		json_object(&w, NULL);
		json_string(&w, "root", root.path);
		json_array(&w, "checkpoints");
	}
	for (size_t i = 0; i < root.n; i++) {
		const struct ck_entry *e = &root.entries[i];
		if (e->kind != CK_ENTRY_COMPLETE || (a.has_step && e->step != step))
			continue;
		r.step = e->step;
		checked++;
		damaged += !verify_one(&root, &a, &r, &w);
		fflush(stdout);
	}
	if (a.json) {
		json_array_end(&w);
		json_bool(&w, "ok", damaged == 0);
		json_object_end(&w);
		json_end(&w);
	} else if (checked > 1) {
		printf("%zu checkpoints verified: %zu intact, %zu damaged\n", checked, checked - damaged,
		       damaged);
	}
	ckpt_root_close(&root);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PROG ": writing the output failed: %s\n", strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	return damaged ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

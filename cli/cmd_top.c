/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_top.c - `llmp top DIR`: a job's metrics files (LLMP_METRICS=DIR,
 * doc/metrics-json.md) summed up: per group kind, bandwidth and the share
 * of time spent in its calls and waiting in them; per rank, step times;
 * and the stragglers, named.
 *
 * Each rank's newest record holds totals since its job opened. Over UCX a
 * rank blames the direct peer it waited for, which may itself be waiting
 * for the slow one; so a straggler's score is the time others waited for
 * it less the time it waited itself: a rank in the middle of a chain
 * scores about nothing, the slow one the whole of its delay.
 */
#define _POSIX_C_SOURCE 200809L

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_writer.h"
#include "llmp_cli.h"
#include "runtime/job/metrics_read.h"

#define PROG "llmp top"
#define MAX_GROUPS 32
#define MAX_STRAGGLERS 5

struct group_sum {
	char name[32];
	uint32_t ranks;
	uint64_t ops, bytes_sent, bytes_received;
	double seconds, wait_s, span_s; /* span: the ranks' step time, summed */
};

struct top {
	const char *dir;
	struct job_metrics_file *files;
	size_t nfiles;
	struct group_sum groups[MAX_GROUPS];
	size_t ngroups;
	struct job_metrics_blame *blame;       /* by world rank (metrics_read.h) */
	const struct job_metrics_record **rec; /* by world rank: its newest record */
	uint32_t world;
	uint32_t order[MAX_STRAGGLERS];
	size_t nstragglers;
	double newest;
};

static void help(void)
{
	printf("usage: llmp top DIR [--format text|json]\n\n"
	       "Sum up the metrics a job writes with LLMP_METRICS=DIR (doc/metrics-json.md): per group\n"
	       "kind, bytes sent per second per rank and the share of the step time spent in its calls\n"
	       "and waiting in them; per rank, step times; the stragglers: the ranks others waited for\n"
	       "most, less what they waited themselves. Reads the files only: it runs anywhere they\n"
	       "can be read, while the job runs or after it.\n"
	       "Exit status: 0 success, 1 no readable metrics, 2 bad input.\n");
}

static struct group_sum *group_of(struct top *t, const char *name)
{
	for (size_t i = 0; i < t->ngroups; i++)
		if (strcmp(t->groups[i].name, name) == 0)
			return &t->groups[i];
	if (t->ngroups == MAX_GROUPS)
		return NULL;
	struct group_sum *g = &t->groups[t->ngroups++];
	memset(g, 0, sizeof *g);
	snprintf(g->name, sizeof g->name, "%s", name);
	return g;
}

static int sum_up(struct top *t)
{
	for (size_t i = 0; i < t->nfiles; i++) {
		const struct job_metrics_record *r = &t->files[i].last;
		if (r->world > t->world)
			t->world = r->world;
		if (r->rank >= t->world)
			t->world = r->rank + 1;
		if (r->time > t->newest)
			t->newest = r->time;
	}
	t->blame = calloc(t->world ? t->world : 1, sizeof *t->blame);
	t->rec = calloc(t->world ? t->world : 1, sizeof *t->rec);
	if (!t->blame || !t->rec)
		return -1;
	for (size_t i = 0; i < t->nfiles; i++) {
		const struct job_metrics_record *r = &t->files[i].last;
		t->rec[r->rank] = r;
		job_metrics_add_blame(r, t->blame, t->world);
		for (size_t k = 0; k < r->ncomms; k++) {
			const struct job_metrics_comm *c = &r->comms[k];
			struct group_sum *g = group_of(t, c->group);
			if (g) {
				g->ranks++;
				g->ops += c->ops;
				g->bytes_sent += c->bytes_sent;
				g->bytes_received += c->bytes_received;
				g->seconds += c->seconds;
				g->wait_s += c->wait_s;
				g->span_s += r->step_s;
			}
		}
	}
	/* The stragglers: a positive score, best first (selection: MAX_STRAGGLERS passes). */
	while (t->nstragglers < MAX_STRAGGLERS) {
		uint32_t best = UINT32_MAX;
		for (uint32_t w = 0; w < t->world; w++) {
			bool taken = false;
			for (size_t i = 0; i < t->nstragglers; i++)
				taken |= t->order[i] == w;
			if (!taken && t->blame[w].times && job_metrics_score(&t->blame[w]) > 0 &&
			    (best == UINT32_MAX ||
			     job_metrics_score(&t->blame[w]) > job_metrics_score(&t->blame[best])))
				best = w;
		}
		if (best == UINT32_MAX)
			break;
		t->order[t->nstragglers++] = best;
	}
	return 0;
}

static double share(double part, double whole)
{
	return whole > 0 ? part / whole : 0;
}

static void write_text(const struct top *t, FILE *out)
{
	char a[32], b[32];
	const struct job_metrics_record *any = &t->files[0].last;
	fprintf(out, "%s: %zu ranks of %u, layout %s\n\n", t->dir, t->nfiles, t->world, any->layout);
	fprintf(out, "%-20s %6s %10s %12s %14s %9s %9s\n", "group", "ranks", "ops/rank", "sent/rank",
		"sent/s/rank", "in calls", "waiting");
	for (size_t i = 0; i < t->ngroups; i++) {
		const struct group_sum *g = &t->groups[i];
		cli_human_bytes(g->bytes_sent / (g->ranks ? g->ranks : 1), a, sizeof a);
		cli_human_bytes(g->span_s > 0 ? (uint64_t)(g->bytes_sent / g->span_s) : 0, b, sizeof b);
		fprintf(out, "%-20s %6u %10llu %12s %12s/s %8.1f%% %8.1f%%\n", g->name, g->ranks,
			(unsigned long long)(g->ops / (g->ranks ? g->ranks : 1)), a, b,
			100 * share(g->seconds, g->span_s), 100 * share(g->wait_s, g->span_s));
	}
	fprintf(out, "\n%-6s %-16s %7s %11s %11s %11s %9s %9s %11s\n", "rank", "host", "steps", "step mean",
		"step last", "step max", "in calls", "waiting", "ckpt stall");
	for (size_t i = 0; i < t->nfiles; i++) {
		const struct job_metrics_record *r = &t->files[i].last;
		double calls = 0, wait = 0;
		for (size_t k = 0; k < r->ncomms; k++) {
			calls += r->comms[k].seconds;
			wait += r->comms[k].wait_s;
		}
		fprintf(out, "%-6u %-16.16s %7llu %9.2fms %9.2fms %9.2fms %8.1f%% %8.1f%% %10.3fs%s\n",
			r->rank, r->host, (unsigned long long)r->steps,
			1e3 * share(r->step_s, (double)r->steps), 1e3 * r->step_last_s, 1e3 * r->step_max_s,
			100 * share(calls, r->step_s), 100 * share(wait, r->step_s), r->ckpt_stall_s,
			r->final ? "" : " (running)");
	}
	fprintf(out, "\nstragglers:%s\n", t->nstragglers ? "" : " none (no rank kept the others waiting)");
	for (size_t i = 0; i < t->nstragglers; i++) {
		const struct job_metrics_blame *s = &t->blame[t->order[i]];
		const struct job_metrics_record *rec = t->rec[t->order[i]];
		fprintf(out,
			"  rank %u%s%s%s: last in %llu calls; its groups waited %.3f s for it, it waited %.3f s\n",
			t->order[i], rec ? " (" : "", rec ? rec->host : "", rec ? ")" : "",
			(unsigned long long)s->times, s->others_s, s->own_s);
	}
}

static bool write_json(const struct top *t, FILE *out)
{
	struct json_writer w;
	json_begin(&w, out);
	json_object(&w, NULL);
	json_string(&w, "dir", t->dir);
	json_uint(&w, "world", t->world);
	json_uint(&w, "ranks", t->nfiles);
	json_string(&w, "layout", t->files[0].last.layout);
	json_array(&w, "groups");
	for (size_t i = 0; i < t->ngroups; i++) {
		const struct group_sum *g = &t->groups[i];
		json_object(&w, NULL);
		json_string(&w, "group", g->name);
		json_uint(&w, "ranks", g->ranks);
		json_uint(&w, "ops", g->ops);
		json_uint(&w, "bytes_sent", g->bytes_sent);
		json_uint(&w, "bytes_received", g->bytes_received);
		json_double(&w, "bytes_sent_per_s_per_rank", share((double)g->bytes_sent, g->span_s));
		json_double(&w, "time_share", share(g->seconds, g->span_s));
		json_double(&w, "wait_share", share(g->wait_s, g->span_s));
		json_object_end(&w);
	}
	json_array_end(&w);
	json_array(&w, "ranks_detail");
	for (size_t i = 0; i < t->nfiles; i++) {
		const struct job_metrics_file *f = &t->files[i];
		const struct job_metrics_record *r = &f->last;
		double calls = 0, wait = 0;
		for (size_t k = 0; k < r->ncomms; k++) {
			calls += r->comms[k].seconds;
			wait += r->comms[k].wait_s;
		}
		json_object(&w, NULL);
		json_uint(&w, "rank", r->rank);
		json_string(&w, "host", r->host);
		json_uint(&w, "steps", r->steps);
		json_double(&w, "step_mean_s", share(r->step_s, (double)r->steps));
		json_double(&w, "step_last_s", r->step_last_s);
		json_double(&w, "step_max_s", r->step_max_s);
		json_double(&w, "calls_share", share(calls, r->step_s));
		json_double(&w, "wait_share", share(wait, r->step_s));
		json_double(&w, "ckpt_stall_s", r->ckpt_stall_s);
		json_bool(&w, "final", r->final);
		json_uint(&w, "records", f->records);
		json_bool(&w, "partial_line_skipped", f->partial);
		json_object_end(&w);
	}
	json_array_end(&w);
	json_array(&w, "stragglers");
	for (size_t i = 0; i < t->nstragglers; i++) {
		const struct job_metrics_blame *s = &t->blame[t->order[i]];
		json_object(&w, NULL);
		json_uint(&w, "rank", t->order[i]);
		json_uint(&w, "last_times", s->times);
		json_double(&w, "others_waited_s", s->others_s);
		json_double(&w, "own_wait_s", s->own_s);
		json_object_end(&w);
	}
	json_array_end(&w);
	json_object_end(&w);
	return json_end(&w);
}

int cli_top(int argc, char **argv)
{
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:h", options, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "json") == 0)
				json = true;
			else if (strcmp(optarg, "text") != 0)
				return cli_usage_error(PROG, "--format: not text or json:", optarg);
			break;
		case 'h': help(); return CLI_EXIT_OK;
		case ':': return cli_usage_error(PROG, "needs a value:", cli_culprit(argv));
		default: return cli_usage_error(PROG, "unknown option", cli_culprit(argv));
		}
	}
	struct top t = { .dir = cli_one_dir(PROG, argc, argv) };
	if (!t.dir)
		return CLI_EXIT_USAGE;
	char **names;
	size_t n;
	if (job_metrics_list(t.dir, &names, &n) != 0) {
		fprintf(stderr, PROG ": %s: cannot read the directory\n", cli_printable(t.dir));
		return CLI_EXIT_FAILURE;
	}
	t.files = calloc(n ? n : 1, sizeof *t.files);
	int rc = t.files ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
	for (size_t i = 0; t.files && i < n; i++) {
		char path[4096], msg[512];
		snprintf(path, sizeof path, "%s/%s", t.dir, names[i]);
		if (job_metrics_read_file(path, &t.files[t.nfiles], msg, sizeof msg) != 0)
			fprintf(stderr, PROG ": %s: %s; file left out\n", cli_printable(path), msg);
		else if (t.files[t.nfiles].records)
			t.nfiles++;
	}
	if (rc == CLI_EXIT_OK && t.nfiles == 0) {
		fprintf(stderr,
			PROG ": %s: no metrics records in rank-*.jsonl (LLMP_METRICS=DIR writes them)\n",
			cli_printable(t.dir));
		rc = CLI_EXIT_FAILURE;
	}
	if (rc == CLI_EXIT_OK && sum_up(&t) != 0) {
		fprintf(stderr, PROG ": out of memory\n");
		rc = CLI_EXIT_FAILURE;
	}
	if (rc == CLI_EXIT_OK) {
		if (json)
			rc = write_json(&t, stdout) ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
		else
			write_text(&t, stdout);
	}
	job_metrics_list_free(names, n);
	free(t.files);
	free(t.blame);
	free(t.rec);
	return rc;
}

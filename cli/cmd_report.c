/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_report.c - `llmp report DIR [-o FILE]`: a job's metrics files
 * (LLMP_METRICS=DIR, doc/metrics-json.md) as one HTML page with three
 * pictures drawn in inline SVG, for an admin after the fact or while the
 * job runs: each group kind's traffic over time, each rank's step time, and
 * the stragglers as a heat map over the grid (the score of llmp top: how
 * long the others waited for a rank, less what it waited itself).
 *
 * The page needs nothing but a browser: no script, no file beside it. It
 * is also well-formed XML (void elements closed, the XHTML namespace), so
 * a browser's XML parser, stricter than its HTML one, reads it without an
 * error (tests/metrics.bats). It is written beside FILE and renamed, so a
 * reader never sees half a page.
 */
#define _POSIX_C_SOURCE 200809L

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llmp_cli.h"
#include "runtime/job/metrics_read.h"
#include "report_fr.h"

#define PROG "llmp report"
#define MAX_GROUPS 24
#define SAMPLES 120
#define W 720 /* a picture's width and height, in SVG units */
#define H 300

static const char *const palette[] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
				       "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" };

struct rank_series {
	struct job_metrics_record *recs; /* oldest first */
	size_t n;
};

struct report {
	struct rank_series *ranks; /* by world rank; n 0 when the rank wrote nothing */
	uint32_t world;
	char groups[MAX_GROUPS][32];
	size_t ngroups;
	double t0, t1; /* first and last record times */
	struct job_metrics_blame *blame;
};

static void help(void)
{
	printf("usage: llmp report DIR [-o FILE]\n\n"
	       "Draw the metrics a job writes with LLMP_METRICS=DIR (doc/metrics-json.md) as one HTML\n"
	       "page (default DIR/report.html): each group kind's bytes over time, each rank's step\n"
	       "time, and the stragglers as a heat map over the grid. Reads the files only.\n"
	       "PyTorch's flight recorder dumps in DIR/fr are named with llmp's groups and each\n"
	       "rank's coordinates by $LLMP_PYTHON -m llmp.fr (default python3).\n"
	       "Exit status: 0 success, 1 no readable metrics, unreadable dumps or a write error,\n"
	       "2 bad input.\n");
}

/* Text from the files, safe inside HTML and SVG. */
static void put_text(FILE *out, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc((unsigned char)*s >= 0x20 ? *s : '?', out);
		}
}

static int group_index(struct report *r, const char *name)
{
	for (size_t i = 0; i < r->ngroups; i++)
		if (strcmp(r->groups[i], name) == 0)
			return (int)i;
	if (r->ngroups == MAX_GROUPS)
		return -1;
	snprintf(r->groups[r->ngroups], sizeof r->groups[0], "%s", name);
	return (int)r->ngroups++;
}

/* A rank's bytes sent on a group at time t: its newest record at or before t. */
static double bytes_at(const struct rank_series *s, const char *group, double t)
{
	const struct job_metrics_record *at = NULL;
	for (size_t i = 0; i < s->n && s->recs[i].time <= t; i++)
		at = &s->recs[i];
	for (size_t k = 0; at && k < at->ncomms; k++)
		if (strcmp(at->comms[k].group, group) == 0)
			return (double)at->comms[k].bytes_sent;
	return 0;
}

/* "1.5 G", for axis labels. */
static const char *human(double v, char *buf, size_t len)
{
	static const char *const units[] = { "", " k", " M", " G", " T", " P" };
	size_t u = 0;
	while (fabs(v) >= 1000 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1000;
		u++;
	}
	snprintf(buf, len, "%.3g%s", v, units[u]);
	return buf;
}

static void axes(FILE *out, const char *x_label, double x_max, const char *y_label, double y_max)
{
	char a[32], b[32];
	fprintf(out,
		"<line x1=\"60\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>"
		"<line x1=\"60\" y1=\"20\" x2=\"60\" y2=\"%d\" stroke=\"#333\"/>\n"
		"<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>"
		"<text x=\"64\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n"
		"<text x=\"56\" y=\"24\" text-anchor=\"end\">%s</text><text x=\"56\" y=\"%d\" "
		"text-anchor=\"end\">0</text><text x=\"64\" y=\"14\">%s</text>\n",
		H - 40, W - 20, H - 40, H - 40, W - 20, H - 8, x_label, H - 26, W - 20, H - 26,
		human(x_max, a, sizeof a), human(y_max, b, sizeof b), H - 40, y_label);
}

/* Bytes sent per group kind, summed over the ranks, over the job's time. */
static void traffic_plot(FILE *out, const struct report *r)
{
	double span = r->t1 > r->t0 ? r->t1 - r->t0 : 1, top = 0;
	static double sums[MAX_GROUPS][SAMPLES];
	for (size_t g = 0; g < r->ngroups; g++)
		for (int s = 0; s < SAMPLES; s++) {
			double t = r->t0 + span * s / (SAMPLES - 1), sum = 0;
			for (uint32_t k = 0; k < r->world; k++)
				sum += bytes_at(&r->ranks[k], r->groups[g], t);
			sums[g][s] = sum;
			top = sum > top ? sum : top;
		}
	top = top > 0 ? top : 1;
	fprintf(out,
		"<h2>Traffic per group kind</h2>\n<p>Bytes sent by all ranks on each kind of group, "
		"since the job opened.</p>\n<svg class=\"traffic\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n",
		W, H, W, H);
	axes(out, "seconds", span, "bytes", top);
	for (size_t g = 0; g < r->ngroups; g++) {
		const char *color = palette[g % (sizeof palette / sizeof palette[0])];
		fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
		for (int s = 0; s < SAMPLES; s++)
			fprintf(out, "%.1f,%.1f ", 60 + (W - 80) * (double)s / (SAMPLES - 1),
				(H - 40) - (H - 60) * sums[g][s] / top);
		fprintf(out, "\"><title>");
		put_text(out, r->groups[g]);
		fprintf(out, "</title></polyline>\n<text x=\"%d\" y=\"%zu\" fill=\"%s\">", W - 150,
			30 + 14 * g, color);
		put_text(out, r->groups[g]);
		fprintf(out, "</text>\n");
	}
	fprintf(out, "</svg>\n");
}

/* Each rank's mean step time as a bar, its longest step as a tick. */
static void step_plot(FILE *out, const struct report *r)
{
	double top = 0;
	for (uint32_t k = 0; k < r->world; k++)
		if (r->ranks[k].n) {
			const struct job_metrics_record *last = &r->ranks[k].recs[r->ranks[k].n - 1];
			top = last->step_max_s > top ? last->step_max_s : top;
		}
	top = top > 0 ? top : 1;
	fprintf(out,
		"<h2>Step time per rank</h2>\n<p>Bars: the mean step; ticks: the longest.</p>\n"
		"<svg class=\"steps\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n",
		W, H, W, H);
	axes(out, "rank", r->world ? r->world - 1 : 0, "seconds", top);
	double width = (double)(W - 80) / (r->world ? r->world : 1);
	for (uint32_t k = 0; k < r->world; k++) {
		if (!r->ranks[k].n)
			continue;
		const struct job_metrics_record *last = &r->ranks[k].recs[r->ranks[k].n - 1];
		double mean = last->steps ? last->step_s / (double)last->steps : 0;
		double x = 60 + width * k, h = (H - 60) * mean / top, y = (H - 40) - h;
		fprintf(out,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#1f77b4\"><title>rank %u: "
			"%.3f ms a step, %llu steps</title></rect>\n",
			x + 0.1 * width, y, 0.8 * width, h, k, 1e3 * mean, (unsigned long long)last->steps);
		double ty = (H - 40) - (H - 60) * last->step_max_s / top;
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\"/>\n",
			x + 0.1 * width, ty, x + 0.9 * width, ty);
	}
	fprintf(out, "</svg>\n");
}

/* The stragglers' scores over the grid: columns tp within cp, rows dp within pp. */
static void straggler_map(FILE *out, const struct report *r)
{
	uint32_t size[5] = { 1, 1, 1, 1, 1 }, worst = UINT32_MAX;
	double top = 0;
	bool coords = true;
	for (uint32_t k = 0; k < r->world; k++) {
		if (!r->ranks[k].n) {
			coords = false;
			continue;
		}
		const struct job_metrics_record *last = &r->ranks[k].recs[r->ranks[k].n - 1];
		coords &= last->has_coords;
		for (int a = 0; a < 5 && last->has_coords; a++)
			size[a] = last->coords[a] + 1 > size[a] ? last->coords[a] + 1 : size[a];
		double s = job_metrics_score(&r->blame[k]);
		if (r->blame[k].times && s > top) {
			top = s;
			worst = k;
		}
	}
	fprintf(out, "<h2>Stragglers over the grid</h2>\n<p>");
	if (worst != UINT32_MAX)
		fprintf(out,
			"The others waited longest for <b>rank %u</b>: %.3f s more than it waited itself. ",
			worst, top);
	else
		fprintf(out, "No rank kept the others waiting. ");
	fprintf(out, "Red: the time others waited for a rank, less what it waited (as <code>llmp top</code> "
		     "scores it); columns: tp within cp, rows: dp within pp.</p>\n");
	uint32_t cols = size[0] * size[1], rows = size[3] * size[4];
	if (!coords || (uint64_t)cols * rows * size[2] < r->world) {
		fprintf(out, "<p>(The records carry no grid coordinates: the ranks in a row instead.)</p>\n");
		cols = r->world;
		rows = 1;
	}
	double cw = (double)(W - 80) / (cols ? cols : 1), ch = rows ? (double)(H - 60) / rows : H - 60;
	fprintf(out,
		"<svg class=\"stragglers\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n",
		W, H, W, H);
	/* Which tp and cp each column is, which dp and pp each row (not when ranks stand in a row). */
	for (uint32_t x = 0; rows > 1 && x < cols && cols <= 64; x++)
		fprintf(out, "<text x=\"%.1f\" y=\"14\" text-anchor=\"middle\">tp %u cp %u</text>\n",
			60 + cw * (x + 0.5), x % size[0], x / size[0]);
	for (uint32_t y = 0; rows > 1 && y < rows && rows <= 64; y++)
		fprintf(out, "<text x=\"56\" y=\"%.1f\" text-anchor=\"end\">dp %u pp %u</text>\n",
			24 + ch * (y + 0.5), y % size[3], y / size[3]);
	for (uint32_t k = 0; k < r->world; k++) {
		uint32_t col = k, row = 0;
		if (rows > 1 || cols != r->world) {
			const uint32_t *c = r->ranks[k].recs[r->ranks[k].n - 1].coords;
			col = c[0] + size[0] * c[1];
			row = c[3] + size[3] * c[4];
		}
		double s = job_metrics_score(&r->blame[k]), heat = top > 0 && s > 0 ? s / top : 0;
		int shade = (int)lround(255 * (1 - heat));
		fprintf(out,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"rgb(255,%d,%d)\" "
			"stroke=\"#999\"><title>rank %u: others waited %.3f s for it, it waited %.3f s</title></rect>"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%u</text>\n",
			60 + cw * col, 20 + ch * row, cw, ch, shade, shade, k, r->blame[k].others_s,
			r->blame[k].own_s, 60 + cw * (col + 0.5), 24 + ch * (row + 0.5), k);
	}
	fprintf(out, "</svg>\n");
}

static int write_page(FILE *out, const struct report *r, const char *dir, const char *tmp, int *fr)
{
	const struct job_metrics_record *any = NULL;
	size_t records = 0;
	for (uint32_t k = 0; k < r->world; k++) {
		records += r->ranks[k].n;
		if (!any && r->ranks[k].n)
			any = &r->ranks[k].recs[r->ranks[k].n - 1];
	}
	fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\" xmlns=\"http://www.w3.org/1999/xhtml\"><head><meta "
		     "charset=\"utf-8\"/>\n<title>llmp report: ");
	put_text(out, dir);
	fprintf(out, "</title>\n<style>body{font-family:sans-serif;max-width:760px;margin:2em auto}"
		     "svg{border:1px solid #ddd}</style></head><body>\n<h1>llmp report</h1>\n<p>");
	put_text(out, dir);
	fprintf(out, ": %u ranks, %zu records over %.1f s; layout <code>", r->world, records, r->t1 - r->t0);
	put_text(out, any ? any->layout : "");
	fprintf(out, "</code></p>\n");
	traffic_plot(out, r);
	step_plot(out, r);
	straggler_map(out, r);
	*fr = cli_report_flight_recorder(out, dir, any ? any->layout : "", r->world, tmp);
	fprintf(out, "</body></html>\n");
	return ferror(out) ? -1 : 0;
}

/* Every rank's series; 0 when some rank has records. */
static int read_all(struct report *r, const char *dir)
{
	char **names;
	size_t n;
	if (job_metrics_list(dir, &names, &n) != 0) {
		fprintf(stderr, PROG ": %s: cannot read the directory\n", cli_printable(dir));
		return -1;
	}
	struct rank_series *got = calloc(n ? n : 1, sizeof *got);
	uint32_t *ranks = calloc(n ? n : 1, sizeof *ranks);
	size_t ok = 0;
	r->t0 = INFINITY;
	for (size_t i = 0; got && ranks && i < n; i++) {
		char path[4096], msg[512];
		bool partial;
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (job_metrics_read_series(path, &got[ok].recs, &got[ok].n, &partial, msg, sizeof msg) !=
		    0) {
			fprintf(stderr, PROG ": %s: %s; file left out\n", cli_printable(path), msg);
			continue;
		}
		if (!got[ok].n)
			continue;
		const struct job_metrics_record *first = &got[ok].recs[0],
						*last = &got[ok].recs[got[ok].n - 1];
		ranks[ok] = last->rank;
		r->world = last->world > r->world ? last->world : r->world;
		r->world = last->rank + 1 > r->world ? last->rank + 1 : r->world;
		r->t0 = first->time < r->t0 ? first->time : r->t0;
		r->t1 = last->time > r->t1 ? last->time : r->t1;
		ok++;
	}
	job_metrics_list_free(names, n);
	r->ranks = calloc(r->world ? r->world : 1, sizeof *r->ranks);
	r->blame = calloc(r->world ? r->world : 1, sizeof *r->blame);
	int rc = got && ranks && r->ranks && r->blame ? 0 : -1;
	for (size_t i = 0; i < ok; i++) {
		if (rc == 0 && !r->ranks[ranks[i]].n) {
			r->ranks[ranks[i]] = got[i];
			struct job_metrics_record *last = &got[i].recs[got[i].n - 1];
			job_metrics_add_blame(last, r->blame, r->world);
			for (size_t k = 0; k < last->ncomms; k++)
				group_index(r, last->comms[k].group);
		} else {
			free(got[i].recs); /* a second file for one rank: the first is kept */
		}
	}
	free(got);
	free(ranks);
	if (rc != 0)
		fprintf(stderr, PROG ": out of memory\n");
	else if (ok == 0) {
		fprintf(stderr,
			PROG ": %s: no metrics records in rank-*.jsonl (LLMP_METRICS=DIR writes them)\n",
			cli_printable(dir));
		rc = -1;
	}
	return rc;
}

int cli_report(int argc, char **argv)
{
	static const struct option options[] = { { "output", required_argument, NULL, 'o' },
						 { "help", no_argument, NULL, 'h' },
						 { NULL, 0, NULL, 0 } };
	const char *output = NULL;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:h", options, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'h': help(); return CLI_EXIT_OK;
		case ':': return cli_usage_error(PROG, "needs a value:", cli_culprit(argv));
		default: return cli_usage_error(PROG, "unknown option", cli_culprit(argv));
		}
	}
	const char *dir = cli_one_dir(PROG, argc, argv);
	if (!dir)
		return CLI_EXIT_USAGE;
	char path[4096], tmp[4200];
	if (output)
		snprintf(path, sizeof path, "%s", output);
	else
		snprintf(path, sizeof path, "%s/report.html", dir);
	struct report r = { 0 };
	int rc = read_all(&r, dir) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
	if (rc == CLI_EXIT_OK) {
		snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
		FILE *out = fopen(tmp, "w");
		int fr = 0;
		bool good = out && write_page(out, &r, dir, tmp, &fr) == 0;
		good = out && fclose(out) == 0 && good;
		if (!good || rename(tmp, path) != 0) {
			fprintf(stderr, PROG ": cannot write %s\n", cli_printable(path));
			unlink(tmp);
			rc = CLI_EXIT_FAILURE;
		} else {
			printf("%s\n", path);
			rc = fr == 0 ? CLI_EXIT_OK
				     : CLI_EXIT_FAILURE; /* a page, less the dumps it could not read */
		}
	}
	for (uint32_t k = 0; r.ranks && k < r.world; k++)
		free(r.ranks[k].recs);
	free(r.ranks);
	free(r.blame);
	return rc;
}

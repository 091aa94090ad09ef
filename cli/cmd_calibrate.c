/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_calibrate.c - `llmp calibrate RUNS...`: a site's own step-model
 * constants from the runs it recorded (doc/step-model.md, "Calibrating from
 * the site's runs").
 *
 * A run is one JSON line: the model and GPU texts the job was planned with,
 * the layout and world it ran, its mean step seconds and, when known, its
 * peak GPU memory per rank. Per GPU text the command fits the efficiency
 * (the median over the runs of the one that gives each its measured step),
 * the per-layer overhead (on a pair of runs of one layout at two
 * micro-batch sizes), the in-domain link rate (on a pair at two
 * tensor-parallel sizes inside the NVLink domain), all fitted in turn until
 * they settle, the allowance's share of the memory (least squares over the
 * measured peaks) and the band of the memory error left (the guard's
 * guard_band=, planner/mem_guard.h). It prints what changed and by how
 * much, and writes the plugstack arguments that carry them
 * (gpu=TEXT,eff=,layer-ms=,nvlink=,alloc= guard_band=), which llmp plan
 * --gpu, --llm-parallel=auto and the guard read as they are.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <llmp/llmp_spec.h>
#include "common/json_read.h"
#include "llmp_cli.h"
#include "planner/mem_guard.h"
#include "planner/step_model.h"
#include "runtime/job/metrics_read.h"

#define PROG "llmp calibrate"
#define MAX_RUNS 1024
#define FIT_ROUNDS 200
#define GIB_BYTES (1024.0 * 1024 * 1024)

struct run {
	char where[300]; /* FILE:LINE, for messages */
	char gpu_text[128];
	struct model_desc m;
	struct gpu_desc g;
	struct step_layout l;
	uint32_t world;
	double step_s, peak_bytes; /* peak 0: not recorded */
};

static void help(void)
{
	printf("usage: llmp calibrate [-o FILE] [--model MODEL] [--gpu GPU] RUNS...\n\n"
	       "Fit the step model's constants to a site's own recorded runs, per GPU text: the\n"
	       "efficiency, the per-layer overhead (from two runs of one layout at two micro-batch\n"
	       "sizes), the NVLink rate (from two at two tp sizes inside a node), the memory\n"
	       "allowance's share and the memory error band left. RUNS are files\n"
	       "of JSON lines, one run each:\n"
	       "  {\"model\": \"llama3-8b,gbs=128\", \"gpu\": \"h100\", \"layout\": \"tp=2,pp=2\", \"world\": 16,\n"
	       "   \"step_s\": 3.21, \"peak_gib\": 61.5}\n"
	       "(model and gpu as llmp plan takes them, mbs= and recompute= in the model; peak_gib\n"
	       "optional). A RUNS directory is a job's LLMP_METRICS=DIR: one run, from rank 0's newest\n"
	       "record (layout, world, step_s / steps; model and gpu when it has them, else --model and\n"
	       "--gpu) and the largest peak_gib of every rank's newest record. Prints what changed and by how much; -o writes the plugstack arguments\n"
	       "(gpu=...,eff=...,layer-ms=...,nvlink=...,alloc=... guard_band=...) for llm_parallel.so,\n"
	       "llmp plan --gpu and LLMP_GPU. See doc/step-model.md.\n"
	       "Exit status: 0 success, 1 a file could not be read or written, 2 bad input.\n");
}

static int bad_run(const char *where, const char *what)
{
	fprintf(stderr, PROG ": %s: %s\n", where, what);
	return CLI_EXIT_USAGE;
}

/* A string member, or NULL. */
static const char *string_of(const struct json_value *o, const char *key)
{
	const struct json_value *v = json_get(o, key);
	return v && v->kind == JSON_STRING ? v->string : NULL;
}

static int number_of(const struct json_value *o, const char *key, double *out)
{
	const struct json_value *v = json_get(o, key);
	if (!v || v->kind != JSON_NUMBER || !(v->number > 0) || !isfinite(v->number))
		return -1;
	*out = v->number;
	return 0;
}

/* One line into r: every field checked, the layout against Megatron's rules for the model. */
static int parse_run(const char *text, size_t len, struct run *r)
{
	struct json_value o;
	char msg[LLMP_MSG_MAX], why[LLMP_MSG_MAX + 64];
	if (json_parse(text, len, &o, msg, sizeof msg) != LLMP_OK)
		return bad_run(r->where, msg);
	int rc = CLI_EXIT_USAGE;
	const char *model = string_of(&o, "model"), *gpu = string_of(&o, "gpu"),
		   *layout = string_of(&o, "layout");
	double world = 0, peak_gib = 0;
	llmp_spec spec;
	if (o.kind != JSON_OBJECT)
		bad_run(r->where, "expected a JSON object a line");
	else if (!model || !gpu || !layout)
		bad_run(r->where, "needs \"model\", \"gpu\" and \"layout\" as strings");
	else if (number_of(&o, "world", &world) < 0 || world != floor(world) || world > UINT32_MAX)
		bad_run(r->where, "needs \"world\": the job's ranks, a whole number");
	else if (number_of(&o, "step_s", &r->step_s) < 0)
		bad_run(r->where, "needs \"step_s\": the mean seconds of a step, above 0");
	else if (json_get(&o, "peak_gib") && number_of(&o, "peak_gib", &peak_gib) < 0)
		bad_run(r->where, "\"peak_gib\" must be the peak GiB of a rank, above 0");
	else if (strlen(gpu) >= sizeof r->gpu_text)
		bad_run(r->where, "\"gpu\" is longer than 127 bytes");
	else if (model_desc_parse(model, &r->m, msg, sizeof msg) != LLMP_OK ||
		 gpu_desc_parse(gpu, &r->g, msg, sizeof msg) != LLMP_OK ||
		 llmp_spec_parse(layout, &spec, msg, sizeof msg) != LLMP_OK)
		bad_run(r->where, msg);
	else {
		r->world = (uint32_t)world;
		r->peak_bytes = peak_gib * 1024.0 * 1024.0 * 1024.0;
		snprintf(r->gpu_text, sizeof r->gpu_text, "%s", gpu);
		r->l = step_layout_of_spec(&spec, &r->m);
		if (r->l.recompute == MODEL_RECOMPUTE_AUTO)
			r->l.recompute = MODEL_RECOMPUTE_SELECTIVE; /* llmp's first choice */
		if (step_layout_check(&r->m, r->world, &r->l, msg, sizeof msg) != LLMP_OK) {
			snprintf(why, sizeof why, "layout '%s': %s", layout, msg);
			bad_run(r->where, why);
		} else {
			rc = 0;
		}
	}
	json_free(&o);
	return rc;
}

/* What a metrics record lacks: the --model and --gpu given; NULL for none. */
struct defaults {
	const char *model, *gpu;
};

/* text as a JSON string into f: quotes and backslashes escaped, control characters refused. */
static bool put_json_string(FILE *f, const char *text)
{
	fputc('"', f);
	for (const char *c = text; *c; c++) {
		if ((unsigned char)*c < 0x20)
			return false;
		if (*c == '"' || *c == '\\')
			fputc('\\', f);
		fputc(*c, f);
	}
	fputc('"', f);
	return true;
}

/* The metrics layout ("tp=2,...,vpp=0,order=...,world=4") as a --parallel spec: world= and vpp=0 left out. */
static void spec_of_metrics(const char *layout, char *spec, size_t len)
{
	size_t used = 0;
	spec[0] = '\0';
	for (const char *p = layout; *p;) {
		size_t n = strcspn(p, ",");
		bool drop = (n >= 6 && !strncmp(p, "world=", 6)) || (n == 5 && !strncmp(p, "vpp=0", 5));
		if (!drop && used + n + 2 < len) {
			used += (size_t)snprintf(spec + used, len - used, "%s%.*s", used ? "," : "", (int)n,
						 p);
		}
		p += n + (p[n] == ',');
	}
}

/* The newest complete line of a metrics file (a last line without its newline is a write cut
 * short), malloc'd; NULL with errno set when the file cannot be read, with errno 0 when it has
 * no complete line. */
static char *newest_record(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL, *line = NULL;
	size_t cap = 0;
	for (ssize_t len; (len = getline(&buf, &cap, f)) >= 0;)
		if (len > 1 && buf[len - 1] == '\n') {
			free(line);
			line = strdup(buf);
		}
	free(buf);
	fclose(f);
	errno = 0;
	return line;
}

/*
 * The largest "peak_gib" over the newest complete records of every rank's
 * file in dir (rank-*.jsonl, job_metrics_list): the rank that held the most memory is the
 * one the model's peak describes. 0 when no record has one.
 */
static double peak_over_ranks(const char *dir)
{
	char **names;
	size_t n;
	double peak = 0;
	if (job_metrics_list(dir, &names, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char path[4400], *line, msg[LLMP_MSG_MAX];
		struct json_value o;
		double p;
		snprintf(path, sizeof path, "%.4096s/%s", dir, names[i]);
		if (!(line = newest_record(path)))
			continue;
		if (json_parse(line, strlen(line), &o, msg, sizeof msg) == LLMP_OK) {
			if (number_of(&o, "peak_gib", &p) == 0 && p > peak)
				peak = p;
			json_free(&o);
		}
		free(line);
	}
	job_metrics_list_free(names, n);
	return peak;
}

/*
 * A metrics directory (LLMP_METRICS=DIR, doc/metrics-json.md): one run, from
 * rank 0's newest complete record: its layout and world, step_s / steps,
 * "model" and "gpu" when the record has them, else d's; and the largest
 * "peak_gib" of any rank's newest record.
 */
static int read_metrics_dir(const char *dir, const struct defaults *d, struct run *r)
{
	char path[4200], *text = NULL, *line, msg[LLMP_MSG_MAX];
	size_t size = 0;
	snprintf(path, sizeof path, "%.4096s/rank-00000.jsonl", dir);
	snprintf(r->where, sizeof r->where, "%.280s", path);
	if (!(line = newest_record(path))) {
		if (errno == 0)
			return bad_run(r->where, "no complete metrics record");
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	struct json_value o;
	int rc = CLI_EXIT_USAGE;
	if (json_parse(line, strlen(line), &o, msg, sizeof msg) != LLMP_OK) {
		free(line);
		return bad_run(r->where, msg);
	}
	const char *layout = string_of(&o, "layout"), *model = string_of(&o, "model"),
		   *gpu = string_of(&o, "gpu");
	double world = 0, steps = 0, step_s = 0, peak = 0;
	model = model ? model : d->model, gpu = gpu ? gpu : d->gpu;
	char spec[512];
	FILE *out = open_memstream(&text, &size);
	if (!layout || number_of(&o, "world", &world) < 0 || number_of(&o, "steps", &steps) < 0 ||
	    number_of(&o, "step_s", &step_s) < 0)
		bad_run(r->where,
			"the newest record has no \"layout\", \"world\", or steps ended (\"steps\", "
			"\"step_s\")");
	else if (!model || !gpu)
		bad_run(r->where, "the record names no \"model\" or \"gpu\": give --model and --gpu");
	else if (!out)
		rc = CLI_EXIT_FAILURE;
	else {
		spec_of_metrics(layout, spec, sizeof spec);
		bool ok = fputs("{\"model\": ", out) >= 0 && put_json_string(out, model);
		ok = ok && fputs(", \"gpu\": ", out) >= 0 && put_json_string(out, gpu);
		ok = ok && fputs(", \"layout\": ", out) >= 0 && put_json_string(out, spec);
		fprintf(out, ", \"world\": %.0f, \"step_s\": %.9g", world, step_s / steps);
		if ((peak = peak_over_ranks(dir)) > 0)
			fprintf(out, ", \"peak_gib\": %.9g", peak);
		fputc('}', out);
		if (fclose(out) == 0 && ok)
			rc = parse_run(text, size, r);
		else
			bad_run(r->where, "a control character in the model or GPU text");
		out = NULL;
	}
	if (out)
		fclose(out);
	free(text);
	json_free(&o);
	free(line);
	return rc;
}

static int read_runs(const char *path, struct run *runs, size_t *n)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	unsigned number = 0;
	int rc = 0;
	if (!f) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	for (ssize_t len; rc == 0 && (len = getline(&line, &cap, f)) >= 0;) {
		number++;
		if (strspn(line, " \t\r\n") == (size_t)len)
			continue;
		if (*n == MAX_RUNS) {
			fprintf(stderr, PROG ": %s: more than %d runs\n", path, MAX_RUNS);
			rc = CLI_EXIT_USAGE;
			break;
		}
		struct run *r = &runs[*n];
		snprintf(r->where, sizeof r->where, "%.280s:%u", path, number);
		rc = parse_run(line, (size_t)len, r);
		*n += rc == 0;
	}
	free(line);
	fclose(f);
	return rc;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Two runs of one model and layout at two micro-batch sizes, a the smaller. */
static bool mbs_pair(const struct run *a, const struct run *b)
{
	const struct model_desc *x = &a->m, *y = &b->m;
	return a->world == b->world && a->l.tp == b->l.tp && a->l.pp == b->l.pp && a->l.cp == b->l.cp &&
	       a->l.ep == b->l.ep && a->l.vpp == b->l.vpp && a->l.recompute == b->l.recompute &&
	       a->l.mbs < b->l.mbs && x->layers == y->layers && x->hidden == y->hidden && x->seq == y->seq &&
	       x->gbs == y->gbs && x->experts == y->experts && !strcmp(a->gpu_text, b->gpu_text);
}

/* Runs a and b are one layout at two tensor-parallel sizes, a's the smaller, b's groups inside
 * g's NVLink domain: the pair the link rate is fitted on. */
static bool tp_pair(const struct run *a, const struct run *b)
{
	const struct model_desc *x = &a->m, *y = &b->m;
	return a->world == b->world && a->l.tp < b->l.tp && b->l.tp <= b->g.domain && a->l.pp == b->l.pp &&
	       a->l.cp == b->l.cp && a->l.ep == b->l.ep && a->l.vpp == b->l.vpp &&
	       a->l.recompute == b->l.recompute && a->l.mbs == b->l.mbs && x->layers == y->layers &&
	       x->hidden == y->hidden && x->seq == y->seq && x->gbs == y->gbs && x->experts == y->experts &&
	       !strcmp(a->gpu_text, b->gpu_text);
}

/* The median relative step error of the runs on g, in *median_err. */
static double step_error(struct run **runs, size_t n, const struct gpu_desc *g)
{
	double err[MAX_RUNS];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct step_estimate e;
		struct run *r = runs[i];
		if (step_estimate(&r->m, g, r->world, &r->l, NULL, &e, NULL, 0) == LLMP_OK)
			err[k++] = fabs(e.step_s / r->step_s - 1);
	}
	return k ? median(err, k) : 0;
}

/* r's modelled peak without any allowance: the terms the allowance adds to (its peak stage's). */
static double peak_terms(const struct run *r, const struct gpu_desc *g)
{
	struct model_desc m = r->m;
	struct gpu_desc bare = *g;
	struct step_estimate e;
	m.overhead = 0, m.overhead_given = true;
	bare.alloc_fixed_bytes = 0, bare.alloc_fixed_given = true;
	return step_estimate(&m, &bare, r->world, &r->l, NULL, &e, NULL, 0) == LLMP_OK ? e.peak_bytes : -1;
}

/*
 * The share of the modelled bytes (the GPU text's alloc=) that gives the runs
 * their measured peaks M over the terms t, with the fixed part kept:
 * M = t (1 + share) + fixed, least squares on the relative error, in [0, 1].
 * The fixed part is not fitted with it: on one H200 (doc/benchmarks.md,
 * "A site's runs on a GPU") what the terms missed grew with the activations,
 * not with the whole, and a fixed part fitted beside the share put the
 * held-out runs 14-17% under their peaks, where keeping it left them within 6%.
 */
static double fit_share(const double *t, const double *M, size_t k, double fixed)
{
	double saa = 0, say = 0;
	for (size_t i = 0; i < k; i++) {
		double a = t[i] / M[i], y = 1 - a - fixed / M[i];
		saa += a * a, say += a * y;
	}
	return fmin(fmax(say / saa, 0), 1);
}

static double change(double now, double was)
{
	return was > 0 ? 100 * (now / was - 1) : 0;
}

/* Fit and report the runs of one GPU text; its plugstack arguments into args. */
static int calibrate_gpu(struct run **runs, size_t n, char *args, size_t len)
{
	struct gpu_desc was = runs[0]->g, g = was;
	char msg[LLMP_MSG_MAX];
	const struct run *pair[2] = { NULL, NULL }, *tps[2] = { NULL, NULL };
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			if (!pair[0] && mbs_pair(runs[i], runs[j]))
				pair[0] = runs[i], pair[1] = runs[j];
			if (!tps[0] && tp_pair(runs[i], runs[j]))
				tps[0] = runs[i], tps[1] = runs[j];
		}
	for (int round = 0; round < FIT_ROUNDS; round++) {
		double eff[MAX_RUNS], before = g.efficiency, overhead = g.layer_overhead_s,
				      link = g.nvlink_gbps;
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (step_fit_efficiency(&runs[i]->m, &g, runs[i]->world, &runs[i]->l, runs[i]->step_s,
						&eff[k], msg, sizeof msg) == LLMP_OK)
				k++;
			else
				fprintf(stderr, PROG ": %s: no efficiency fits it: %s\n", runs[i]->where,
					msg);
		if (!k)
			return CLI_EXIT_USAGE;
		g.efficiency = median(eff, k);
		if (pair[0] && step_fit_layer_overhead(&pair[0]->m, &g, pair[0]->world, &pair[0]->l,
						       pair[0]->step_s, &pair[1]->l, pair[1]->step_s,
						       &g.layer_overhead_s, msg, sizeof msg) != LLMP_OK) {
			fprintf(stderr, PROG ": %s and %s: no per-layer overhead fits them: %s\n",
				pair[0]->where, pair[1]->where, msg);
			pair[0] = NULL;
		}
		if (tps[0] &&
		    step_fit_link(&tps[0]->m, &g, tps[0]->world, &tps[0]->l, tps[0]->step_s, &tps[1]->l,
				  tps[1]->step_s, &g.nvlink_gbps, msg, sizeof msg) != LLMP_OK) {
			fprintf(stderr, PROG ": %s and %s: no link rate fits them: %s\n", tps[0]->where,
				tps[1]->where, msg);
			tps[0] = NULL;
		}
		if (fabs(g.efficiency - before) <= 1e-9 * before &&
		    fabs(g.layer_overhead_s - overhead) <= 1e-12 && fabs(g.nvlink_gbps - link) <= 1e-9 * link)
			break;
	}
	printf("%s: %zu run%s\n", runs[0]->gpu_text, n, n == 1 ? "" : "s");
	printf("  efficiency            %.3f -> %.3f (%+.0f%%)\n", was.efficiency, g.efficiency,
	       change(g.efficiency, was.efficiency));
	if (pair[0])
		printf("  per-layer overhead    %.2f -> %.2f ms a layer and micro-batch (from %s and %s)\n",
		       1e3 * was.layer_overhead_s, 1e3 * g.layer_overhead_s, pair[0]->where, pair[1]->where);
	else
		printf("  per-layer overhead    %.2f ms, kept: no two runs of one layout at two micro-batch sizes\n",
		       1e3 * was.layer_overhead_s);
	if (tps[0])
		printf("  NVLink                %.1f -> %.1f GB/s (from %s at tp %u and %s at tp %u)\n",
		       was.nvlink_gbps, g.nvlink_gbps, tps[0]->where, tps[0]->l.tp, tps[1]->where,
		       tps[1]->l.tp);
	else
		printf("  NVLink                %.1f GB/s, kept: no two runs of one layout at two tensor-parallel "
		       "sizes inside the NVLink domain\n",
		       was.nvlink_gbps);
	printf("  step error (median)   %.1f%% -> %.1f%% over these runs\n", 100 * step_error(runs, n, &was),
	       100 * step_error(runs, n, &g));
	double terms[MAX_RUNS], peaks[MAX_RUNS], band = -1;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (runs[i]->peak_bytes > 0 && (terms[k] = peak_terms(runs[i], &g)) > 0)
			peaks[k++] = runs[i]->peak_bytes;
	double fixed_was = step_alloc_fixed(&was), share_was = step_alloc_share(&runs[0]->m, &was);
	if (k) {
		double share = fit_share(terms, peaks, k, fixed_was);
		g.alloc_share = share, g.alloc_share_given = true;
		band = 0;
		for (size_t i = 0; i < n; i++) {
			struct model_desc m = runs[i]->m;
			struct step_estimate e;
			m.overhead_given = false; /* the site's share, as the guard will apply it */
			if (runs[i]->peak_bytes > 0 &&
			    step_estimate(&m, &g, runs[i]->world, &runs[i]->l, NULL, &e, NULL, 0) == LLMP_OK)
				band = fmax(band, fabs(e.peak_bytes / runs[i]->peak_bytes - 1));
		}
		band = ceil(band * 1000) / 1000; /* rounded up: the guard's safe side */
		printf("  memory allowance      %.2f GiB + %.3f -> %.2f GiB + %.3f of the rest (alloc=) from %zu run%s\n",
		       fixed_was / GIB_BYTES, share_was, fixed_was / GIB_BYTES, share, k, k == 1 ? "" : "s");
		printf("  memory error band     %.3f -> %.3f (guard_band=)\n",
		       mem_guard_band(runs[0]->m.engine, g.name), band);
	} else {
		printf("  memory                kept: no run recorded its peak (peak_gib)\n");
	}
	int used = snprintf(args, len, "gpu=%s,eff=%.4f", runs[0]->gpu_text, g.efficiency);
	if (pair[0] && used > 0 && (size_t)used < len)
		used += snprintf(args + used, len - (size_t)used, ",layer-ms=%.3f", 1e3 * g.layer_overhead_s);
	if (tps[0] && used > 0 && (size_t)used < len)
		used += snprintf(args + used, len - (size_t)used, ",nvlink=%.1f", g.nvlink_gbps);
	if (band >= 0 && used > 0 && (size_t)used < len)
		snprintf(args + used, len - (size_t)used, ",alloc=%.4f guard_band=%.3f", g.alloc_share, band);
	return 0;
}

int cli_calibrate(int argc, char **argv)
{
	static const struct option longs[] = { { "output", required_argument, NULL, 'o' },
					       { "model", required_argument, NULL, 'M' },
					       { "gpu", required_argument, NULL, 'G' },
					       { "help", no_argument, NULL, 'h' },
					       { NULL, 0, NULL, 0 } };
	const char *out = NULL;
	struct defaults d = { NULL, NULL };
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:M:G:h", longs, NULL)) != -1) {
		if (c == 'o')
			out = optarg;
		else if (c == 'M')
			d.model = optarg;
		else if (c == 'G')
			d.gpu = optarg;
		else if (c == 'h') {
			help();
			return CLI_EXIT_OK;
		} else {
			fputs(PROG ": see --help\n", stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind == argc) {
		fputs(PROG ": no RUNS files given (see --help)\n", stderr);
		return CLI_EXIT_USAGE;
	}
	struct run *runs = calloc(MAX_RUNS, sizeof *runs);
	struct run **group = calloc(MAX_RUNS, sizeof *group);
	char lines[8][512];
	size_t n = 0, nlines = 0;
	int rc = runs && group ? 0 : CLI_EXIT_FAILURE;
	for (int i = optind; rc == 0 && i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			if (n == MAX_RUNS) {
				fprintf(stderr, PROG ": more than %d runs\n", MAX_RUNS);
				rc = CLI_EXIT_USAGE;
			} else {
				rc = read_metrics_dir(argv[i], &d, &runs[n]);
				n += rc == 0;
			}
		} else {
			rc = read_runs(argv[i], runs, &n);
		}
	}
	if (rc == 0 && !n) {
		fputs(PROG ": no runs in the files given\n", stderr);
		rc = CLI_EXIT_USAGE;
	}
	/* One GPU text at a time, in the order first seen. */
	for (size_t i = 0; rc == 0 && i < n; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(runs[j].gpu_text, runs[i].gpu_text);
		if (seen)
			continue;
		size_t k = 0;
		for (size_t j = i; j < n; j++)
			if (!strcmp(runs[j].gpu_text, runs[i].gpu_text))
				group[k++] = &runs[j];
		if (nlines == sizeof lines / sizeof *lines) {
			fputs(PROG ": more than 8 GPU texts\n", stderr);
			rc = CLI_EXIT_USAGE;
			break;
		}
		rc = calibrate_gpu(group, k, lines[nlines], sizeof lines[nlines]);
		nlines += rc == 0;
	}
	if (rc == 0) {
		FILE *f = out ? fopen(out, "w") : NULL;
		if (out && !f) {
			fprintf(stderr, PROG ": %s: %s\n", out, strerror(errno));
			rc = CLI_EXIT_FAILURE;
		}
		for (size_t i = 0; rc == 0 && i < nlines; i++) {
			printf("plugstack: %s\n", lines[i]);
			if (f)
				fprintf(f, "%s\n", lines[i]);
		}
		if (f && fclose(f) != 0) {
			fprintf(stderr, PROG ": %s: %s\n", out, strerror(errno));
			rc = CLI_EXIT_FAILURE;
		}
	}
	free(runs);
	free(group);
	return rc;
}

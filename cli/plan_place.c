/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_place.c - `llmp plan --topology FILE`: the plan laid on a topology
 * (planner/placement.h). The job is the file's hosts (or --hosts, in
 * Slurm's order) with --tasks-per-node tasks each, or as many as each has
 * GPUs. Shows where every rank runs, and how far each group of the layout
 * spans: one node, one NVLink domain, one leaf switch, the tree.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_writer.h"
#include "llmp_cli.h"
#include "common/hostlist.h"
#include "planner/auto_layout.h"
#include "planner/cost.h"
#include "planner/hetero.h"
#include "planner/machines.h"
#include "planner/model_desc.h"
#include "planner/placement.h"
#include "topology/topo.h"

#define PROG "llmp plan"

/* Per group kind of the layout: how many groups of which size span one node, one leaf, ... */
#define NKINDS 5
struct span_row {
	enum llmp_group kind;
	uint32_t count, size;
	size_t spans[PLAN_SPAN_NONE + 1];
};

static bool count_spans(const struct topo *t, const struct plan_placement *p, const llmp_plan *plan,
			struct span_row rows[NKINDS])
{
	static const enum llmp_group kinds[NKINDS] = { LLMP_GROUP_TP, LLMP_GROUP_CP, LLMP_GROUP_EP,
						       LLMP_GROUP_DP, LLMP_GROUP_PP };
	uint32_t world = llmp_plan_world(plan);
	uint32_t *members = malloc((world ? world : 1) * sizeof *members);
	if (!members)
		return false;
	for (size_t k = 0; k < NKINDS; k++) {
		struct span_row *row = &rows[k];
		*row = (struct span_row){ .kind = kinds[k],
					  .count = llmp_plan_group_count(plan, kinds[k]),
					  .size = llmp_plan_group_size(plan, kinds[k]) };
		for (uint32_t g = 0; g < row->count; g++) {
			uint32_t n = 0;
			if (llmp_plan_group(plan, kinds[k], g, members, world, &n) == LLMP_OK)
				row->spans[plan_group_span(t, p, members, n)]++;
		}
	}
	free(members);
	return true;
}

/* The groups of more than one rank, for people. */
static void write_spans(const struct span_row rows[NKINDS], FILE *out)
{
	fprintf(out, "groups by span:\n");
	for (size_t k = 0; k < NKINDS; k++) {
		if (rows[k].size <= 1)
			continue;
		fprintf(out, "  %-3s %u groups of %u:", llmp_group_name(rows[k].kind), rows[k].count,
			rows[k].size);
		for (int s = PLAN_SPAN_NODE; s <= PLAN_SPAN_NONE; s++)
			if (rows[k].spans[s])
				fprintf(out, " %zu in one %s", rows[k].spans[s],
					plan_span_name((enum plan_span)s));
		fputc('\n', out);
	}
}

static void write_slots(const struct topo *t, const struct plan_placement *p, char *const *hosts,
			int64_t only, FILE *out)
{
	fprintf(out, "  %-6s %-6s %-16s %-4s %-13s %s\n", "rank", "task", "host", "gpu", "bus", "hca");
	for (uint32_t r = 0; r < p->world; r++) {
		if (only >= 0 && r != (uint32_t)only)
			continue;
		const struct plan_slot *s = &p->rank[r];
		const struct topo_type *ty = &t->types[t->nodes[s->node].type];
		char gpu[16] = "-";
		if (s->gpu >= 0)
			snprintf(gpu, sizeof gpu, "%d", s->gpu);
		fprintf(out, "  %-6u %-6u %-16s %-4s %-13s %s\n", r, s->task, hosts[s->host], gpu,
			s->gpu >= 0 ? ty->gpus[s->gpu].pci.bus : "-",
			s->hca >= 0 ? ty->hcas[s->hca].name : "-");
	}
}

static const char *human(double bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KB", "MB", "GB", "TB", "PB" };
	size_t u = 0;
	while (bytes >= 1000 && u + 1 < sizeof units / sizeof units[0]) {
		bytes /= 1000;
		u++;
	}
	snprintf(buf, len, "%.1f %s", bytes, units[u]);
	return buf;
}

/* The cost of one placed plan as a column of the report; NULL dims when it could not be computed. */
struct column {
	const char *name;
	struct plan_cost cost;
	bool ok;
};

static void cost_of(const struct topo *t, const llmp_spec *spec, bool default_order, bool renumber,
		    char *const *hosts, size_t nhosts, const uint32_t *tasks, uint32_t world,
		    uint32_t per_node, const struct plan_model *m, struct column *col)
{
	llmp_spec s = *spec;
	llmp_plan *plan = NULL;
	struct plan_placement p = { 0 };
	char msg[LLMP_MSG_MAX];
	if (default_order)
		s.order_len = 0;
	col->ok = llmp_plan_create(&s, world, per_node, &plan, msg, sizeof msg) == LLMP_OK &&
		  plan_place(t, plan, hosts, nhosts, tasks, renumber, &p, msg, sizeof msg) == LLMP_OK &&
		  plan_cost(t, plan, &p, m, &col->cost, msg, sizeof msg) == LLMP_OK;
	plan_placement_free(&p);
	llmp_plan_destroy(plan);
}

static void write_verdict(const struct column *cols, size_t ncols, FILE *out);

static void write_cost(const struct column *cols, size_t ncols, const struct plan_model *m, FILE *out)
{
	char a[32], b[32];
	const struct plan_cost *mine = &cols[0].cost;
	fprintf(out,
		"cost of one step (estimate: bf16, fp32 gradients reduced by a distributed optimizer, ring\n"
		"collectives, no overlap): h=%.0f L=%.0f seq=%.0f mbs=%.0f, %.0f microbatches\n",
		m->hidden, m->layers, m->seq, m->mbs, mine->microbatches);
	fprintf(out, "  %-4s %-12s", "dim", "bytes/rank");
	for (size_t c = 0; c < ncols; c++)
		fprintf(out, " | %-30s", cols[c].name);
	fputc('\n', out);
	for (size_t d = 0; d < mine->ndims; d++) {
		fprintf(out, "  %-4s %-12s", llmp_axis_name(mine->dim[d].axis),
			human(mine->dim[d].bytes, a, sizeof a));
		for (size_t c = 0; c < ncols; c++) {
			const struct plan_cost_dim *x = NULL;
			for (size_t k = 0; cols[c].ok && k < cols[c].cost.ndims; k++)
				if (cols[c].cost.dim[k].axis == mine->dim[d].axis)
					x = &cols[c].cost.dim[k];
			char cell[64] = "-";
			if (x)
				snprintf(cell, sizeof cell, "%-13s %5.1f GB/s %7.3f s",
					 plan_span_name(x->span), x->gbps, x->seconds);
			fprintf(out, " | %-30s", cell);
		}
		fputc('\n', out);
	}
	fprintf(out, "  %-17s", "time");
	for (size_t c = 0; c < ncols; c++) {
		char cell[64] = "-";
		if (cols[c].ok)
			snprintf(cell, sizeof cell, "%29.3f s", cols[c].cost.seconds);
		fprintf(out, " | %-30s", cell);
	}
	fprintf(out, "\n  %-17s", "through a spine");
	for (size_t c = 0; c < ncols; c++)
		fprintf(out, " | %30s", cols[c].ok ? human(cols[c].cost.switch_bytes, b, sizeof b) : "-");
	fputc('\n', out);
	write_verdict(cols, ncols, out);
}

/*
 * --explain: for each column, the bytes each dimension moves over each link
 * class in one step (all ranks together) and its time, then the verdict.
 */
static void write_explained(const struct column *cols, size_t ncols, const struct plan_model *m, FILE *out)
{
	char b[32];
	fprintf(out,
		"cost of one step (estimate: bf16, fp32 gradients reduced by a distributed optimizer, ring\n"
		"collectives, no overlap): h=%.0f L=%.0f seq=%.0f mbs=%.0f, %.0f microbatches\n"
		"bytes over each link class, all ranks together; time of each dimension's slowest group\n",
		m->hidden, m->layers, m->seq, m->mbs, cols[0].cost.microbatches);
	for (size_t c = 0; c < ncols; c++) {
		fprintf(out, "%s\n  %-4s %-12s", cols[c].name, "dim", "bytes/rank");
		for (int l = 0; l < PLAN_NLINKS; l++)
			fprintf(out, " %10s", plan_link_name((enum plan_link)l));
		fprintf(out, " %10s\n", "time");
		if (!cols[c].ok) {
			fprintf(out, "  (this order cannot be placed on these hosts)\n");
			continue;
		}
		double total[PLAN_NLINKS] = { 0 };
		for (size_t d = 0; d < cols[c].cost.ndims; d++) {
			const struct plan_cost_dim *x = &cols[c].cost.dim[d];
			fprintf(out, "  %-4s %-12s", llmp_axis_name(x->axis), human(x->bytes, b, sizeof b));
			for (int l = 0; l < PLAN_NLINKS; l++) {
				fprintf(out, " %10s",
					x->link_bytes[l] > 0 ? human(x->link_bytes[l], b, sizeof b) : "-");
				total[l] += x->link_bytes[l];
			}
			fprintf(out, " %8.3f s\n", x->seconds);
		}
		fprintf(out, "  %-17s", "all");
		for (int l = 0; l < PLAN_NLINKS; l++)
			fprintf(out, " %10s", total[l] > 0 ? human(total[l], b, sizeof b) : "-");
		fprintf(out, " %8.3f s\n", cols[c].cost.seconds);
	}
	write_verdict(cols, ncols, out);
}

/* One line comparing this placement with Slurm's block order (column 1). */
static void write_verdict(const struct column *cols, size_t ncols, FILE *out)
{
	const struct plan_cost *mine = &cols[0].cost;
	if (ncols > 1 && cols[1].ok) {
		double base = cols[1].cost.switch_bytes, here = mine->switch_bytes;
		if (base > 0)
			fprintf(out,
				"verdict: this placement sends %.0f%% of the bytes Slurm's block order sends through a "
				"spine, in %.3f s of network time against %.3f s\n",
				100 * here / base, mine->seconds, cols[1].cost.seconds);
		else
			fprintf(out,
				"verdict: no group crosses a spine in Slurm's block order; %.3f s of network time "
				"against %.3f s\n",
				mine->seconds, cols[1].cost.seconds);
	}
}

/* ------------------------------------------------------------------ JSON */

static void json_cost_dims(struct json_writer *w, const struct plan_cost *c)
{
	static const char *const link_key[PLAN_NLINKS] = { "nvlink", "pcie", "ib_leaf", "ib_spine" };
	json_array(w, "dims");
	for (size_t d = 0; d < c->ndims; d++) {
		const struct plan_cost_dim *x = &c->dim[d];
		json_object(w, NULL);
		json_string(w, "dim", llmp_axis_name(x->axis));
		json_double(w, "bytes", x->bytes);
		json_string(w, "span", plan_span_name(x->span));
		json_double(w, "gbps", x->gbps);
		json_double(w, "seconds", x->seconds);
		json_double(w, "spine_bytes", x->switch_bytes);
		json_double(w, "internode_bytes", x->node_bytes);
		json_object(w, "link_bytes");
		for (int l = 0; l < PLAN_NLINKS; l++)
			json_double(w, link_key[l], x->link_bytes[l]);
		json_object_end(w);
		json_object_end(w);
	}
	json_array_end(w);
}

/* doc/placement-json.md */
static bool write_json(const struct topo *t, const struct plan_placement *p, const llmp_plan *plan,
		       const struct span_row rows[NKINDS], char *const *hosts, size_t nhosts, bool renumber,
		       int64_t only, const struct plan_model *m, const struct column *cols, size_t ncols,
		       FILE *out)
{
	struct json_writer w;
	char spec[LLMP_SPEC_MAX_LEN + 1];
	uint32_t world = llmp_plan_world(plan);
	if (llmp_spec_format(llmp_plan_spec(plan), spec, sizeof spec) == 0)
		snprintf(spec, sizeof spec, "dp=auto");
	json_begin(&w, out);
	json_object(&w, NULL);
	json_uint(&w, "llmp_placement", 1);
	json_string(&w, "layout", spec);
	json_string(&w, "order", llmp_plan_order(plan));
	json_uint(&w, "world", world);
	json_string(&w, "placement", renumber ? "topology" : "block");
	json_array(&w, "hosts");
	for (size_t i = 0; i < nhosts; i++)
		json_string(&w, NULL, hosts[i]);
	json_array_end(&w);
	json_array(&w, "groups");
	for (size_t k = 0; k < NKINDS; k++) {
		json_object(&w, NULL);
		json_string(&w, "kind", llmp_group_name(rows[k].kind));
		json_uint(&w, "count", rows[k].count);
		json_uint(&w, "size", rows[k].size);
		json_object(&w, "spans");
		for (int s = PLAN_SPAN_GPU; s <= PLAN_SPAN_NONE; s++)
			if (rows[k].spans[s])
				json_uint(&w, plan_span_name((enum plan_span)s), rows[k].spans[s]);
		json_object_end(&w);
		json_object_end(&w);
	}
	json_array_end(&w);
	json_array(&w, "ranks");
	for (uint32_t r = 0; r < p->world; r++) {
		if (only >= 0 && r != (uint32_t)only)
			continue;
		const struct plan_slot *s = &p->rank[r];
		const struct topo_type *ty = &t->types[t->nodes[s->node].type];
		json_object(&w, NULL);
		json_uint(&w, "rank", r);
		json_uint(&w, "task", s->task);
		json_string(&w, "host", hosts[s->host]);
		if (s->gpu >= 0) {
			json_uint(&w, "gpu", (uint64_t)s->gpu);
			json_string(&w, "bus", ty->gpus[s->gpu].pci.bus);
		} else {
			json_null(&w, "gpu");
			json_null(&w, "bus");
		}
		json_string(&w, "hca", s->hca >= 0 ? ty->hcas[s->hca].name : NULL);
		json_object_end(&w);
	}
	json_array_end(&w);
	if (m) {
		json_object(&w, "cost");
		json_object(&w, "model");
		json_double(&w, "hidden", m->hidden);
		json_double(&w, "layers", m->layers);
		json_double(&w, "seq", m->seq);
		json_double(&w, "mbs", m->mbs);
		json_double(&w, "heads", m->heads);
		json_double(&w, "kv_heads", m->kv_heads);
		json_double(&w, "experts", m->experts);
		json_double(&w, "topk", m->topk);
		json_double(&w, "gbs", m->gbs);
		json_object_end(&w);
		json_double(&w, "microbatches", cols[0].cost.microbatches);
		json_array(&w, "columns");
		for (size_t c = 0; c < ncols; c++) {
			json_object(&w, NULL);
			json_string(&w, "name", cols[c].name);
			if (cols[c].ok) {
				json_double(&w, "seconds", cols[c].cost.seconds);
				json_double(&w, "spine_bytes", cols[c].cost.switch_bytes);
				json_double(&w, "internode_bytes", cols[c].cost.node_bytes);
				json_cost_dims(&w, &cols[c].cost);
			}
			json_object_end(&w);
		}
		json_array_end(&w);
		json_object_end(&w);
	}
	json_object_end(&w);
	return json_end(&w);
}

/* The picture into path, whole or not at all: written beside it, then renamed. */
static int write_picture(const struct topo *t, const struct plan_placement *p, const llmp_plan *plan,
			 char *const *hosts, size_t nhosts, const char *path)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
		fprintf(stderr, PROG ": --svg: path too long\n");
		return -1;
	}
	FILE *f = fopen(tmp, "we");
	int rc = f ? cli_plan_write_svg(t, p, plan, hosts, nhosts, f) : -1;
	if (f && fclose(f) != 0)
		rc = -1;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -1;
	if (rc != 0) {
		fprintf(stderr, PROG ": --svg %s: %s\n", cli_printable(path), strerror(errno));
		unlink(tmp);
	}
	return rc;
}

/* --model as the cost model reads it; for the step model, any model the step model reads (model_desc.h). */
static llmp_status model_of(const char *text, bool step, struct plan_model *out, char *msg, size_t len)
{
	if (!step)
		return plan_model_parse(text, out, msg, len);
	struct model_desc m;
	llmp_status st = model_desc_parse(text, &m, msg, len);
	if (st == LLMP_OK)
		*out = step_topo_model(&m, m.mbs);
	return st;
}

/* Whether every host of the job is of a node type that says its "gpu" (so --model needs no --gpu). */
static bool hosts_say_gpu(const struct topo *t, char *const *hosts, size_t nhosts)
{
	for (size_t i = 0; i < nhosts; i++) {
		bool said = false;
		for (size_t n = 0; n < t->nnodes && hosts[i]; n++)
			if (strcmp(t->nodes[n].host, hosts[i]) == 0)
				said = t->types[t->nodes[n].type].gpu[0] != '\0';
		if (!said)
			return false;
	}
	return nhosts > 0;
}

/* The machines of the job for the step model: this layout, or every candidate of --parallel auto, placed here. */
struct job {
	char *const *hosts;
	size_t nhosts;
	const uint32_t *tasks;
	uint32_t world, per;
};

/*
 * The job's hosts in each order of their GPU kinds (a type's "gpu", else
 * --gpu): hosts of one kind keep their order. With 2 or 3 kinds, every
 * order, and the hosts as given first when they mix the kinds; else the
 * hosts as given alone. Copies, freed by kind_orders_free.
 */
struct kind_orders {
	size_t n;
	char **hosts[CLI_ORDERS_MAX];
	uint32_t *tasks[CLI_ORDERS_MAX];
	char *names[CLI_ORDERS_MAX];
};

static void kind_orders_free(struct kind_orders *ko)
{
	for (size_t i = 0; i < ko->n; i++) {
		free(ko->hosts[i]);
		free(ko->tasks[i]);
		free(ko->names[i]);
	}
	memset(ko, 0, sizeof *ko);
}

static const char *kind_of(const struct topo *t, const char *host, const char *fallback)
{
	for (size_t n = 0; n < t->nnodes; n++)
		if (strcmp(t->nodes[n].host, host) == 0)
			return t->types[t->nodes[n].type].gpu[0] ? t->types[t->nodes[n].type].gpu : fallback;
	return fallback;
}

/* Order i of the kinds: the hosts of kinds perm[0], perm[1], ... */
static bool one_order(const struct topo *t, const struct job *job, const char *fallback, const char **kinds,
		      const unsigned *perm, size_t nk, struct kind_orders *ko)
{
	size_t i = ko->n++, at = 0, len = 1;
	ko->hosts[i] = calloc(job->nhosts, sizeof *ko->hosts[i]);
	ko->tasks[i] = calloc(job->nhosts, sizeof *ko->tasks[i]);
	for (size_t k = 0; k < nk; k++)
		len += strlen(kinds[perm[k]]) + 6;
	ko->names[i] = calloc(len, 1);
	if (!ko->hosts[i] || !ko->tasks[i] || !ko->names[i])
		return false;
	for (size_t k = 0; k < nk; k++) {
		strcat(ko->names[i], k ? " then " : "");
		strcat(ko->names[i], kinds[perm[k]]);
		for (size_t h = 0; h < job->nhosts; h++)
			if (strcmp(kind_of(t, job->hosts[h], fallback), kinds[perm[k]]) == 0)
				ko->hosts[i][at] = job->hosts[h], ko->tasks[i][at++] = job->tasks[h];
	}
	return true;
}

static bool kind_orders(const struct topo *t, const struct job *job, const char *fallback,
			struct kind_orders *ko)
{
	memset(ko, 0, sizeof *ko);
	const char *kinds[4];
	size_t nk = 0;
	bool grouped = true;
	for (size_t h = 0; h < job->nhosts; h++) {
		const char *k = kind_of(t, job->hosts[h], fallback);
		size_t i = 0;
		while (i < nk && strcmp(kinds[i], k) != 0)
			i++;
		grouped &= i + 1 >= nk; /* a kind seen before the last one: the kinds are mixed */
		if (i == nk && nk < 4)
			kinds[nk++] = k;
	}
	bool every = nk >= 2 && nk <= 3;
	if (!grouped || !every) {
		ko->n = 1;
		ko->hosts[0] = malloc(job->nhosts * sizeof *ko->hosts[0]);
		ko->tasks[0] = malloc(job->nhosts * sizeof *ko->tasks[0]);
		ko->names[0] = strdup("as listed");
		if (!ko->hosts[0] || !ko->tasks[0] || !ko->names[0])
			return false;
		memcpy(ko->hosts[0], job->hosts, job->nhosts * sizeof *ko->hosts[0]);
		memcpy(ko->tasks[0], job->tasks, job->nhosts * sizeof *ko->tasks[0]);
	}
	if (!every)
		return true;
	static const unsigned perms2[2][3] = { { 0, 1 }, { 1, 0 } };
	static const unsigned perms3[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
					       { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };
	for (size_t p = 0; p < (nk == 2 ? 2u : 6u); p++)
		if (!one_order(t, job, fallback, kinds, nk == 2 ? perms2[p] : perms3[p], nk, ko))
			return false;
	return true;
}

static int step_on_machines(const struct cli_plan_topology *a, const struct topo *t, const struct job *job,
			    const llmp_plan *plan, const struct plan_model *model)
{
	char msg[LLMP_MSG_MAX];
	struct gpu_desc fallback, weakest;
	if (a->gpu && gpu_desc_parse(a->gpu, &fallback, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": --gpu: %s\n", msg);
		return CLI_EXIT_USAGE;
	}
	struct kind_orders ko;
	if (!kind_orders(t, job, a->gpu ? a->gpu : "", &ko)) {
		kind_orders_free(&ko);
		fprintf(stderr, PROG ": out of memory\n");
		return CLI_EXIT_FAILURE;
	}
	struct machines on[CLI_ORDERS_MAX];
	struct chooser_machines machines[CLI_ORDERS_MAX];
	struct machines_cache *cache = machines_cache_new(); /* NULL: each layout placed anew */
	for (size_t i = 0; i < ko.n; i++) {
		on[i] = (struct machines){ .t = t,
					   .hosts = ko.hosts[i],
					   .nhosts = job->nhosts,
					   .tasks = ko.tasks[i],
					   .world = job->world,
					   .tasks_per_node = job->per,
					   .renumber = a->renumber,
					   .model = model,
					   .fallback = a->gpu ? &fallback : NULL,
					   .cache = cache };
		machines[i] = machines_chooser(&on[i]);
	}
	/* The weakest GPU of the job: what bounds --parallel auto's search, and its header. */
	struct machines as_given = on[0];
	as_given.hosts = job->hosts, as_given.tasks = job->tasks;
	if (machines_weakest(&as_given, &weakest, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": --topology: %s\n", msg);
		machines_cache_free(cache);
		kind_orders_free(&ko);
		return CLI_EXIT_USAGE;
	}
	llmp_spec spec = *llmp_plan_spec(plan);
	spec.size[LLMP_DIM_DP] = llmp_plan_size(plan, LLMP_AXIS_DP);
	struct cli_plan_step step = { .model = a->model,
				      .gpu = a->gpu,
				      .spec = &spec,
				      .choose_layout = a->choose_layout,
				      .world = job->world,
				      .json = a->json,
				      .machine_gpu = &weakest,
				      .on = machines,
				      .placement = a->renumber ? "topology order" : "block order",
				      .norders = ko.n,
				      .order_names = (const char *const *)ko.names };
	int rc = cli_plan_step(&step);
	machines_cache_free(cache);
	kind_orders_free(&ko);
	return rc;
}

int cli_plan_on_topology(const struct cli_plan_topology *a, const llmp_spec *spec)
{
	struct topo t;
	char msg[LLMP_MSG_MAX], **hosts = NULL;
	size_t nhosts = 0;
	int rc = CLI_EXIT_USAGE;
	if (topo_read_file(a->file, &t, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": --topology: %s\n", msg);
		return CLI_EXIT_USAGE;
	}
	llmp_status st = a->hosts
				 ? hostlist_expand(a->hosts, TOPO_HOSTS_MAX, &hosts, &nhosts, msg, sizeof msg)
				 : LLMP_OK;
	if (st != LLMP_OK) {
		fprintf(stderr, PROG ": --hosts: %s\n", msg);
		topo_free(&t);
		return CLI_EXIT_USAGE;
	}
	if (!a->hosts) {
		hosts = calloc(t.nnodes ? t.nnodes : 1, sizeof *hosts);
		for (size_t i = 0; hosts && i < t.nnodes; i++)
			hosts[nhosts++] = strdup(t.nodes[i].host);
	}
	uint32_t *tasks = calloc(nhosts ? nhosts : 1, sizeof *tasks);
	uint64_t world = 0;
	bool uniform = true;
	for (size_t i = 0; tasks && i < nhosts && hosts[i]; i++) {
		uint32_t gpus = 0;
		for (size_t n = 0; n < t.nnodes; n++)
			if (strcmp(t.nodes[n].host, hosts[i]) == 0)
				gpus = t.types[t.nodes[n].type].ngpus;
		tasks[i] = a->tasks_per_node ? a->tasks_per_node : gpus;
		uniform &= tasks[i] == tasks[0];
		world += tasks[i];
	}
	llmp_plan *plan = NULL;
	struct plan_placement p = { 0 };
	struct plan_model model;
	/* The step model: asked for by --gpu or auto, or the job's node types say their GPU (not with --explain, --svg: the cost). */
	bool step = a->model && (a->gpu || a->choose_layout ||
				 (!a->explain && !a->svg && hosts && hosts_say_gpu(&t, hosts, nhosts)));
	if (step && a->rank >= 0) {
		fprintf(stderr,
			PROG ": --rank shows a plan's groups: not with the step model (--model on GPUs)\n");
	} else if (a->model && model_of(a->model, step, &model, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": %s\n", msg);
	} else if (!tasks || !hosts) {
		fprintf(stderr, PROG ": out of memory\n");
		rc = CLI_EXIT_FAILURE;
	} else if (world == 0 || world > LLMP_WORLD_MAX) {
		fprintf(stderr, PROG ": --topology: %" PRIu64 " tasks on %zu hosts (give --tasks-per-node)\n",
			world, nhosts);
	} else if (a->world && a->world != world) {
		fprintf(stderr, PROG ": --world %u disagrees with %" PRIu64 " tasks on the %zu hosts\n",
			a->world, world, nhosts);
	} else if (llmp_plan_create(spec, (uint32_t)world, uniform ? tasks[0] : 0, &plan, msg, sizeof msg) !=
		   LLMP_OK) {
		fprintf(stderr, PROG ": %s\n", msg);
	} else if (plan_place(&t, plan, hosts, nhosts, tasks, a->renumber, &p, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": %s\n", msg);
	} else if (a->model && !a->choose_layout && model.gbs &&
		   model.gbs < model.mbs * llmp_plan_size(plan, LLMP_AXIS_DP)) {
		fprintf(stderr, PROG ": --model: gbs=%.0f is less than mbs x dp = %.0f\n", model.gbs,
			model.mbs * llmp_plan_size(plan, LLMP_AXIS_DP));
	} else if (step) {
		struct job job = { .hosts = hosts,
				   .nhosts = nhosts,
				   .tasks = tasks,
				   .world = (uint32_t)world,
				   .per = uniform ? tasks[0] : 0 };
		rc = step_on_machines(a, &t, &job, plan, &model);
	} else {
		struct column cols[3] = { { .name = a->renumber ? "this placement (topology)"
								: "this placement (block)" },
					  { .name = "Slurm's block order" },
					  { .name = "Megatron's default order" } };
		uint32_t per = uniform ? tasks[0] : 0;
		struct span_row rows[NKINDS];
		if (a->model) {
			/* This placement is placed already; in block order it is Slurm's column too. */
			cols[0].ok = plan_cost(&t, plan, &p, &model, &cols[0].cost, msg, sizeof msg) ==
				     LLMP_OK;
			if (a->renumber)
				cost_of(&t, spec, false, false, hosts, nhosts, tasks, (uint32_t)world, per,
					&model, &cols[1]);
			else
				cols[1].cost = cols[0].cost, cols[1].ok = cols[0].ok;
			cost_of(&t, spec, true, false, hosts, nhosts, tasks, (uint32_t)world, per, &model,
				&cols[2]);
		}
		rc = CLI_EXIT_OK;
		if (!count_spans(&t, &p, plan, rows)) {
			fprintf(stderr, PROG ": out of memory\n");
			rc = CLI_EXIT_FAILURE;
		} else if (a->json) {
			if (!write_json(&t, &p, plan, rows, hosts, nhosts, a->renumber, a->rank,
					a->model ? &model : NULL, cols, 3, stdout))
				rc = CLI_EXIT_FAILURE;
		} else if (a->explain) {
			fprintf(stdout, "placement: %s, %zu hosts\n",
				a->renumber ? "topology (ranks in topology order)"
					    : "block (RANK = SLURM_PROCID)",
				nhosts);
			write_spans(rows, stdout);
			write_explained(cols, 3, &model, stdout);
		} else {
			cli_plan_write_text(plan, uniform ? (uint32_t)nhosts : 0, a->rank, stdout);
			fprintf(stdout, "placement: %s, %zu hosts\n",
				a->renumber ? "topology (ranks in topology order)"
					    : "block (RANK = SLURM_PROCID)",
				nhosts);
			write_spans(rows, stdout);
			write_slots(&t, &p, hosts, a->rank, stdout);
			if (a->model)
				write_cost(cols, 3, &model, stdout);
		}
		if (fflush(stdout) != 0)
			rc = CLI_EXIT_FAILURE;
		if (a->svg && write_picture(&t, &p, plan, hosts, nhosts, a->svg) < 0)
			rc = CLI_EXIT_FAILURE;
	}
	plan_placement_free(&p);
	llmp_plan_destroy(plan);
	free(tasks);
	hostlist_free(hosts, nhosts);
	topo_free(&t);
	return rc;
}

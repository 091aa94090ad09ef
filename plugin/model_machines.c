/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model_machines.c - the step's nodes on the topology file as the step
 * model's machines (model_machines.h): each layout placed on the step's
 * hosts as Slurm numbers its tasks, its network seconds from cost.c and
 * each pipeline stage's GPU from the node types' "gpu" (planner/hetero.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "model_machines.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "slurm_env.h"
#include "planner/cost.h"
#include "common/fail.h"
#include "planner/hetero.h"
#include "common/hostlist.h"
#include "common/open_regular.h"
#include "planner/placement.h"

struct plugin_machines {
	struct topo t;
	char **hosts;
	size_t nhosts;
	uint32_t *tasks;
	uint32_t world, per_node; /* per_node 0: uneven */
	bool renumber;
	struct topo_model model;
	struct gpu_desc fallback;
	bool has_fallback;
	struct auto_machines on;
	/* The last grid placed: --parallel auto asks for one grid with each
	 * micro-batch size and recompute in a row, and placing is most of the time. */
	struct step_layout key;
	bool cached;
	llmp_plan *plan;
	struct topo_placement p;
	struct gpu_desc *stage_gpus;
	llmp_status st;
	char msg[LLMP_MSG_MAX];
};

/* The file's bytes: a regular file, at most PLUGIN_TOPOLOGY_FILE_MAX; never waits on a FIFO. */
static int read_topology(const char *file, char **text, size_t *n, char *msg, size_t len)
{
	struct stat st;
	int fd = llmp_open_regular(file, &st);
	*text = NULL;
	if (fd == -1) {
		snprintf(msg, len, "%s: %s", file, strerror(errno));
		return -1;
	}
	if (fd == LLMP_NOT_REGULAR || st.st_size > (off_t)PLUGIN_TOPOLOGY_FILE_MAX) {
		snprintf(msg, len, "%s: not a regular file of at most %u MiB", file,
			 PLUGIN_TOPOLOGY_FILE_MAX >> 20);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*text = malloc((size_t)st.st_size + 1);
	*n = 0;
	while (*text && *n <= (size_t)st.st_size) {
		ssize_t got = read(fd, *text + *n, (size_t)st.st_size + 1 - *n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		*n += (size_t)got;
	}
	close(fd);
	if (!*text || *n > (size_t)st.st_size) {
		snprintf(msg, len, "%s: %s", file, *text ? "grew while read" : "out of memory");
		free(*text);
		*text = NULL;
		return -1;
	}
	return 0;
}

void plugin_machines_close(struct plugin_machines *pm)
{
	if (!pm)
		return;
	topo_placement_free(&pm->p);
	llmp_plan_destroy(pm->plan);
	free(pm->stage_gpus);
	if (pm->hosts)
		hostlist_free(pm->hosts, pm->nhosts);
	free(pm->tasks);
	topo_free(&pm->t);
	free(pm);
}

static void forget(struct plugin_machines *pm)
{
	topo_placement_free(&pm->p);
	memset(&pm->p, 0, sizeof pm->p);
	llmp_plan_destroy(pm->plan);
	free(pm->stage_gpus);
	pm->plan = NULL, pm->stage_gpus = NULL, pm->cached = false;
}

static bool same_grid(const struct step_layout *a, const struct step_layout *b)
{
	return a->tp == b->tp && a->pp == b->pp && a->cp == b->cp && a->ep == b->ep && a->etp == b->etp &&
	       a->vpp == b->vpp;
}

/* The plan of l's grid (a default spec: tp=pp=1 when l is NULL) placed on the hosts, each stage's GPU. */
static llmp_status place(struct plugin_machines *pm, const struct step_layout *l)
{
	if (pm->cached && l && same_grid(&pm->key, l))
		return pm->st;
	forget(pm);
	llmp_spec spec;
	llmp_spec_init(&spec);
	if (l) {
		spec.size[LLMP_DIM_TP] = l->tp, spec.size[LLMP_DIM_PP] = l->pp,
		spec.size[LLMP_DIM_CP] = l->cp;
		spec.size[LLMP_DIM_EP] = l->ep, spec.etp = l->etp, spec.vpp = l->vpp > 1 ? l->vpp : 0;
		spec.given = 1u << LLMP_KEY_TP | 1u << LLMP_KEY_PP | 1u << LLMP_KEY_CP | 1u << LLMP_KEY_EP |
			     1u << LLMP_KEY_ETP | (l->vpp > 1 ? 1u << LLMP_KEY_VPP : 0);
		pm->key = *l;
	}
	pm->cached = l != NULL;
	unsigned pp = l ? l->pp : 1;
	pm->stage_gpus = calloc(pp, sizeof *pm->stage_gpus);
	pm->st = pm->stage_gpus ? llmp_plan_create(&spec, pm->world, pm->per_node, &pm->plan, pm->msg,
						   sizeof pm->msg)
				: llmp_fail(LLMP_ERR_NOMEM, pm->msg, sizeof pm->msg, "out of memory");
	if (pm->st == LLMP_OK)
		pm->st = topo_place(&pm->t, pm->plan, pm->hosts, pm->nhosts, pm->tasks, pm->renumber, &pm->p,
				    pm->msg, sizeof pm->msg);
	if (pm->st == LLMP_OK)
		pm->st = hetero_stage_gpus(&pm->t, &pm->p, pm->plan, pm->has_fallback ? &pm->fallback : NULL,
					   pm->stage_gpus, pm->msg, sizeof pm->msg);
	return pm->st;
}

static llmp_status machines_place(void *ctx, const struct step_layout *l, double network_s[5],
				  struct gpu_desc *stage_gpus, char *msg, size_t len)
{
	struct plugin_machines *pm = ctx;
	struct topo_cost cost;
	struct topo_model model = pm->model;
	model.mbs = l->mbs;
	llmp_status st = place(pm, l);
	if (st != LLMP_OK)
		return llmp_fail(st, msg, len, "%s", pm->msg);
	st = topo_cost(&pm->t, pm->plan, &pm->p, &model, &cost, msg, len);
	if (st != LLMP_OK)
		return st;
	static const enum llmp_axis axes[5] = { LLMP_AXIS_TP, LLMP_AXIS_CP, LLMP_AXIS_EP, LLMP_AXIS_DP,
						LLMP_AXIS_PP };
	for (int k = 0; k < 5; k++) {
		network_s[k] = 0;
		for (size_t d = 0; d < cost.ndims; d++)
			if (cost.dim[d].axis == axes[k])
				network_s[k] = cost.dim[d].seconds;
	}
	memcpy(stage_gpus, pm->stage_gpus, l->pp * sizeof *stage_gpus);
	return LLMP_OK;
}

/* The step's hosts and tasks from Slurm's strings, checked against Slurm's counts. */
static int step_hosts(struct plugin_machines *pm, const struct plugin_machines_request *rq, char *msg,
		      size_t len)
{
	char why[LLMP_MSG_MAX];
	if (!rq->nodelist || !rq->tasks_per_node) {
		snprintf(msg, len, "srun's environment does not say the step's nodes (SLURM_STEP_NODELIST)");
		return -1;
	}
	if (hostlist_expand(rq->nodelist, rq->nnodes ? rq->nnodes : 1, &pm->hosts, &pm->nhosts, why,
			    sizeof why) != LLMP_OK) {
		snprintf(msg, len, "the step's nodes '%.200s': %s", rq->nodelist, why);
		return -1;
	}
	if (pm->nhosts != rq->nnodes) {
		snprintf(msg, len, "the step's nodes '%.200s' are %zu, Slurm says %u", rq->nodelist,
			 pm->nhosts, rq->nnodes);
		return -1;
	}
	uint64_t sum = 0;
	if (!(pm->tasks = malloc(pm->nhosts * sizeof *pm->tasks)) ||
	    plugin_tasks_per_node_list(rq->tasks_per_node, pm->tasks, pm->nhosts) < 0) {
		snprintf(msg, len, "the step's tasks per node '%.200s' do not count %zu nodes",
			 rq->tasks_per_node, pm->nhosts);
		return -1;
	}
	pm->per_node = pm->tasks[0];
	for (size_t i = 0; i < pm->nhosts; i++) {
		sum += pm->tasks[i];
		if (pm->tasks[i] != pm->tasks[0])
			pm->per_node = 0;
	}
	if (sum != rq->world) {
		snprintf(msg, len, "the step's tasks per node '%.200s' add up to %llu, not %u tasks",
			 rq->tasks_per_node, (unsigned long long)sum, rq->world);
		return -1;
	}
	pm->world = rq->world;
	return 0;
}

struct plugin_machines *plugin_machines_open(const struct plugin_machines_request *rq,
					     const struct model_desc *m, struct gpu_desc *weakest, char *msg,
					     size_t len)
{
	struct plugin_machines *pm = calloc(1, sizeof *pm);
	char *text = NULL, why[LLMP_MSG_MAX];
	size_t n = 0;
	if (!pm) {
		snprintf(msg, len, "out of memory");
		return NULL;
	}
	pm->renumber = rq->renumber;
	pm->has_fallback = rq->fallback != NULL;
	if (rq->fallback)
		pm->fallback = *rq->fallback;
	pm->model = step_topo_model(m, m->mbs);
	int rc = step_hosts(pm, rq, msg, len);
	if (rc == 0 && (rc = read_topology(rq->file, &text, &n, msg, len)) == 0 &&
	    topo_read_text(text, n, rq->file, &pm->t, why, sizeof why) != LLMP_OK) {
		snprintf(msg, len, "%s", why);
		rc = -1;
	}
	free(text);
	/* The weakest GPU of the step: stage 0 of the plan without pipeline, every rank in it. */
	if (rc == 0 && place(pm, NULL) != LLMP_OK) {
		snprintf(msg, len, "%s: %s", rq->file, pm->msg);
		rc = -1;
	}
	if (rc < 0) {
		plugin_machines_close(pm);
		return NULL;
	}
	*weakest = pm->stage_gpus[0];
	forget(pm);
	pm->on = (struct auto_machines){ .place = machines_place, .ctx = pm };
	return pm;
}

const struct auto_machines *plugin_machines_of(const struct plugin_machines *pm)
{
	return &pm->on;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_place.c - the whole step on the topology, in each node's slurmstepd
 * (job_place.h): plan_place over the step's hosts and task counts, then
 * this node's share of the answer.
 *
 * plan_place counts task ids host by host (Slurm's block distribution);
 * a node whose tasks are numbered otherwise (-m cyclic) says so instead of
 * computing a placement that other nodes would not share. Each node checks
 * its own tasks, so a step placed at all has block ids everywhere.
 */
#define _GNU_SOURCE
#include "job_place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm_env.h"
#include "planner/cost.h"
#include "common/fail.h"
#include "common/hostlist.h"

void plugin_job_place_free(struct plugin_job_place *jp)
{
	free(jp->rank);
	memset(jp, 0, sizeof *jp);
}

/* This node's task ids must be the block ones: first, first + 1, ... */
static int check_block(const struct plugin_job_inputs *in, const uint32_t *tasks, char *msg, size_t len)
{
	uint32_t first = 0;
	for (uint32_t i = 0; i < in->node_id; i++)
		first += tasks[i];
	if (in->ntasks != tasks[in->node_id]) {
		snprintf(msg, len, "node %u has %u tasks, SLURM_STEP_TASKS_PER_NODE says %u", in->node_id,
			 in->ntasks, tasks[in->node_id]);
		return -1;
	}
	for (uint32_t i = 0; i < in->ntasks; i++)
		if (in->tasks[i] != first + i) {
			snprintf(msg, len,
				 "task %u is local task %u of node %u, where block distribution puts task "
				 "%u: the placement needs tasks in block order (srun -m block)",
				 in->tasks[i], i, in->node_id, first + i);
			return -1;
		}
	return 0;
}

/* This node's part of p into np and jp. */
static int take_share(struct plugin_node_place *np, struct plugin_job_place *jp,
		      const struct plan_placement *p, const struct plugin_job_inputs *in,
		      const llmp_plan *plan, char *const *hosts, char *msg, size_t len)
{
	size_t n = in->ntasks ? in->ntasks : 1;
	np->n = in->ntasks;
	np->gpu = malloc(n * sizeof *np->gpu);
	np->hca = malloc(n * sizeof *np->hca);
	jp->rank = malloc(n * sizeof *jp->rank);
	if (!np->gpu || !np->hca || !jp->rank) {
		snprintf(msg, len, "placement: out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < in->ntasks; i++) {
		uint32_t r = p->rank_of_task[in->tasks[i]];
		const struct plan_slot *s = &p->rank[r];
		jp->rank[i] = r;
		np->gpu[i] = s->gpu;
		np->hca[i] = s->hca;
		np->type = &np->topo.types[np->topo.nodes[s->node].type];
	}
	if (snprintf(jp->master, sizeof jp->master, "%s", hosts[p->rank[0].host]) >= (int)sizeof jp->master) {
		snprintf(msg, len, "placement: host name %.64s... is too long for MASTER_ADDR",
			 hosts[p->rank[0].host]);
		return -1;
	}
	jp->digest = plan_placement_digest(p);
	if (plan_span_advice(&np->topo, plan, p, jp->advice, sizeof jp->advice) < 0) {
		snprintf(msg, len, "placement: out of memory");
		return -1;
	}
	return 0;
}

int plugin_job_place(struct plugin_node_place *np, struct plugin_job_place *jp,
		     const struct plugin_job_inputs *in, const llmp_plan *plan, char *msg, size_t len)
{
	char **hosts = NULL;
	size_t nhosts = 0;
	uint32_t *tasks = NULL;
	struct plan_placement p = { 0 };
	int rc = -1;
	memset(np, 0, sizeof *np);
	memset(jp, 0, sizeof *jp);

	if (!in->nodelist || !in->tasks_per_node) {
		snprintf(msg, len, "SLURM_STEP_NODELIST or SLURM_STEP_TASKS_PER_NODE is not set");
		return -1;
	}
	llmp_status st = in->text ? topo_read_text(in->text, in->textlen, in->file, &np->topo, msg, len)
				  : topo_read_file(in->file, &np->topo, msg, len);
	if (st != LLMP_OK || hostlist_expand(in->nodelist, in->max_hosts ? in->max_hosts : 1u << 20, &hosts,
					     &nhosts, msg, len) != LLMP_OK)
		goto out;
	if (in->node_id >= nhosts) {
		snprintf(msg, len, "node %u is not in SLURM_STEP_NODELIST (%zu hosts)", in->node_id, nhosts);
		goto out;
	}
	if (!(tasks = malloc(nhosts * sizeof *tasks))) {
		snprintf(msg, len, "placement: out of memory");
		goto out;
	}
	if (plugin_tasks_per_node_list(in->tasks_per_node, tasks, nhosts) < 0) {
		char shown[104];
		snprintf(msg, len, "SLURM_STEP_TASKS_PER_NODE=%s does not count %zu nodes",
			 llmp_show_in(shown, sizeof shown, in->tasks_per_node, strlen(in->tasks_per_node)),
			 nhosts);
		goto out;
	}
	if (check_block(in, tasks, msg, len) < 0)
		goto out;
	char why[LLMP_MSG_MAX];
	if (plan_place(&np->topo, plan, hosts, nhosts, tasks, in->renumber, &p, why, sizeof why) != LLMP_OK) {
		snprintf(msg, len, "%s: %s", in->file, why);
		goto out;
	}
	rc = take_share(np, jp, &p, in, plan, hosts, msg, len);
out:
	plan_placement_free(&p);
	free(tasks);
	if (hosts)
		hostlist_free(hosts, nhosts);
	if (rc < 0) {
		plugin_node_place_free(np);
		plugin_job_place_free(jp);
	}
	return rc;
}

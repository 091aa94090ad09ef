/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * node_place.c - the GPU and HCA of each task of this node, from the
 * topology (planner/placement.h), once per step in slurmstepd.
 *
 * The node's description comes from the job's LLMP_TOPOLOGY_FILE, the
 * site's topology= file, or discovery of this node, without NVML: at every
 * step's start, and the GPU order here needs only NUMA and PCIe. Slurm numbers a step's
 * GPUs (CUDA_VISIBLE_DEVICES as it sets them) in PCI bus order, as its
 * gpu/nvml AutoDetect sorts them; the placement's GPU index is in the same
 * order, so it picks the entry of that list, when the step sees every GPU
 * of the node. Otherwise, or without a description, tasks take GPUs
 * in local order. A description that cannot be read is a warning in the
 * job's output, never a failed step.
 */
#define _GNU_SOURCE
#include "node_place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp_env.h>
#include "topology/discover/discover.h"
#include "planner/placement.h"

void plugin_node_place_free(struct plugin_node_place *np)
{
	free(np->gpu);
	free(np->hca);
	topo_free(&np->topo);
	memset(np, 0, sizeof *np);
}

static const struct topo_type *type_of(const struct topo *t, const char *host)
{
	for (size_t n = 0; n < t->nnodes; n++)
		if (strcmp(t->nodes[n].host, host) == 0)
			return &t->types[t->nodes[n].type];
	return NULL;
}

int plugin_node_place(struct plugin_node_place *np, const struct plugin_node_inputs *in,
		      const llmp_plan *plan, char *warning, size_t len)
{
	char msg[LLMP_MSG_MAX];
	llmp_status st;
	memset(np, 0, sizeof *np);
	warning[0] = '\0';
	if (in->file && *in->file) {
		st = in->text ? topo_read_text(in->text, in->textlen, in->file, &np->topo, msg, sizeof msg)
			      : topo_read_file(in->file, &np->topo, msg, sizeof msg);
		np->type = st == LLMP_OK ? type_of(&np->topo, in->host) : NULL;
		if (st != LLMP_OK)
			snprintf(warning, len, "topology %s", msg);
		else if (!np->type)
			snprintf(warning, len, "topology %s does not describe this node (%s)", in->file,
				 in->host);
	} else {
		st = topo_discover(in->sysfs ? in->sysfs : "/", in->addr, in->pattern, false, &np->topo, msg,
				   sizeof msg);
		np->type = st == LLMP_OK ? &np->topo.types[0] : NULL;
		if (st != LLMP_OK)
			snprintf(warning, len, "topology discovery: %s", msg);
	}
	if (!np->type)
		return -1;
	np->n = in->ntasks;
	np->gpu = malloc((np->n ? np->n : 1) * sizeof *np->gpu);
	np->hca = malloc((np->n ? np->n : 1) * sizeof *np->hca);
	if (!np->gpu || !np->hca ||
	    plan_place_node(np->type, plan, in->ranks, np->n, np->gpu, np->hca, msg, sizeof msg) != LLMP_OK) {
		snprintf(warning, len, "placement: %s", np->gpu && np->hca ? msg : "out of memory");
		plugin_node_place_free(np);
		return -1;
	}
	return 0;
}

int plugin_node_hca_list(const struct plugin_node_place *np, char *buf, size_t len)
{
	size_t off = 0;
	int rc = 0;
	buf[0] = '\0';
	/* The HCAs of all the node's tasks, in the node's order: the same list for every task of the node. */
	for (unsigned h = 0; h < np->type->nhcas && rc == 0; h++) {
		bool used = false;
		for (uint32_t k = 0; k < np->n && !used; k++)
			used = np->hca[k] == (int)h;
		if (!used)
			continue;
		int w = snprintf(buf + off, len - off, "%s%s", off ? "," : "=", np->type->hcas[h].name);
		if (w < 0 || (size_t)w >= len - off)
			rc = -1;
		else
			off += (size_t)w;
	}
	return off && rc == 0 ? 0 : -1;
}

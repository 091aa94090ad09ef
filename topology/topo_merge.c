/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_merge.c - a job's topology built node by node: each node discovers
 * itself (topology/discover/), and the runtime's one PMIx fence brings
 * every node's description to every rank, which merges them here.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo.h"

#include <stdlib.h>
#include <string.h>

#include "common/fail.h"

static bool copy_type(struct topo_type *to, const struct topo_type *from)
{
	*to = *from;
	to->gpus = NULL;
	to->hcas = NULL;
	to->ngpus = to->nhcas = 0;
	if (from->ngpus && !(to->gpus = calloc(from->ngpus, sizeof *to->gpus)))
		return false;
	for (unsigned g = 0; g < from->ngpus; g++, to->ngpus++) {
		to->gpus[g] = from->gpus[g];
		to->gpus[g].peers = NULL;
		if (from->gpus[g].npeers) {
			if (!(to->gpus[g].peers = malloc(from->gpus[g].npeers * sizeof *to->gpus[g].peers)))
				return false;
			memcpy(to->gpus[g].peers, from->gpus[g].peers,
			       from->gpus[g].npeers * sizeof *to->gpus[g].peers);
		}
	}
	if (from->nhcas && !(to->hcas = calloc(from->nhcas, sizeof *to->hcas)))
		return false;
	for (unsigned h = 0; h < from->nhcas; h++, to->nhcas++) {
		to->hcas[h] = from->hcas[h];
		to->hcas[h].ports = NULL;
		if (from->hcas[h].nports) {
			if (!(to->hcas[h].ports = malloc(from->hcas[h].nports * sizeof *to->hcas[h].ports)))
				return false;
			memcpy(to->hcas[h].ports, from->hcas[h].ports,
			       from->hcas[h].nports * sizeof *to->hcas[h].ports);
		}
	}
	return true;
}

static long switch_named(const struct topo *t, const char *name)
{
	for (size_t s = 0; s < t->nswitches; s++)
		if (strcmp(t->switches[s].name, name) == 0)
			return (long)s;
	return -1;
}

llmp_status topo_merge(struct topo *whole, const struct topo *part, char *msg, size_t len)
{
	long *sw_at = calloc(part->nswitches ? part->nswitches : 1, sizeof *sw_at);
	unsigned first_type = whole->ntypes;
	llmp_status st = LLMP_OK;
	if (!sw_at)
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "merging topologies: out of memory");
	whole->version = TOPO_VERSION;
	/* Switches: one of the same name must sit under the same parent, leaf or not alike. */
	for (size_t s = 0; st == LLMP_OK && s < part->nswitches; s++) {
		const struct topo_switch *ps = &part->switches[s];
		const char *parent = ps->parent >= 0 ? part->switches[ps->parent].name : NULL;
		long at = switch_named(whole, ps->name);
		if (at >= 0) {
			const struct topo_switch *ws = &whole->switches[at];
			const char *wparent = ws->parent >= 0 ? whole->switches[ws->parent].name : NULL;
			if (ws->leaf != ps->leaf || !parent != !wparent ||
			    (parent && strcmp(parent, wparent) != 0))
				st = llmp_fail(
					LLMP_ERR_MISMATCH, msg, len,
					"nodes disagree on switch %s: under %s for one, under %s for another",
					ps->name, wparent ? wparent : "nothing", parent ? parent : "nothing");
			sw_at[s] = at;
			continue;
		}
		struct topo_switch *grown = realloc(whole->switches, (whole->nswitches + 1) * sizeof *grown);
		if (!grown) {
			st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "merging topologies: out of memory");
			break;
		}
		whole->switches = grown;
		whole->switches[whole->nswitches] = *ps;
		/* A parent comes before its children in a discovered node (slurm_addr.c); else look it up. */
		whole->switches[whole->nswitches].parent = ps->parent < 0 ? -1
							   : (size_t)ps->parent < s
								   ? sw_at[ps->parent]
								   : switch_named(whole, parent);
		sw_at[s] = (long)whole->nswitches++;
	}
	/* Node types, under their own names: a name already used is a mistake (two nodes of one name). */
	for (unsigned k = 0; st == LLMP_OK && k < part->ntypes; k++) {
		for (unsigned w = 0; w < whole->ntypes; w++)
			if (strcmp(whole->types[w].name, part->types[k].name) == 0)
				st = llmp_fail(LLMP_ERR_MISMATCH, msg, len, "two nodes describe node type %s",
					       part->types[k].name);
		struct topo_type *grown = st == LLMP_OK
						  ? realloc(whole->types, (whole->ntypes + 1) * sizeof *grown)
						  : NULL;
		if (st == LLMP_OK && !grown)
			st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "merging topologies: out of memory");
		if (st != LLMP_OK)
			break;
		whole->types = grown;
		bool copied = copy_type(&whole->types[whole->ntypes], &part->types[k]);
		whole->ntypes++; /* counted even when half copied, so topo_free frees it */
		if (!copied)
			st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "merging topologies: out of memory");
	}
	for (size_t n = 0; st == LLMP_OK && n < part->nnodes; n++) {
		for (size_t w = 0; w < whole->nnodes; w++)
			if (strcmp(whole->nodes[w].host, part->nodes[n].host) == 0)
				st = llmp_fail(LLMP_ERR_MISMATCH, msg, len, "host %s is described twice",
					       part->nodes[n].host);
		struct topo_node *grown = st == LLMP_OK
						  ? realloc(whole->nodes, (whole->nnodes + 1) * sizeof *grown)
						  : NULL;
		if (st == LLMP_OK && !grown)
			st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "merging topologies: out of memory");
		if (st != LLMP_OK)
			break;
		whole->nodes = grown;
		struct topo_node *node = &whole->nodes[whole->nnodes++];
		*node = part->nodes[n];
		node->type = first_type + part->nodes[n].type;
		node->leaf = part->nodes[n].leaf >= 0 ? sw_at[part->nodes[n].leaf] : -1;
	}
	free(sw_at);
	return st;
}

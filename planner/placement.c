/* SPDX-License-Identifier: BSD-3-Clause */
/* placement.c - ranks on hosts, GPUs and HCAs (placement.h). */
#define _GNU_SOURCE /* qsort_r */
#include "placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "topology/pci_path.h"

/* The dimensions from the most bytes per step to the least (cost.h). */
static const enum llmp_axis by_traffic[] = { LLMP_AXIS_TP, LLMP_AXIS_CP, LLMP_AXIS_EP, LLMP_AXIS_DP,
					     LLMP_AXIS_PP };

/* A node's multi-node NVLink domain: its own, else its GPUs' when they agree; "" none. */
static const char *domain_of(const struct topo *t, size_t node)
{
	const struct topo_node *n = &t->nodes[node];
	const struct topo_type *ty = &t->types[n->type];
	if (n->domain[0])
		return n->domain;
	if (ty->ngpus == 0 || !ty->gpus[0].domain[0])
		return "";
	for (unsigned g = 1; g < ty->ngpus; g++)
		if (strcmp(ty->gpus[g].domain, ty->gpus[0].domain) != 0)
			return "";
	return ty->gpus[0].domain;
}

/* ------------------------------------------------------- node order */

struct node_key {
	uint32_t host;
	size_t node;
	const char *domain;
	const char *path[TOPO_PCIE_MAX * 2]; /* switch names from the root down to the leaf */
	unsigned depth;
};

static int by_topology(const void *pa, const void *pb)
{
	const struct node_key *a = pa, *b = pb;
	int c = strcmp(a->domain, b->domain);
	if (c)
		return c;
	/* Hosts in a tree before hosts in none; then the tree from the top. */
	if (!a->depth != !b->depth)
		return a->depth ? -1 : 1;
	for (unsigned i = 0; i < a->depth && i < b->depth; i++)
		if ((c = strcmp(a->path[i], b->path[i])))
			return c;
	if (a->depth != b->depth)
		return a->depth < b->depth ? -1 : 1;
	return a->host < b->host ? -1 : a->host > b->host; /* Slurm's order inside a leaf */
}

static void fill_key(const struct topo *t, struct node_key *k)
{
	const char *up[TOPO_PCIE_MAX * 2];
	unsigned n = 0;
	k->domain = domain_of(t, k->node);
	for (long s = t->nodes[k->node].leaf; s >= 0 && n < sizeof up / sizeof up[0];
	     s = t->switches[s].parent)
		up[n++] = t->switches[s].name;
	for (unsigned i = 0; i < n; i++)
		k->path[i] = up[n - 1 - i];
	k->depth = n;
}

/* ------------------------------------------------------ inside a node */

/* GPUs by locality: NUMA node, then the bridges above them, then bus id. */
static int by_locality(const void *pa, const void *pb, void *type)
{
	const struct topo_type *ty = type;
	const struct topo_gpu *a = &ty->gpus[*(const int *)pa], *b = &ty->gpus[*(const int *)pb];
	if (a->pci.numa != b->pci.numa)
		return a->pci.numa < b->pci.numa ? -1 : 1;
	for (unsigned i = 0; i < a->pci.npcie && i < b->pci.npcie; i++) {
		int c = strcmp(a->pci.pcie[i], b->pci.pcie[i]);
		if (c)
			return c;
	}
	if (a->pci.npcie != b->pci.npcie)
		return a->pci.npcie < b->pci.npcie ? -1 : 1;
	return strcmp(a->pci.bus, b->pci.bus);
}

struct local_rank {
	uint32_t rank;
	uint64_t key;
};

static int by_key(const void *pa, const void *pb)
{
	const struct local_rank *a = pa, *b = pb;
	return a->key < b->key ? -1 : a->key > b->key;
}

/* tp as the fastest digit, then cp, ep, dp, pp: a tp group's ranks side by side. */
static uint64_t traffic_key(const llmp_plan *plan, uint32_t rank)
{
	uint32_t coords[LLMP_NAXES];
	uint64_t key = 0;
	llmp_plan_coords(plan, rank, coords);
	for (int i = (int)(sizeof by_traffic / sizeof by_traffic[0]) - 1; i >= 0; i--)
		key = key * llmp_plan_size(plan, by_traffic[i]) + coords[by_traffic[i]];
	return key;
}

llmp_status plan_place_node(const struct topo_type *ty, const llmp_plan *plan, const uint32_t *ranks,
			    uint32_t n, int *gpu, int *hca, char *msg, size_t len)
{
	struct local_rank *order = malloc((n ? n : 1) * sizeof *order);
	int *gpus = malloc((ty->ngpus ? ty->ngpus : 1) * sizeof *gpus);
	unsigned *load = calloc(ty->nhcas ? ty->nhcas : 1, sizeof *load);
	if (!order || !gpus || !load) {
		free(order);
		free(gpus);
		free(load);
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "placement: out of memory");
	}
	/* order[].rank holds the task's index in ranks[] here. */
	for (uint32_t i = 0; i < n; i++)
		order[i] = (struct local_rank){ .rank = i, .key = traffic_key(plan, ranks[i]) };
	qsort(order, n, sizeof *order, by_key);
	for (unsigned g = 0; g < ty->ngpus; g++)
		gpus[g] = (int)g;
	if (ty->ngpus)
		qsort_r(gpus, ty->ngpus, sizeof *gpus, by_locality, (void *)ty);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = order[i].rank;
		gpu[k] = i < ty->ngpus ? gpus[i] : -1;
		hca[k] = -1;
		/* NCCL's path type first, then where they meet (deeper is nearer), then load. */
		enum topo_path best = TOPO_PATH_SYS;
		int best_common = -1;
		for (unsigned h = 0; h < ty->nhcas; h++) {
			if (!topo_hca_usable(&ty->hcas[h]))
				continue;
			int common = -1;
			enum topo_path d = gpu[k] >= 0 ? topo_nccl_path(&ty->gpus[gpu[k]].pci,
									&ty->hcas[h].pci, &common)
						       : TOPO_PATH_SYS;
			if (hca[k] < 0 || d < best || (d == best && common > best_common) ||
			    (d == best && common == best_common && load[h] < load[hca[k]])) {
				hca[k] = (int)h;
				best = d;
				best_common = common;
			}
		}
		if (hca[k] >= 0)
			load[hca[k]]++;
	}
	free(order);
	free(gpus);
	free(load);
	return LLMP_OK;
}

/* GPUs and HCAs for the ranks [first, first + n) of one host. */
static llmp_status place_node(const struct topo *t, const llmp_plan *plan, struct plan_placement *p,
			      uint32_t first, uint32_t n, char *msg, size_t len)
{
	const struct topo_type *ty = &t->types[t->nodes[p->rank[first].node].type];
	uint32_t *ranks = malloc((n ? n : 1) * sizeof *ranks);
	int *gpu = malloc((n ? n : 1) * sizeof *gpu), *hca = malloc((n ? n : 1) * sizeof *hca);
	llmp_status st = ranks && gpu && hca
				 ? LLMP_OK
				 : llmp_fail(LLMP_ERR_NOMEM, msg, len, "placement: out of memory");
	for (uint32_t i = 0; st == LLMP_OK && i < n; i++)
		ranks[i] = first + i;
	if (st == LLMP_OK)
		st = plan_place_node(ty, plan, ranks, n, gpu, hca, msg, len);
	for (uint32_t i = 0; st == LLMP_OK && i < n; i++) {
		p->rank[first + i].gpu = gpu[i];
		p->rank[first + i].hca = hca[i];
	}
	free(ranks);
	free(gpu);
	free(hca);
	return st;
}

/* ------------------------------------------------------------- placing */

llmp_status plan_place(const struct topo *t, const llmp_plan *plan, char *const *hosts, size_t nhosts,
		       const uint32_t *tasks, bool renumber, struct plan_placement *out, char *msg,
		       size_t len)
{
	char shown[LLMP_SHOW_MAX];
	uint64_t total = 0;
	uint32_t world = llmp_plan_world(plan);
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < nhosts; i++)
		total += tasks[i];
	if (total != world)
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "placement: %llu tasks on the hosts, the layout has %u ranks",
				 (unsigned long long)total, world);
	struct topo_name_index *sorted = malloc((t->nnodes ? t->nnodes : 1) * sizeof *sorted);
	struct node_key *keys = malloc((nhosts ? nhosts : 1) * sizeof *keys);
	bool *taken = calloc(t->nnodes ? t->nnodes : 1, sizeof *taken); /* a host listed twice */
	out->rank = calloc(world ? world : 1, sizeof *out->rank);
	out->rank_of_task = calloc(world ? world : 1, sizeof *out->rank_of_task);
	llmp_status st = LLMP_OK;
	if (!sorted || !keys || !taken || !out->rank || !out->rank_of_task)
		st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "placement: out of memory");
	/* Hosts to nodes of the topology, by name. */
	if (st == LLMP_OK) {
		for (size_t i = 0; i < t->nnodes; i++)
			sorted[i] = (struct topo_name_index){ .name = t->nodes[i].host, .index = i };
		topo_names_sort(sorted, t->nnodes);
	}
	for (size_t i = 0; st == LLMP_OK && i < nhosts; i++) {
		long hit = topo_names_find(sorted, t->nnodes, hosts[i]);
		if (hit < 0)
			st = llmp_fail(LLMP_ERR_ARG, msg, len, "placement: host %s is not in the topology",
				       llmp_show(shown, hosts[i], strlen(hosts[i])));
		else {
			keys[i] = (struct node_key){ .host = (uint32_t)i, .node = (size_t)hit };
			fill_key(t, &keys[i]);
		}
		if (st == LLMP_OK && taken[keys[i].node])
			st = llmp_fail(LLMP_ERR_ARG, msg, len, "placement: host %s is listed twice",
				       llmp_show(shown, hosts[i], strlen(hosts[i])));
		else if (st == LLMP_OK)
			taken[keys[i].node] = true;
	}
	free(taken);
	uint32_t *first_task = malloc((nhosts ? nhosts : 1) * sizeof *first_task);
	if (st == LLMP_OK && !first_task)
		st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "placement: out of memory");
	if (st == LLMP_OK) {
		for (size_t i = 0, task = 0; i < nhosts; task += tasks[i], i++)
			first_task[i] = (uint32_t)task;
		if (renumber)
			qsort(keys, nhosts, sizeof *keys, by_topology);
		/* Grid ranks host by host in the chosen order; a host's ranks are consecutive. */
		uint32_t rank = 0;
		for (size_t k = 0; k < nhosts; k++) {
			uint32_t h = keys[k].host, first = rank;
			for (uint32_t l = 0; l < tasks[h]; l++, rank++) {
				out->rank[rank] = (struct plan_slot){ .task = first_task[h] + l,
								      .host = h,
								      .node = keys[k].node,
								      .local = l,
								      .gpu = -1,
								      .hca = -1 };
				out->rank_of_task[first_task[h] + l] = rank;
			}
			if (tasks[h] && (st = place_node(t, plan, out, first, tasks[h], msg, len)) != LLMP_OK)
				break;
		}
	}
	out->world = world;
	free(first_task);
	free(sorted);
	free(keys);
	if (st != LLMP_OK)
		plan_placement_free(out);
	return st;
}

void plan_placement_free(struct plan_placement *p)
{
	free(p->rank);
	free(p->rank_of_task);
	memset(p, 0, sizeof *p);
}

/* FNV-1a over the four bytes of w, least significant first. */
static uint64_t fnv_word(uint64_t h, uint32_t w)
{
	for (int b = 0; b < 4; b++) {
		h ^= (w >> (8 * b)) & 0xffu;
		h *= 0x100000001b3u;
	}
	return h;
}

uint64_t plan_placement_digest(const struct plan_placement *p)
{
	uint64_t h = fnv_word(0xcbf29ce484222325u, p->world);
	for (uint32_t t = 0; t < p->world; t++)
		h = fnv_word(h, p->rank_of_task[t]);
	return h;
}

/* ---------------------------------------------------------------- spans */

const char *plan_span_name(enum plan_span s)
{
	static const char *const names[] = { "gpu", "node", "nvlink-domain", "leaf", "tree", "none" };
	return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

enum plan_span plan_group_span(const struct topo *t, const struct plan_placement *p, const uint32_t *members,
			       size_t n)
{
	if (n <= 1)
		return PLAN_SPAN_GPU;
	size_t node0 = p->rank[members[0]].node;
	const char *domain = domain_of(t, node0);
	long leaf = t->nodes[node0].leaf;
	bool one_node = true, one_domain = domain[0] != '\0', one_leaf = leaf >= 0;
	for (size_t i = 1; i < n; i++) {
		size_t node = p->rank[members[i]].node;
		one_node &= node == node0;
		one_domain &= strcmp(domain_of(t, node), domain) == 0;
		one_leaf &= t->nodes[node].leaf == leaf;
	}
	if (one_node)
		return PLAN_SPAN_NODE;
	if (one_domain)
		return PLAN_SPAN_NVLINK_DOMAIN;
	if (one_leaf)
		return PLAN_SPAN_LEAF;
	/* One tree: every member's root is the first one's. */
	long root = leaf;
	while (root >= 0 && t->switches[root].parent >= 0)
		root = t->switches[root].parent;
	for (size_t i = 0; root >= 0 && i < n; i++) {
		long r = t->nodes[p->rank[members[i]].node].leaf;
		while (r >= 0 && t->switches[r].parent >= 0)
			r = t->switches[r].parent;
		if (r != root)
			return PLAN_SPAN_NONE;
	}
	return root >= 0 ? PLAN_SPAN_TREE : PLAN_SPAN_NONE;
}

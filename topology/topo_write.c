/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_write.c - a topology written out: as JSON in the format it is read
 * in (doc/topology-json.md; reading back gives the same topology), and as
 * text for people. And how near two devices of a node are.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo.h"

#include "pci_path.h"

#include "common/hostlist.h"
#include "common/json_writer.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- PCIe distance */

enum topo_distance topo_pci_distance(const struct topo_pci *a, const struct topo_pci *b)
{
	unsigned common = 0;
	while (common < a->npcie && common < b->npcie && strcmp(a->pcie[common], b->pcie[common]) == 0)
		common++;
	if (a->npcie && b->npcie && common == a->npcie && common == b->npcie)
		return TOPO_PIX; /* the same bridge right above both */
	if (common >= 2)
		return TOPO_PXB; /* bridges that meet below the root port */
	if (common == 1)
		return TOPO_PHB; /* one root port */
	if (a->numa >= 0 && a->numa == b->numa)
		return TOPO_NODE;
	return TOPO_SYS;
}

const char *topo_distance_name(enum topo_distance d)
{
	static const char *const names[] = { "PIX", "PXB", "PHB", "NODE", "SYS" };
	return (unsigned)d < sizeof names / sizeof names[0] ? names[d] : "?";
}

bool topo_port_usable(const struct topo_port *p)
{
	return strcmp(p->state, "ACTIVE") == 0 &&
	       (strcmp(p->link, "InfiniBand") == 0 || strcmp(p->link, "Ethernet") == 0);
}

bool topo_subnet_valid(const char *s)
{
	for (unsigned i = 0; i < TOPO_SUBNET_MAX - 1; i++) {
		bool colon = i % 5 == 4;
		if (colon ? s[i] != ':' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return s[TOPO_SUBNET_MAX - 1] == '\0';
}

bool topo_hca_usable(const struct topo_hca *h)
{
	for (unsigned p = 0; p < h->nports; p++)
		if (topo_port_usable(&h->ports[p]))
			return true;
	return false;
}

/* ------------------------------------------------------------------ JSON */

/* The NUMA node and PCIe bridges of a device, each field after ", ". */
static void put_place(FILE *out, const struct topo_pci *pci)
{
	if (pci->numa >= 0)
		fprintf(out, ", \"numa\": %d", pci->numa);
	if (pci->npcie) {
		fputs(", \"pcie\": [", out);
		for (unsigned i = 0; i < pci->npcie; i++)
			fprintf(out, "%s\"%s\"", i ? ", " : "", pci->pcie[i]);
		fputc(']', out);
	}
}

static void put_gpu(FILE *out, const struct topo_gpu *g)
{
	fprintf(out, "        {\"bus\": \"%s\"", g->pci.bus); /* a GPU always has one */
	put_place(out, &g->pci);
	if (g->model[0]) {
		fputs(", \"model\": ", out);
		json_write_escaped(out, g->model);
	}
	if (g->uuid[0])
		fprintf(out, ", \"uuid\": \"%s\"", g->uuid);
	if (g->nvlink == TOPO_NVLINK_SWITCH) {
		fputs(", \"nvlink\": \"nvswitch\"", out);
	} else if (g->nvlink == TOPO_NVLINK_PEERS) {
		fputs(", \"nvlink\": [", out);
		for (unsigned i = 0; i < g->npeers; i++)
			fprintf(out, "%s\"%s\"", i ? ", " : "", g->peers[i]);
		fputc(']', out);
	} else if (g->nvlink == TOPO_NVLINK_NONE) {
		fputs(", \"nvlink\": \"none\"", out);
	}
	if (g->nvlinks)
		fprintf(out, ", \"nvlinks\": %u", g->nvlinks);
	if (g->domain[0])
		fprintf(out, ", \"domain\": \"%s\"", g->domain);
	fputc('}', out);
}

static void put_hca(FILE *out, const struct topo_hca *h)
{
	fprintf(out, "        {\"name\": \"%s\"", h->name);
	if (h->pci.bus[0])
		fprintf(out, ", \"bus\": \"%s\"", h->pci.bus);
	put_place(out, &h->pci);
	fputs(", \"ports\": [", out);
	for (unsigned i = 0; i < h->nports; i++) {
		const struct topo_port *p = &h->ports[i];
		fprintf(out, "%s{\"port\": %u, \"state\": \"%s\"", i ? ", " : "", p->port, p->state);
		if (p->gbps)
			fprintf(out, ", \"gbps\": %u", p->gbps);
		if (p->link[0])
			fprintf(out, ", \"link\": \"%s\"", p->link);
		if (p->netdev[0])
			fprintf(out, ", \"netdev\": \"%s\"", p->netdev);
		if (p->subnet[0])
			fprintf(out, ", \"subnet\": \"%s\"", p->subnet);
		fputc('}', out);
	}
	fputs("]}", out);
}

/* The hosts (or child switches) of switch sw as a quoted Slurm host list; list holds as many names. */
static void put_members(FILE *out, const struct topo *t, size_t sw, const char **list)
{
	size_t n = 0;
	if (t->switches[sw].leaf) {
		for (size_t i = 0; i < t->nnodes; i++)
			if (t->nodes[i].leaf == (long)sw)
				list[n++] = t->nodes[i].host;
	} else {
		for (size_t i = 0; i < t->nswitches; i++)
			if (t->switches[i].parent == (long)sw)
				list[n++] = t->switches[i].name;
	}
	fputc('"', out);
	hostlist_write(out, list, n);
	fputc('"', out);
}

int topo_write_json(const struct topo *t, FILE *out)
{
	size_t most = t->nnodes > t->nswitches ? t->nnodes : t->nswitches;
	const char **list = malloc((most ? most : 1) * sizeof *list);
	if (!list)
		return -1;
	fprintf(out, "{\n  \"llmp_topology\": %d,\n", TOPO_VERSION);
	if (t->source) {
		fputs("  \"source\": ", out);
		json_write_escaped(out, t->source);
		fputs(",\n", out);
	}
	fputs("  \"node_types\": {", out);
	for (unsigned i = 0; i < t->ntypes; i++) {
		const struct topo_type *ty = &t->types[i];
		fprintf(out, "%s\n    \"%s\": {\n      \"numa_nodes\": %u,\n", i ? "," : "", ty->name,
			ty->numa_nodes);
		if (ty->gpu[0]) {
			fputs("      \"gpu\": ", out);
			json_write_escaped(out, ty->gpu);
			fputs(",\n", out);
		}
		fputs("      \"gpus\": [", out);
		for (unsigned g = 0; g < ty->ngpus; g++) {
			fputs(g ? ",\n" : "\n", out);
			put_gpu(out, &ty->gpus[g]);
		}
		fputs(ty->ngpus ? "\n      ],\n      \"hcas\": [" : "],\n      \"hcas\": [", out);
		for (unsigned h = 0; h < ty->nhcas; h++) {
			fputs(h ? ",\n" : "\n", out);
			put_hca(out, &ty->hcas[h]);
		}
		fputs(ty->nhcas ? "\n      ]\n    }" : "]\n    }", out);
	}
	fputs("\n  },\n  \"nodes\": [", out);
	/* Consecutive hosts of one type and domain share an entry. */
	for (size_t i = 0, first = 0; i < t->nnodes; i = first) {
		const struct topo_node *n = &t->nodes[i];
		for (first = i; first < t->nnodes && t->nodes[first].type == n->type &&
				strcmp(t->nodes[first].domain, n->domain) == 0;
		     first++)
			list[first - i] = t->nodes[first].host;
		fprintf(out, "%s\n    {\"hosts\": \"", i ? "," : "");
		hostlist_write(out, list, first - i);
		fprintf(out, "\", \"type\": \"%s\"", t->types[n->type].name);
		if (n->domain[0])
			fprintf(out, ", \"domain\": \"%s\"", n->domain);
		fputc('}', out);
	}
	fputs("\n  ],\n  \"switches\": [", out);
	for (size_t i = 0; i < t->nswitches; i++) {
		fprintf(out, "%s\n    {\"name\": \"%s\", \"%s\": ", i ? "," : "", t->switches[i].name,
			t->switches[i].leaf ? "nodes" : "switches");
		put_members(out, t, i, list);
		fputc('}', out);
	}
	fputs("\n  ]\n}\n", out);
	free(list);
	return ferror(out) ? -1 : 0;
}

/* ------------------------------------------------------------------ text */

/* The usable HCA nearest to pci in NCCL's path types (first of the nearest), or -1; its path in *d. */
static int nearest_hca(const struct topo_type *ty, const struct topo_pci *pci, enum topo_path *d)
{
	int best = -1, best_common = -1;
	for (unsigned h = 0; h < ty->nhcas; h++) {
		if (!topo_hca_usable(&ty->hcas[h]))
			continue;
		int common;
		enum topo_path here = topo_nccl_path(pci, &ty->hcas[h].pci, &common);
		if (best < 0 || here < *d || (here == *d && common > best_common)) {
			best = (int)h;
			*d = here;
			best_common = common;
		}
	}
	return best;
}

static void write_type(const struct topo *t, unsigned k, FILE *out)
{
	const struct topo_type *ty = &t->types[k];
	size_t hosts = 0;
	for (size_t i = 0; i < t->nnodes; i++)
		hosts += t->nodes[i].type == k;
	fprintf(out, "node type %s: %zu host%s, %u NUMA node%s, %u GPU%s, %u HCA%s\n", ty->name, hosts,
		hosts == 1 ? "" : "s", ty->numa_nodes, ty->numa_nodes == 1 ? "" : "s", ty->ngpus,
		ty->ngpus == 1 ? "" : "s", ty->nhcas, ty->nhcas == 1 ? "" : "s");
	if (ty->gpu[0])
		fprintf(out, "  step model's GPU: %s\n", ty->gpu);
	if (ty->ngpus)
		fprintf(out, "  %-4s %-13s %-4s %-9s %-22s %s\n", "gpu", "bus", "numa", "nvlink",
			"nearest HCA", "model");
	for (unsigned g = 0; g < ty->ngpus; g++) {
		const struct topo_gpu *gpu = &ty->gpus[g];
		enum topo_path d = TOPO_PATH_SYS;
		int h = nearest_hca(ty, &gpu->pci, &d);
		char near[TOPO_NAME_MAX + 16] = "-", nv[16] = "?";
		if (h >= 0)
			snprintf(near, sizeof near, "%s (%s)", ty->hcas[h].name, topo_path_name(d));
		if (gpu->nvlink == TOPO_NVLINK_NONE)
			snprintf(nv, sizeof nv, "none");
		else if (gpu->nvlink == TOPO_NVLINK_SWITCH)
			snprintf(nv, sizeof nv, "nvswitch");
		else if (gpu->nvlink == TOPO_NVLINK_PEERS)
			snprintf(nv, sizeof nv, "%u peer%s", gpu->npeers, gpu->npeers == 1 ? "" : "s");
		fprintf(out, "  %-4u %-13s %-4d %-9s %-22s %s\n", g, gpu->pci.bus, gpu->pci.numa, nv, near,
			gpu->model[0] ? gpu->model : "-");
	}
	if (ty->nhcas)
		fprintf(out, "  %-10s %-13s %-4s %s\n", "hca", "bus", "numa", "ports");
	for (unsigned h = 0; h < ty->nhcas; h++) {
		const struct topo_hca *hca = &ty->hcas[h];
		fprintf(out, "  %-10s %-13s %-4d", hca->name, hca->pci.bus[0] ? hca->pci.bus : "-",
			hca->pci.numa);
		for (unsigned p = 0; p < hca->nports; p++) {
			const struct topo_port *port = &hca->ports[p];
			fprintf(out, " %u:%s", port->port, port->state);
			if (port->gbps)
				fprintf(out, ",%uG", port->gbps);
			if (port->link[0])
				fprintf(out, ",%s", port->link);
			if (port->netdev[0])
				fprintf(out, ",%s", port->netdev);
		}
		fputc('\n', out);
	}
}

static void write_switch(const struct topo *t, size_t sw, unsigned depth, FILE *out)
{
	size_t hosts = 0;
	for (size_t i = 0; i < t->nnodes; i++)
		hosts += t->nodes[i].leaf == (long)sw;
	fprintf(out, "  %*s%s", (int)(2 * depth), "", t->switches[sw].name);
	if (t->switches[sw].leaf)
		fprintf(out, ": %zu host%s", hosts, hosts == 1 ? "" : "s");
	fputc('\n', out);
	for (size_t i = 0; depth < 64 && i < t->nswitches; i++)
		if (t->switches[i].parent == (long)sw)
			write_switch(t, i, depth + 1, out);
}

int topo_write_text(const struct topo *t, FILE *out)
{
	size_t untreed = 0;
	for (unsigned k = 0; k < t->ntypes; k++)
		write_type(t, k, out);
	fprintf(out, "hosts: %zu", t->nnodes);
	for (size_t i = 0; i < t->nnodes && i < 8; i++)
		fprintf(out, "%s%s", i ? " " : " (", t->nodes[i].host);
	fputs(t->nnodes > 8 ? " ...)\n" : t->nnodes ? ")\n" : "\n", out);
	if (t->nswitches) {
		fputs("switch tree:\n", out);
		for (size_t i = 0; i < t->nswitches; i++)
			if (t->switches[i].parent < 0)
				write_switch(t, i, 0, out);
	}
	for (size_t i = 0; i < t->nnodes; i++)
		untreed += t->nodes[i].leaf < 0;
	if (t->nswitches && untreed)
		fprintf(out, "  (%zu host%s under no switch)\n", untreed, untreed == 1 ? "" : "s");
	if (t->note[0])
		fprintf(out, "NVLink not read: %s\n", t->note);
	return ferror(out) ? -1 : 0;
}

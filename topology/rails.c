/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rails.c - rail consistency across nodes. Each node's GPUs in bus order
 * are its rails; a rail's HCA is the one nearest the GPU in NCCL's path
 * types, then meeting deepest (the HCA NCCL and the plugin give it),
 * whether its ports are up or not: a DOWN port must be named, not
 * skipped. For each rail and port number the most common link layer and
 * rate among the nodes is the rail's; every port that differs, or is not
 * ACTIVE, is a line. So is a port whose subnet (its GID prefix, where
 * known) differs from the one most of the rail's ports with a known subnet
 * share: NCCL pairs rail r with rail r, and two subnets without a router
 * between them do not reach each other.
 */
#define _POSIX_C_SOURCE 200809L
#include "rails.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "pci_path.h"

struct port_ref {
	const struct topo_node *node;
	const struct topo_hca *hca;
	const struct topo_port *port;
};

struct report {
	char *buf;
	size_t len, at;
	unsigned problems;
};

static void say(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct report *r, const char *fmt, ...)
{
	r->problems++;
	if (r->at + 4 >= r->len)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(r->buf + r->at, r->len - r->at, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= r->len - r->at - 1) {
		snprintf(r->buf + r->len - 4, 4, "...");
		r->at = r->len;
		return;
	}
	r->at += (size_t)k;
	r->buf[r->at++] = '\n';
	r->buf[r->at] = '\0';
}

/* The most common (link, gbps) among v[0..n); ties: the first seen. */
static void majority(const struct port_ref *v, size_t n, const char **link, unsigned *gbps, size_t *count)
{
	*count = 0;
	for (size_t i = 0; i < n; i++) {
		size_t c = 0;
		for (size_t j = 0; j < n; j++)
			c += strcmp(v[i].port->link, v[j].port->link) == 0 &&
			     v[i].port->gbps == v[j].port->gbps;
		if (c > *count) {
			*count = c;
			*link = v[i].port->link;
			*gbps = v[i].port->gbps;
		}
	}
}

/* The most common known subnet among v[0..n), and how many ports share it and know one. */
static const char *majority_subnet(const struct port_ref *v, size_t n, size_t *count, size_t *known)
{
	const char *best = NULL;
	*count = *known = 0;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].port->subnet[0])
			continue;
		(*known)++;
		size_t c = 0;
		for (size_t j = 0; j < n; j++)
			c += strcmp(v[i].port->subnet, v[j].port->subnet) == 0;
		if (c > *count) {
			*count = c;
			best = v[i].port->subnet;
		}
	}
	return best;
}

static void check_subnets(struct report *r, unsigned rail, unsigned port_no, const struct port_ref *v,
			  size_t n)
{
	size_t agree, known;
	const char *subnet = majority_subnet(v, n, &agree, &known);
	if (!subnet || agree == known)
		return;
	if (agree * 2 <= known && known > 2) {
		say(r, "rail %u port %u: no subnet shared by most nodes (%zu of %zu at most)", rail, port_no,
		    agree, known);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].port->subnet[0] && strcmp(v[i].port->subnet, subnet) != 0)
			say(r, "rail %u: %s %s port %u is on subnet %s where %zu of %zu nodes are on %s",
			    rail, v[i].node->host, v[i].hca->name, port_no, v[i].port->subnet, agree, known,
			    subnet);
}

static void check_rail(struct report *r, unsigned rail, unsigned port_no, const struct port_ref *v, size_t n)
{
	const char *link = "";
	unsigned gbps = 0;
	size_t agree;
	majority(v, n, &link, &gbps, &agree);
	for (size_t i = 0; i < n; i++) {
		const struct topo_port *p = v[i].port;
		if (strcmp(p->state, "ACTIVE") != 0)
			say(r, "rail %u: %s %s port %u is %s", rail, v[i].node->host, v[i].hca->name, port_no,
			    p->state);
		if (agree * 2 <= n && n > 2)
			continue; /* no majority to hold a port against: said once below */
		if (strcmp(p->link, link) != 0)
			say(r, "rail %u: %s %s port %u is %s where %zu of %zu nodes are %s", rail,
			    v[i].node->host, v[i].hca->name, port_no,
			    p->link[0] ? p->link : "of unknown link layer", agree, n,
			    link[0] ? link : "unknown");
		else if (p->gbps != gbps)
			say(r,
			    "rail %u: %s %s port %u at %u Gb/s where %zu of %zu nodes run %u Gb/s: a straggler",
			    rail, v[i].node->host, v[i].hca->name, port_no, p->gbps, agree, n, gbps);
	}
	if (agree * 2 <= n && n > 2)
		say(r, "rail %u port %u: no rate and link layer shared by most nodes (%zu of %zu at most)",
		    rail, port_no, agree, n);
	check_subnets(r, rail, port_no, v, n);
}

llmp_status topo_rails_check(const struct topo *t, char *report, size_t len, unsigned *problems)
{
	struct report r = { .buf = report, .len = len };
	if (len)
		report[0] = '\0';
	unsigned rails = 0, ports = 0;
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct topo_type *ty = &t->types[t->nodes[i].type];
		rails = ty->ngpus > rails ? ty->ngpus : rails;
		for (unsigned h = 0; h < ty->nhcas; h++)
			ports = ty->hcas[h].nports > ports ? ty->hcas[h].nports : ports;
	}
	struct port_ref *v = malloc((t->nnodes ? t->nnodes : 1) * sizeof *v);
	if (!v)
		return llmp_fail(LLMP_ERR_NOMEM, report, len, "rails: out of memory");
	for (unsigned rail = 0; rail < rails; rail++)
		for (unsigned p = 0; p < ports; p++) {
			size_t n = 0;
			for (size_t i = 0; i < t->nnodes; i++) {
				const struct topo_type *ty = &t->types[t->nodes[i].type];
				int h = rail < ty->ngpus ? topo_nccl_nearest_hca(ty, rail, false) : -1;
				bool seen = false; /* one HCA for several GPUs: its ports are checked once */
				for (unsigned g = 0; h >= 0 && g < rail && !seen; g++)
					seen = topo_nccl_nearest_hca(ty, g, false) == h;
				if (seen)
					continue;
				if (h < 0) {
					if (p == 0 && rail < ty->ngpus)
						say(&r, "rail %u: %s has no HCA for GPU %s", rail,
						    t->nodes[i].host, ty->gpus[rail].pci.bus);
					continue;
				}
				if (p < ty->hcas[h].nports)
					v[n++] = (struct port_ref){ &t->nodes[i], &ty->hcas[h],
								    &ty->hcas[h].ports[p] };
			}
			if (n)
				check_rail(&r, rail, v[0].port->port, v, n);
		}
	free(v);
	*problems = r.problems;
	return LLMP_OK;
}

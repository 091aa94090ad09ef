/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slurm_addr.c - the switches above a node from Slurm's tree address.
 *
 * slurmstepd puts SLURM_TOPOLOGY_ADDR ("s0.s4.tux1") and
 * SLURM_TOPOLOGY_ADDR_PATTERN ("switch.switch.node") in every step's
 * environment: the top switch first, the node last. A node under several
 * switches of one level shows them as a range ("s[1-2]"); the tree of
 * doc/topology-json.md gives a host one leaf, so the first is taken.
 * Slurm's topology/block writes "b1.node" with pattern "block.node": the
 * block is taken as the node's leaf.
 */
#define _POSIX_C_SOURCE 200809L
#include "discover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "common/hostlist.h"

#define ADDR_PARTS 16

/* Split s (modified) at dots into at most max parts; the count, or -1 when more. */
static int split(char *s, char **parts, int max)
{
	int n = 0;
	char *save = NULL;
	for (char *p = strtok_r(s, ".", &save); p; p = strtok_r(NULL, ".", &save)) {
		if (n == max)
			return -1;
		parts[n++] = p;
	}
	return n;
}

llmp_status topo_discover_switches(const char *addr, const char *pattern, struct topo *t, size_t node,
				   char *msg, size_t len)
{
	char a[1024], p[1024], shown[LLMP_SHOW_MAX], *ap[ADDR_PARTS], *pp[ADDR_PARTS];
	if (!addr || !*addr)
		return LLMP_OK;
	if (snprintf(a, sizeof a, "%s", addr) >= (int)sizeof a ||
	    snprintf(p, sizeof p, "%s", pattern ? pattern : "") >= (int)sizeof p)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "SLURM_TOPOLOGY_ADDR: longer than %zu bytes",
				 sizeof a - 1);
	int na = split(a, ap, ADDR_PARTS), np = pattern ? split(p, pp, ADDR_PARTS) : na;
	if (na < 1 || np != na || (pattern && strcmp(pp[na - 1], "node") != 0))
		return llmp_fail(
			LLMP_ERR_ARG, msg, len,
			"SLURM_TOPOLOGY_ADDR '%s' does not match its pattern (one part per level, the node last)",
			llmp_show(shown, addr, strlen(addr)));
	if (na == 1)
		return LLMP_OK; /* a node under no switch */
	struct topo_switch *grown = realloc(t->switches, (t->nswitches + (size_t)na - 1) * sizeof *grown);
	if (!grown)
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "switches: out of memory");
	t->switches = grown;
	for (int i = 0; i < na - 1; i++) {
		char **names;
		size_t n;
		llmp_status st = hostlist_expand(ap[i], 64, &names, &n, msg, len);
		if (st != LLMP_OK)
			return llmp_fail(st, msg, len, "SLURM_TOPOLOGY_ADDR '%s': part %d is no switch name",
					 llmp_show(shown, addr, strlen(addr)), i + 1);
		struct topo_switch *s = &t->switches[t->nswitches];
		memset(s, 0, sizeof *s);
		snprintf(s->name, sizeof s->name, "%s", names[0]);
		hostlist_free(names, n);
		s->parent = i ? (long)t->nswitches - 1 : -1;
		s->leaf = i == na - 2;
		t->nswitches++;
	}
	t->nodes[node].leaf = (long)t->nswitches - 1;
	return LLMP_OK;
}

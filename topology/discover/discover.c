/* SPDX-License-Identifier: BSD-3-Clause */
/* discover.c - this node's topology from its sources (discover.h). */
#define _POSIX_C_SOURCE 200809L
#include "discover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fail.h"

/* Slurm's name for this node, else the host name up to its first dot. */
static void host_name(char *buf, size_t len)
{
	const char *slurm = getenv("SLURMD_NODENAME");
	char host[256] = "";
	if (slurm && strlen(slurm) < len && topo_name_ok(slurm)) {
		snprintf(buf, len, "%s", slurm);
		return;
	}
	if (gethostname(host, sizeof host - 1) != 0 || !host[0])
		snprintf(host, sizeof host, "localhost");
	size_t n = strcspn(host, ".");
	if (n >= len)
		n = len - 1; /* a name longer than a topology allows: cut, still printable */
	memcpy(buf, host, n);
	buf[n] = '\0';
}

llmp_status topo_discover(const char *sysfs_root, const char *addr, const char *pattern, bool nvml,
			  struct topo *t, char *msg, size_t len)
{
	memset(t, 0, sizeof *t);
	t->version = TOPO_VERSION;
	t->types = calloc(1, sizeof *t->types);
	t->nodes = calloc(1, sizeof *t->nodes);
	if (!t->types || !t->nodes) {
		topo_free(t);
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "discovery: out of memory");
	}
	t->ntypes = 1;
	t->nnodes = 1;
	struct topo_node *node = &t->nodes[0];
	host_name(node->host, sizeof node->host);
	/* The address names the node as topology.conf does: that name wins. */
	if (addr && *addr) {
		const char *last = strrchr(addr, '.');
		last = last ? last + 1 : addr;
		if (topo_name_ok(last))
			snprintf(node->host, sizeof node->host, "%s", last);
	}
	snprintf(t->types[0].name, sizeof t->types[0].name, "%s", node->host);
	node->type = 0;
	node->leaf = -1;
	llmp_status st = topo_discover_sysfs(sysfs_root, &t->types[0], msg, len);
	if (st == LLMP_OK && nvml)
		topo_discover_nvml(&t->types[0], t->note, sizeof t->note);
	if (st == LLMP_OK)
		st = topo_discover_switches(addr, pattern, t, 0, msg, len);
	if (st != LLMP_OK)
		topo_free(t);
	return st;
}

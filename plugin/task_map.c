/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * task_map.c - where the step's tasks run (task_map.h): a node per task
 * from the PMIx map or the arbitrary host file, else node order checked
 * against what this node sees of it.
 */
#include "task_map.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm_env.h"
#include "common/fail.h"
#include "common/hostlist.h"

#define NO_NODE UINT32_MAX

/* A value from the step's environment (a host, a path, a list) for a message: llmp_show_in. */
static const char *show(char *out, size_t outlen, const char *s)
{
	return llmp_show_in(out, outlen, s, strlen(s));
}

/* What to do when nothing in the step says where task 0 runs. */
#define PLUGIN_TASK_MAP_ADVICE                                                                        \
	"nothing in the step's environment says where task 0 runs, for MASTER_ADDR and NODE_RANK: "   \
	"run with srun --mpi=pmix, whose map llmp reads, or -m arbitrary with SLURM_HOSTFILE, or -m " \
	"block"

/* A decimal number at *p, advancing it; -1 when there is none or it is above 2^31. */
static int64_t map_number(const char **p)
{
	int64_t v = 0;
	const char *s = *p;
	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9')
		if ((v = v * 10 + (*s++ - '0')) > INT32_MAX)
			return -1;
	*p = s;
	return v;
}

static bool skip(const char **p, const char *text)
{
	size_t n = strlen(text);
	if (strncmp(*p, text, n) != 0)
		return false;
	*p += n;
	return true;
}

/*
 * SLURM_PMIX_MAPPING_SERV, "(vector,(0,3,1),(0,1,3))": each triple
 * (first node, nodes, tasks per node) gives the next task ids to nodes
 * first..first+nodes-1, so many each, in that order. Fills node_of[world];
 * -1 when malformed, naming a node out of the step, or counting other than
 * world tasks.
 */
static int pmix_nodes(const char *text, uint32_t nnodes, uint32_t world, uint32_t *node_of, char *msg,
		      size_t len)
{
	const char *p = text;
	uint64_t next = 0;
	if (!skip(&p, "(vector"))
		goto bad;
	while (skip(&p, ",(")) {
		int64_t first = map_number(&p), count = skip(&p, ",") ? map_number(&p) : -1,
			per = skip(&p, ",") ? map_number(&p) : -1;
		if (first < 0 || count < 0 || per < 0 || !skip(&p, ")"))
			goto bad;
		if ((uint64_t)first + (uint64_t)count > nnodes) {
			snprintf(msg, len,
				 "SLURM_PMIX_MAPPING_SERV names node %lld, but the step has %u nodes",
				 (long long)(first + count - 1), nnodes);
			return -1;
		}
		if (next + (uint64_t)count * (uint64_t)per > world) {
			snprintf(msg, len, "SLURM_PMIX_MAPPING_SERV maps more than the step's %u tasks",
				 world);
			return -1;
		}
		for (int64_t n = first; n < first + count; n++)
			for (int64_t k = 0; k < per; k++)
				node_of[next++] = (uint32_t)n;
	}
	if (!skip(&p, ")") || *p)
		goto bad;
	if (next != world) {
		snprintf(msg, len, "SLURM_PMIX_MAPPING_SERV maps %llu tasks, the step has %u",
			 (unsigned long long)next, world);
		return -1;
	}
	return 0;
bad:
	char shown[204];
	snprintf(msg, len, "SLURM_PMIX_MAPPING_SERV=%s is not a (vector,(node,nodes,tasks),...) map",
		 show(shown, sizeof shown, text));
	return -1;
}

/* The index of name in hosts, or NO_NODE. */
static uint32_t host_index(char *const *hosts, size_t nhosts, const char *name)
{
	for (size_t i = 0; i < nhosts; i++)
		if (strcmp(hosts[i], name) == 0)
			return (uint32_t)i;
	return NO_NODE;
}

/*
 * SLURM_HOSTFILE under -m arbitrary: task i runs on the i-th host named,
 * one host list per line ('#' starts a comment). Fills node_of[world]; -1
 * when a name is not a host of the step or fewer than world are named.
 */
static int hostfile_nodes(const struct plugin_task_map_inputs *in, char *const *hosts, size_t nhosts,
			  uint32_t *node_of, char *msg, size_t len)
{
	const char *p = in->hostfile_text, *end = p + in->hostfile_len;
	uint32_t next = 0;
	char line[4096], **names, file[204];
	size_t nnames;
	show(file, sizeof file, in->hostfile); /* for messages */
	while (p < end && next < in->world) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((eol ? eol : end) - p);
		if (n >= sizeof line) {
			snprintf(msg, len, "%s: a line is longer than %zu bytes", file, sizeof line - 1);
			return -1;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + 1;
		line[strcspn(line, "#")] = '\0';
		char *s = line + strspn(line, " \t\r");
		s[strcspn(s, " \t\r")] = '\0';
		if (!*s)
			continue;
		char why[256];
		if (hostlist_expand(s, in->world, &names, &nnames, why, sizeof why) != LLMP_OK) {
			snprintf(msg, len, "%s: %s", file, why);
			return -1;
		}
		for (size_t i = 0; i < nnames && next < in->world; i++) {
			uint32_t node = host_index(hosts, nhosts, names[i]);
			if (node == NO_NODE) {
				char name[68], nodes[204];
				snprintf(msg, len,
					 "%s names %s for task %u, which is not a node of the step (%s)",
					 file, show(name, sizeof name, names[i]), next,
					 show(nodes, sizeof nodes, in->nodelist));
				hostlist_free(names, nnames);
				return -1;
			}
			node_of[next++] = node;
		}
		hostlist_free(names, nnames);
	}
	if (next < in->world) {
		snprintf(msg, len, "%s names %u hosts, the step has %u tasks", file, next, in->world);
		return -1;
	}
	return 0;
}

/* This node's tasks must be where the map puts them; then task 0's node and this node's rank. */
static int from_map(const struct plugin_task_map_inputs *in, const uint32_t *node_of, const char *source,
		    struct plugin_task_map *map, char *msg, size_t len)
{
	for (uint32_t i = 0; i < in->ntasks; i++)
		if (in->tasks[i] >= in->world || node_of[in->tasks[i]] != in->node_id) {
			snprintf(msg, len, "%s puts task %u on node %u of the step, but it runs on node %u",
				 source, in->tasks[i],
				 in->tasks[i] < in->world ? node_of[in->tasks[i]] : NO_NODE, in->node_id);
			return -1;
		}
	/* A node's rank: how many nodes have a lower first task than this one. */
	bool *seen = calloc(in->nnodes ? in->nnodes : 1, sizeof *seen);
	if (!seen) {
		snprintf(msg, len, "out of memory");
		return -1;
	}
	map->node_rank = 0;
	for (uint32_t t = 0; t < in->world && node_of[t] != in->node_id; t++)
		if (!seen[node_of[t]]) {
			seen[node_of[t]] = true;
			map->node_rank++;
		}
	free(seen);
	map->master_node = node_of[0];
	map->source = source;
	return 0;
}

/* The first of a distribution's names: "cyclic:block" -> block is false, cyclic true. */
static bool dist_is(const char *dist, const char *name)
{
	size_t n = strlen(name);
	return dist && strncmp(dist, name, n) == 0 && (dist[n] == '\0' || dist[n] == ':' || dist[n] == ',');
}

/*
 * No map: node order (task 0 on node 0, and nodes ranked in node order),
 * checked with what this node knows. Block: its first task follows the
 * tasks of the nodes before it; cyclic: its first task is its node id.
 */
static int from_node_order(const struct plugin_task_map_inputs *in, char *const *hosts,
			   struct plugin_task_map *map, char *msg, size_t len)
{
	uint32_t lowest = UINT32_MAX, expect = UINT32_MAX;
	for (uint32_t i = 0; i < in->ntasks; i++)
		if (in->tasks[i] < lowest)
			lowest = in->tasks[i];
	const char *dist = in->distribution && *in->distribution ? in->distribution : "block";
	uint32_t *counts = NULL;
	if (dist_is(dist, "cyclic"))
		expect = in->node_id;
	else if (dist_is(dist, "block") && in->tasks_per_node &&
		 (counts = malloc(in->nnodes * sizeof *counts)) &&
		 plugin_tasks_per_node_list(in->tasks_per_node, counts, in->nnodes) == 0) {
		expect = 0;
		for (uint32_t n = 0; n < in->node_id; n++)
			expect += counts[n];
	} else if (in->node_id == 0)
		expect = 0;
	free(counts);
	bool wrong = expect != UINT32_MAX ? lowest != expect : lowest == 0;
	char here[68], first[68], how[36];
	show(here, sizeof here, hosts[in->node_id]);
	if (wrong && expect == UINT32_MAX)
		snprintf(msg, len, "task 0 runs on %s (node %u of the step), not on its first node %s (%s)",
			 here, in->node_id, show(first, sizeof first, hosts[0]), PLUGIN_TASK_MAP_ADVICE);
	else if (wrong)
		snprintf(msg, len,
			 "task %u is the first task on %s (node %u of the step), where SLURM_DISTRIBUTION=%s "
			 "puts task %u: the tasks are not in node order (%s)",
			 lowest, here, in->node_id, show(how, sizeof how, dist), expect,
			 PLUGIN_TASK_MAP_ADVICE);
	if (wrong)
		return -1;
	map->master_node = 0;
	map->node_rank = in->node_id;
	map->source = "node order";
	return 0;
}

int plugin_task_map(const struct plugin_task_map_inputs *in, struct plugin_task_map *map, char *msg,
		    size_t len)
{
	char **hosts = NULL;
	size_t nhosts = 0;
	uint32_t *node_of = NULL;
	int rc = -1;
	memset(map, 0, sizeof *map);
	if (!in->nodelist || in->nnodes == 0 || in->world == 0) {
		snprintf(msg, len, "SLURM_STEP_NODELIST is not set, or the step has no task");
		return -1;
	}
	char why[256];
	if (hostlist_expand(in->nodelist, in->nnodes, &hosts, &nhosts, why, sizeof why) != LLMP_OK) {
		snprintf(msg, len, "SLURM_STEP_NODELIST: %s", why);
		return -1;
	}
	if (nhosts != in->nnodes || in->node_id >= nhosts) {
		char nodes[204];
		snprintf(msg, len, "SLURM_STEP_NODELIST=%s names %zu nodes, the step has %u",
			 show(nodes, sizeof nodes, in->nodelist), nhosts, in->nnodes);
		goto out;
	}
	bool arbitrary = dist_is(in->distribution, "arbitrary") && in->hostfile_text;
	if ((in->pmix_map || arbitrary) && !(node_of = malloc(in->world * sizeof *node_of))) {
		snprintf(msg, len, "out of memory");
		goto out;
	}
	if (in->pmix_map)
		rc = pmix_nodes(in->pmix_map, in->nnodes, in->world, node_of, msg, len) < 0
			     ? -1
			     : from_map(in, node_of, "SLURM_PMIX_MAPPING_SERV", map, msg, len);
	else if (arbitrary)
		rc = hostfile_nodes(in, hosts, nhosts, node_of, msg, len) < 0
			     ? -1
			     : from_map(in, node_of, "SLURM_HOSTFILE", map, msg, len);
	else
		rc = from_node_order(in, hosts, map, msg, len);
	if (rc == 0 && snprintf(map->master, sizeof map->master, "%s", hosts[map->master_node]) >=
			       (int)sizeof map->master) {
		char name[68];
		snprintf(msg, len, "host name %s is too long for MASTER_ADDR",
			 show(name, sizeof name, hosts[map->master_node]));
		rc = -1;
	}
out:
	free(node_of);
	hostlist_free(hosts, nhosts);
	return rc;
}

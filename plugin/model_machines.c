/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model_machines.c - the step's nodes on the topology file as the step
 * model's machines (model_machines.h): the file read with a cap and the
 * step's hosts and tasks from Slurm's strings, checked; each layout is
 * placed there as Slurm numbers its tasks by planner/machines.h, as
 * `llmp plan --topology FILE --hosts LIST` places it.
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
#include "common/fail.h"
#include "common/hostlist.h"
#include "common/open_regular.h"
#include "planner/machines.h"

struct plugin_machines {
	struct topo t;
	char **hosts;
	size_t nhosts;
	uint32_t *tasks;
	struct plan_model model;
	struct gpu_desc fallback;
	struct machines on;         /* planner/machines.h: the hosts, tasks and model above */
	struct chooser_machines am; /* on as the step model's machines */
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
	machines_cache_free(pm->on.cache);
	if (pm->hosts)
		hostlist_free(pm->hosts, pm->nhosts);
	free(pm->tasks);
	topo_free(&pm->t);
	free(pm);
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
	pm->on.tasks_per_node = pm->tasks[0];
	for (size_t i = 0; i < pm->nhosts; i++) {
		sum += pm->tasks[i];
		if (pm->tasks[i] != pm->tasks[0])
			pm->on.tasks_per_node = 0;
	}
	if (sum != rq->world) {
		snprintf(msg, len, "the step's tasks per node '%.200s' add up to %llu, not %u tasks",
			 rq->tasks_per_node, (unsigned long long)sum, rq->world);
		return -1;
	}
	pm->on.world = rq->world;
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
	pm->on.t = &pm->t, pm->on.hosts = pm->hosts, pm->on.nhosts = pm->nhosts, pm->on.tasks = pm->tasks;
	pm->on.renumber = rq->renumber, pm->on.model = &pm->model;
	pm->on.fallback = rq->fallback ? &pm->fallback : NULL;
	if (rc == 0 && machines_weakest(&pm->on, weakest, why, sizeof why) != LLMP_OK) {
		snprintf(msg, len, "%s: %s", rq->file, why);
		rc = -1;
	}
	/* NULL when out of memory: each layout is placed anew */
	if (rc == 0)
		pm->on.cache = machines_cache_new();
	if (rc < 0) {
		plugin_machines_close(pm);
		return NULL;
	}
	pm->am = machines_chooser(&pm->on);
	return pm;
}

const struct chooser_machines *plugin_machines_of(const struct plugin_machines *pm)
{
	return &pm->am;
}

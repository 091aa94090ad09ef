/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * submit.c - the submitting side: srun (local) and sbatch/salloc (allocator).
 *
 * A layout that cannot be right whatever the job size is refused here, so no
 * job is queued. sbatch cannot see the task count through SPANK; srun can,
 * once the step exists (local_user_init), and then checks divisibility too.
 * Everything is checked again inside the step, against its real geometry.
 * The checkpoint spec needs no geometry: it is refused here or never.
 */
#include "plugin.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>

#include <llmp/llmp_env.h>
#include "resolve.h"
#include "resolve_ckpt.h"

/*
 * What the submitting side does with a resolved option: nothing when it is
 * absent, print the grammar and stop for "help" (given through the variable:
 * the option's own "help" already exited), refuse an invalid one. Returns
 * -1 if invalid, else 0 with *active set.
 */
static int answer(enum plugin_resolved resolved, const char *grammar, const char *msg, bool *active)
{
	*active = false;
	switch (resolved) {
	case PLUGIN_INACTIVE: return 0;
	case PLUGIN_HELP: fputs(grammar, stdout); exit(0);
	case PLUGIN_INVALID: plugin_user_message("%s", msg); return -1;
	case PLUGIN_ACTIVE: break;
	}
	*active = true;
	return 0;
}

/* Is checkpointing asked for, through LLMP_CHECKPOINT or the option? -1 if invalid. */
static int resolve_ckpt_here(bool *active)
{
	char msg[LLMP_MSG_MAX];
	struct plugin_ctx *c = plugin_ctx();
	llmp_ckpt_spec spec;

	return answer(plugin_resolve_ckpt(&c->site, getenv(LLMP_ENV_CHECKPOINT), c->ckpt_option, &spec, msg,
					  sizeof msg),
		      llmp_ckpt_spec_grammar(), msg, active);
}

/* The layout from site defaults, LLMP_PARALLEL and the option; -1 if invalid.
 * Checkpointing turns the plugin on with the default layout. */
static int resolve_here(llmp_spec *spec, bool *active)
{
	char msg[LLMP_MSG_MAX];
	struct plugin_ctx *c = plugin_ctx();
	bool ckpt;

	if (resolve_ckpt_here(&ckpt) < 0) {
		*active = false;
		return -1;
	}
	return answer(
		plugin_resolve(&c->site, getenv(LLMP_ENV_PARALLEL), c->option, ckpt, spec, msg, sizeof msg),
		llmp_spec_grammar(), msg, active);
}

/*
 * --llm-placement=topology places the whole job, so it needs a description
 * of every node: refused here without one, before anything is queued.
 */
static int check_placement(void)
{
	struct plugin_ctx *c = plugin_ctx();
	const char *file = getenv(LLMP_ENV_TOPOLOGY_FILE);
	if (!plugin_renumber_asked() || (file && *file) || c->site.topology[0])
		return 0;
	plugin_user_message(
		"--llm-placement=topology needs a description of the job's nodes: set " LLMP_ENV_TOPOLOGY_FILE
		" (doc/topology-json.md), or ask the administrator for "
		"the plugin's topology= setting");
	return -1;
}

int plugin_submit_check(spank_t sp)
{
	llmp_spec spec;
	bool active;

	(void)sp;
	if (resolve_here(&spec, &active) < 0)
		return -1;
	return active ? check_placement() : 0;
}

/*
 * Random bytes for the step's MASTER_PORT hash (site.h), in srun's
 * environment, which the step's tasks start from: the same on every node,
 * unknown to other users, so they cannot take the port in advance.
 */
static int give_port_salt(void)
{
	char text[32];
	uint64_t salt;
	if (getrandom(&salt, sizeof salt, 0) != (ssize_t)sizeof salt)
		return 0; /* the step falls back to the unsalted hash */
	snprintf(text, sizeof text, "%016llx", (unsigned long long)salt);
	/* SPANK's setenv is for remote contexts only; srun sends the step its own environment. */
	if (setenv(LLMP_ENV_PORT_SALT, text, 1) != 0)
		plugin_user_message("warning: cannot set " LLMP_ENV_PORT_SALT
				    "; MASTER_PORT follows from the job id");
	return 0;
}

int plugin_submit_check_tasks(spank_t sp)
{
	char msg[LLMP_MSG_MAX];
	uint32_t tasks = 0, nodes = 0;
	llmp_spec spec;
	llmp_plan *plan;
	bool active;

	if (resolve_here(&spec, &active) < 0)
		return -1;
	if (!active)
		return 0;
	if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &tasks) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &nodes) != ESPANK_SUCCESS || !tasks)
		return 0; /* unknown here: the step checks it */

	/* With an even spread, advise about groups that cross nodes; renumbered, the step advises. */
	uint32_t per_node = nodes && tasks % nodes == 0 && !plugin_renumber_asked() ? tasks / nodes : 0;
	if (llmp_plan_create(&spec, tasks, per_node, &plan, msg, sizeof msg) != LLMP_OK) {
		plugin_user_message("%s (%u tasks on %u node%s)", msg, tasks, nodes, nodes == 1 ? "" : "s");
		return -1;
	}
	for (size_t i = 0; i < llmp_plan_warning_count(plan); i++)
		plugin_user_message("warning: %s", llmp_plan_warning(plan, i));
	llmp_plan_destroy(plan);
	return give_port_salt();
}

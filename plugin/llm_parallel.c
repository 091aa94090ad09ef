/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llm_parallel.c - the SPANK plugin's entry points: each callback is routed
 * by context to the file that handles it (submission: submit.c; inside the
 * job step: step.c; the job prolog and epilog, as root in slurmd:
 * job_script.c). In slurmd itself the plugin only says which Slurm it was
 * built for.
 */
#include "config.h"

#include "plugin.h"

#include <stdio.h>

SPANK_PLUGIN(llm_parallel, 1);

int slurm_spank_init(spank_t sp, int argc, char **argv)
{
	char msg[LLMP_MSG_MAX];
	spank_context_t ctx = spank_context();

	/* Slurm refuses a plugin built for another major release before this
	 * runs; the line in slurmd's log says which release an admin built
	 * for, and so which one the next upgrade needs a rebuild against. */
	if (ctx == S_CTX_SLURMD) {
		slurm_info(PLUGIN_NAME ": llmp " PACKAGE_VERSION " built for Slurm %d.%02d.%d"
				       " (rebuild it for every other Slurm release)",
			   SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
			   SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
			   SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
		return 0;
	}
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE)
		return 0;
	if (plugin_site_parse(&plugin_ctx()->site, argc, argv, msg, sizeof msg) < 0) {
		plugin_log_error("%s", msg);
		return -1;
	}
	return plugin_options_register(sp);
}

/*
 * As root in slurmd, before the job's first step on this node: the node's
 * check, where the site asks. Slurm calls no slurm_spank_init before the
 * job prolog and epilog: the plugstack arguments come here.
 */
int slurm_spank_job_prolog(spank_t sp, int argc, char **argv)
{
	return plugin_job_script(sp, argc, argv, true);
}

/* As root in slurmd, once the job has left this node: what it left behind (node_clean.h). */
int slurm_spank_job_epilog(spank_t sp, int argc, char **argv)
{
	return plugin_job_script(sp, argc, argv, false);
}

int slurm_spank_init_post_opt(spank_t sp, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	/* Only the submitting side may refuse here: a failure in slurmstepd's
	 * init_post_opt would drain the node for a user's typo. */
	if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_ALLOCATOR)
		return plugin_submit_check(sp);
	return 0;
}

int slurm_spank_local_user_init(spank_t sp, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return plugin_submit_check_tasks(sp);
}

int slurm_spank_user_init(spank_t sp, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return plugin_step_prepare(sp);
}

/*
 * In the task, as root: what only root can read (step_gdr.c; the node
 * check of --llm-node-check, job_script.c); never fails here, task_init
 * says what was found.
 */
int slurm_spank_task_init_privileged(spank_t sp, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	if (plugin_ctx()->node_check)
		plugin_node_check(sp);
	if (plugin_ctx()->active)
		plugin_step_gdr_privileged();
	return 0;
}

int slurm_spank_task_init(spank_t sp, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (spank_context() == S_CTX_REMOTE && plugin_ctx()->node_unfit[0]) {
		plugin_task_message("%s", plugin_ctx()->node_unfit);
		return -1;
	}
	return plugin_step_task(sp);
}

int slurm_spank_exit(spank_t sp, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (spank_context() == S_CTX_REMOTE)
		plugin_step_finish(sp);
	plugin_ctx_release();
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srun_args.h - the task count srun will ask for, read from its own command
 * line before it asks for an allocation.
 *
 * SPANK gives srun the step's task count only in local_user_init, after the
 * allocation is granted (spank_get_item(S_JOB_TOTAL_TASK_COUNT) answers
 * ESPANK_NOT_AVAIL in init_post_opt, and srun puts neither SLURM_NTASKS nor
 * SLURM_NNODES in its environment by then: seen with Slurm 22.05.8). A spec
 * refused only there has already queued a job. Where the count is on the
 * command line (-n/--ntasks, or a fixed -N/--nodes with --ntasks-per-node),
 * init_post_opt can refuse before anything is queued.
 *
 * The reading is conservative: it stops at srun's command, as srun's own
 * getopt does, and answers "unknown" at anything it cannot place (an option
 * it does not know, an abbreviated name, a heterogeneous step), so the
 * command's own arguments are never taken for srun's. Unknown leaves the
 * check to local_user_init, as before.
 */
#ifndef LLMP_PLUGIN_SRUN_ARGS_H
#define LLMP_PLUGIN_SRUN_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct plugin_srun_count {
	uint32_t tasks; /* 0: not known from the command line */
	uint32_t nodes; /* 0: not known (a range, or not given) */
};

/* Reads argv[1..argc-1] (argv[0] is srun itself). */
struct plugin_srun_count plugin_srun_count_of(int argc, char *const argv[]);

/*
 * The same for a NUL-separated command line as /proc/self/cmdline holds it
 * (len bytes). Unknown when there are more than 4096 arguments.
 */
struct plugin_srun_count plugin_srun_count_of_cmdline(const char *cmdline, size_t len);

/*
 * Is srun about to ask for a new allocation with -m arbitrary (its option,
 * else SLURM_DISTRIBUTION)? Not inside an allocation (SLURM_JOB_ID,
 * --jobid), where no nodes are selected.
 */
bool plugin_srun_arbitrary_allocation(int argc, char *const argv[], const char *env_distribution,
				      const char *env_job_id);

/*
 * The warning for an arbitrary layout that topology/tree cannot place, or
 * NULL. Since Slurm 23.11 node selection under a topology plugin is the
 * plugin's (src/plugins/topology/tree/eval_nodes_tree.c), which picks
 * nodes by switch without the per-node task counts an arbitrary list asks
 * for, so the job can stay PENDING for ever (seen on 24.11.7; the same code
 * in 25.05 and 25.11). Steps inside an existing allocation select no nodes.
 */
const char *plugin_arbitrary_tree_warning(uint32_t slurm_version_number, bool arbitrary_allocation,
					  const char *topology_plugin);

/*
 * The value of KEY in a slurm.conf (case-insensitive keys, comments, the
 * last setting wins; Include lines are not followed): 1 and the value in
 * out, 0 if not set there, -1 if the file cannot be read.
 */
int plugin_slurm_conf_value(const char *path, const char *key, char *out, size_t outlen);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slurm_env.h - reading the values Slurm puts in a step's environment.
 *
 * Pure string work, no Slurm library: unit-tested without a cluster.
 */
#ifndef LLMP_SLURM_ENV_H
#define LLMP_SLURM_ENV_H

#include <stddef.h>
#include <stdint.h>

/*
 * The first host of a Slurm hostlist ("node[01-04,7],gpu1" -> "node01").
 * Returns 0, or -1 if the list is empty, malformed or the name does not fit.
 */
int plugin_hostlist_first(const char *hostlist, char *host, size_t hostlen);

/*
 * SLURM_STEP_TASKS_PER_NODE ("4(x2),3", "2,2"): the common count when every
 * node has the same number of tasks, 0 when counts differ, -1 when malformed.
 */
int64_t plugin_tasks_per_node_uniform(const char *text);

/*
 * SLURM_STEP_TASKS_PER_NODE expanded: tasks[i] for each of the nnodes nodes
 * ("2(x3),1" -> 2 2 2 1). Returns 0, or -1 when malformed or when it does
 * not count exactly nnodes nodes.
 */
int plugin_tasks_per_node_list(const char *text, uint32_t *tasks, size_t nnodes);

/*
 * SLURM_RESTART_COUNT: how many times the job was requeued; 0 when unset
 * (NULL), -1 when not a decimal number (or above 2^24).
 */
int64_t plugin_restart_count(const char *text);

#endif /* LLMP_SLURM_ENV_H */

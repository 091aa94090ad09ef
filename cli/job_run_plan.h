/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_run_plan.h - which of the job's nodes the next run of `llmp job run`
 * uses: a decision on names alone, with no Slurm, so that it is tested on
 * its own (tests/unit/test_job_run.c); cmd_job_run.c asks Slurm and runs.
 *
 * The job holds nodes; some are out for good (excluded: they failed a run's
 * check, or Slurm shows them down or draining). Of the rest, the batch host
 * first (the batch script runs there: losing it ends the job anyway), then
 * in the job's order, the first `active` run the program and the others
 * wait as spares. A run never uses an excluded node, whatever Slurm's
 * environment still says (a hostfile that names the sick node is the black
 * hole every retry falls into).
 */
#ifndef LLMP_CLI_JOB_RUN_PLAN_H
#define LLMP_CLI_JOB_RUN_PLAN_H

#include <stdbool.h>
#include <stddef.h>

/* A Slurm node state word (sinfo's %T) that a run must not use: down,
 * drained or draining, failing, or not responding (a trailing '*'). */
bool job_run_state_is_bad(const char *state);

struct job_run_choice {
	size_t *active; /* indexes into the job's nodes, the batch host first */
	size_t nactive;
	size_t *spares; /* the healthy nodes left over, in the job's order */
	size_t nspares;
	bool smaller; /* fewer than `want` nodes were healthy: the run is smaller */
};

/*
 * Choose among nodes[0..n) (the job's, in Slurm's order) minus excluded[]
 * (true: out), want nodes to run on. The batch host, when it is one of
 * them and healthy, comes first. Returns 0 with *c filled (free with
 * job_run_choice_free), or -1 with msg when no node is healthy or memory
 * runs out.
 */
int job_run_choose(const char *const *nodes, size_t n, const bool *excluded, const char *batch_host,
		   size_t want, struct job_run_choice *c, char *msg, size_t msglen);

void job_run_choice_free(struct job_run_choice *c);

#endif /* LLMP_CLI_JOB_RUN_PLAN_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_job_run.c - which nodes `llmp job run` runs on (cli/job_run_plan.h):
 * the batch host first, spares kept back, a node taken out never chosen,
 * fewer nodes said when too few are healthy; and which of Slurm's node
 * states take a node out. Expected choices are written out by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "cli/job_run_plan.h"

static const char *const nodes[] = { "node1", "node2", "node3", "node4" };

/* The chosen names of idx[0..n) joined by ',' (e.g. "node2,node1"). */
static const char *joined(const char *const *names, const size_t *idx, size_t n)
{
	static char buf[256];
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? "," : "", names[idx[i]]);
	return buf;
}

static void choose(const bool *out, const char *batch, size_t want, const char *active, const char *spares,
		   bool smaller)
{
	struct job_run_choice c;
	char msg[128];
	assert_int_equal(job_run_choose(nodes, 4, out, batch, want, &c, msg, sizeof msg), 0);
	assert_string_equal(joined(nodes, c.active, c.nactive), active);
	assert_string_equal(joined(nodes, c.spares, c.nspares), spares);
	assert_int_equal(c.smaller, smaller);
	job_run_choice_free(&c);
}

static void batch_host_first_spares_kept_back(void **state)
{
	const bool none[4] = { false, false, false, false };
	(void)state;
	choose(none, "node1", 3, "node1,node2,node3", "node4", false);
	/* The batch script runs on node3: it is always among the active. */
	choose(none, "node3", 2, "node3,node1", "node2,node4", false);
	/* A batch host outside the list (a login node's name): the job's order. */
	choose(none, "login1", 2, "node1,node2", "node3,node4", false);
	choose(none, NULL, 4, "node1,node2,node3,node4", "", false);
}

static void a_node_out_is_never_chosen(void **state)
{
	(void)state;
	/* node2 lost, one spare: node4 takes its place, the run keeps its size. */
	const bool lost2[4] = { false, true, false, false };
	choose(lost2, "node1", 3, "node1,node3,node4", "", false);
	/* A second loss with no spare left: a smaller run, said. */
	const bool lost23[4] = { false, true, true, false };
	choose(lost23, "node1", 3, "node1,node4", "", true);
	/* The batch host out: it is not chosen either (the driver ends the job before this). */
	const bool lost1[4] = { true, false, false, false };
	choose(lost1, "node1", 2, "node2,node3", "node4", false);
	const bool all[4] = { true, true, true, true };
	struct job_run_choice c;
	char msg[128];
	assert_int_equal(job_run_choose(nodes, 4, all, "node1", 2, &c, msg, sizeof msg), -1);
	assert_string_equal(msg, "none of the job's 4 nodes is healthy");
}

static void slurm_states_that_take_a_node_out(void **state)
{
	(void)state;
	/* sinfo's %T words (Slurm 22.05 sinfo(1), NODE STATE CODES). */
	const char *bad[] = { "down",    "down*", "drained", "draining",   "drained*",
			      "failing", "fail",  "idle*",   "allocated*", "mixed*" };
	const char *good[] = { "idle", "allocated", "mixed", "completing", "reserved", "planned" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_true(job_run_state_is_bad(bad[i]));
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		assert_false(job_run_state_is_bad(good[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(batch_host_first_spares_kept_back),
		cmocka_unit_test(a_node_out_is_never_chosen),
		cmocka_unit_test(slurm_states_that_take_a_node_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

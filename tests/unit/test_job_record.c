/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_job_record.c - whom a failed run's record blames when several ranks
 * write it (runtime/job/job_record.h, job_record_blame): the first blame of
 * the run stands, a rank that blames none keeps it, another run's is not
 * taken. Played through the record file as two ranks of one run write it.
 */
#define _GNU_SOURCE /* mkdtemp */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "runtime/job/job_record.h"

static void the_rule(void **state)
{
	(void)state;
	/* a first blame stands against a later rank's other host, and against none */
	assert_string_equal(job_record_blame("node2", true, "node1"), "node1");
	assert_string_equal(job_record_blame("", true, "node1"), "node1");
	/* nothing recorded yet, or a record of another run (or not failed): this rank's own */
	assert_string_equal(job_record_blame("node2", true, ""), "node2");
	assert_string_equal(job_record_blame("node2", false, "node1"), "node2");
	assert_string_equal(job_record_blame("", false, "node1"), "");
}

/* What a rank of run (job 77, restart 0, step 3) does on a failure blaming mine. */
static void rank_fails(const char *root, uint32_t rank, const char *mine)
{
	llmp_run_record cur, rec = { .job_id = "77", .outcome = LLMP_RUN_FAILED, .step = 12 };
	struct job_record_run cur_run = { 0 }, run = { .slurm_step = "3" };
	char msg[256];
	bool same = job_record_read(root, &cur, &cur_run, msg, sizeof msg) == LLMP_OK &&
		    strcmp(cur.job_id, "77") == 0 && cur.restart == 0 &&
		    strcmp(cur_run.slurm_step, "3") == 0 && cur.outcome == LLMP_RUN_FAILED;
	snprintf(run.suspect, sizeof run.suspect, "%s", job_record_blame(mine, same, cur_run.suspect));
	assert_int_equal(job_record_write(root, &rec, &run, rank, msg, sizeof msg), LLMP_OK);
}

static void two_ranks_write_the_record(void **state)
{
	(void)state;
	char root[] = "/tmp/llmp-test-record.XXXXXX", msg[256], path[64];
	assert_non_null(mkdtemp(root));
	llmp_run_record rec;
	struct job_record_run run;
	/* rank 2 saw node1's rank die; rank 3 then saw rank 2 (on node2) end */
	rank_fails(root, 2, "node1");
	rank_fails(root, 3, "node2");
	assert_int_equal(job_record_read(root, &rec, &run, msg, sizeof msg), LLMP_OK);
	assert_string_equal(run.suspect, "node1");
	/* and one that blames none (the blamed rank itself) keeps it too */
	rank_fails(root, 0, "");
	assert_int_equal(job_record_read(root, &rec, &run, msg, sizeof msg), LLMP_OK);
	assert_string_equal(run.suspect, "node1");
	snprintf(path, sizeof path, "%s/llmp-run", root);
	unlink(path);
	rmdir(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_rule),
		cmocka_unit_test(two_ranks_write_the_record),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_job_driver.c - ROOT/llmp-driver, the heartbeat of `llmp job run`
 * (runtime/job/job_driver.h): a beat written is read back as written, the
 * file is the one line the header gives, a file that is not a beat or a
 * beat with a bad field is refused, and only the job's own beat is removed.
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

#include "runtime/job/job_driver.h"

static char root[64];

static int make_root(void **state)
{
	(void)state;
	snprintf(root, sizeof root, "/tmp/llmp-test-driver.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int remove_root(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "%s/llmp-driver", root);
	unlink(path);
	return rmdir(root);
}

static void put(const char *text)
{
	char path[128];
	snprintf(path, sizeof path, "%s/llmp-driver", root);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void a_beat_reads_back(void **state)
{
	(void)state;
	struct job_driver_beat b = {
		.job_id = "4242", .host = "node1", .how = "scontrol", .ms = 1764412800123LL
	};
	struct job_driver_beat got;
	char msg[256], path[128], text[128] = "";
	assert_int_equal(job_driver_write(root, &b, msg, sizeof msg), LLMP_OK);
	snprintf(path, sizeof path, "%s/llmp-driver", root);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof text, f));
	fclose(f);
	assert_string_equal(text, "llmp-driver 1 4242 node1 scontrol 1764412800123\n");
	assert_int_equal(job_driver_read(root, &got, msg, sizeof msg), LLMP_OK);
	assert_string_equal(got.job_id, "4242");
	assert_string_equal(got.host, "node1");
	assert_string_equal(got.how, "scontrol");
	assert_true(got.ms == 1764412800123LL);
}

static void bad_beats_are_refused(void **state)
{
	(void)state;
	struct job_driver_beat got;
	char msg[256];
	static const char *const bad[] = {
		"llmp-driver 2 4242 node1 auto 17\n",      /* another version */
		"llmp-run 1 4242 node1 auto 17\n",         /* another file */
		"llmp-driver 1 42x node1 auto 17\n",       /* not a job id */
		"llmp-driver 1 4242 node;1 auto 17\n",     /* not a host name */
		"llmp-driver 1 4242 node1 sometimes 17\n", /* not a requeue method */
		"llmp-driver 1 4242 node1 auto 0\n",       /* no time */
		"llmp-driver 1 4242 node1 auto\n",         /* cut short */
		"",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		put(bad[i]);
		assert_int_equal(job_driver_read(root, &got, msg, sizeof msg), LLMP_ERR_IO);
		assert_non_null(strstr(msg, "not a driver's beat"));
	}
	struct job_driver_beat b = { .job_id = "4242", .host = "node 1", .how = "auto", .ms = 5 };
	assert_int_equal(job_driver_write(root, &b, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "host 'node 1'"));
}

static void only_the_jobs_own_beat_is_removed(void **state)
{
	(void)state;
	struct job_driver_beat got, b = { .job_id = "7", .host = "node2", .how = "none", .ms = 99 };
	char msg[256];
	assert_int_equal(job_driver_write(root, &b, msg, sizeof msg), LLMP_OK);
	job_driver_remove(root, "8");
	assert_int_equal(job_driver_read(root, &got, msg, sizeof msg), LLMP_OK);
	job_driver_remove(root, "7");
	assert_int_equal(job_driver_read(root, &got, msg, sizeof msg), LLMP_ERR_IO);
	assert_non_null(strstr(msg, "No such file"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_beat_reads_back),
		cmocka_unit_test(bad_beats_are_refused),
		cmocka_unit_test(only_the_jobs_own_beat_is_removed),
	};
	return cmocka_run_group_tests(tests, make_root, remove_root);
}

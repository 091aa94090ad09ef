/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_run_bounded.c - common/run_bounded.c: a command's status, a deadline
 * that kills, a program that cannot start, the environment given, quiet.
 * Expected values are what the shell commands run are written to do.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/run_bounded.h"

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run_sh(const char *script, const struct llmp_run_how *how, char *why, size_t len)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	return llmp_run_bounded(argv, how, why, len);
}

static void test_status(void **state)
{
	(void)state;
	const struct llmp_run_how how = { .timeout_s = 10 };
	char why[300] = "untouched";
	assert_int_equal(run_sh("exit 0", &how, why, sizeof why), 0);
	assert_int_equal(run_sh("exit 3", &how, why, sizeof why), -1);
	assert_string_equal(why, "/bin/sh failed (status 3)");
	/* a signal: 128 + its number, as a shell says it */
	assert_int_equal(run_sh("kill -TERM $$", &how, why, sizeof why), -1);
	assert_string_equal(why, "/bin/sh failed (status 143)");
}

static void test_deadline_kills(void **state)
{
	(void)state;
	const struct llmp_run_how how = { .timeout_s = 0.5 };
	char why[300], marker[] = "/tmp/llmp-run-bounded-XXXXXX";
	int fd = mkstemp(marker);
	assert_true(fd >= 0);
	close(fd);
	char script[400];
	/* it would write the marker after 3 s; killed at 0.5 s, it never does */
	snprintf(script, sizeof script, "sleep 3; echo late > %s", marker);
	double t0 = mono_s();
	assert_int_equal(run_sh(script, &how, why, sizeof why), -1);
	/* no sooner than the deadline; no later than the marker shows below */
	assert_true(mono_s() - t0 >= 0.5);
	assert_string_equal(why, "/bin/sh gave no answer within 0 s");
	sleep(3);
	FILE *f = fopen(marker, "r");
	assert_non_null(f);
	assert_int_equal(fgetc(f), EOF);
	fclose(f);
	unlink(marker);
}

static void test_cannot_start(void **state)
{
	(void)state;
	char why[300];
	char *by_path[] = { "/nonexistent/scontrol", "requeue", "1", NULL };
	char *by_name[] = { "llmp-no-such-command", NULL };
	const struct llmp_run_how direct = { .timeout_s = 5 }, search = { .search_path = 1, .timeout_s = 5 };
	/* glibc's posix_spawn reports the exec's error; under valgrind the child exits 127 instead */
	assert_int_equal(llmp_run_bounded(by_path, &direct, why, sizeof why), -1);
	assert_true(!strcmp(why, "cannot run /nonexistent/scontrol: No such file or directory") ||
		    !strcmp(why, "/nonexistent/scontrol failed (status 127)"));
	assert_int_equal(llmp_run_bounded(by_name, &search, why, sizeof why), -1);
	assert_true(!strcmp(why, "cannot run llmp-no-such-command: No such file or directory") ||
		    !strcmp(why, "llmp-no-such-command failed (status 127)"));
	/* a name without search is a path relative to the directory: not found either */
	assert_int_equal(llmp_run_bounded(by_name, &direct, why, sizeof why), -1);
}

static void test_environment_and_quiet(void **state)
{
	(void)state;
	char why[300];
	char *env[] = { "LLMP_RUN_BOUNDED_X=given", NULL };
	const struct llmp_run_how with_env = { .env = env, .timeout_s = 5 };
	/* only what env holds: the caller's HOME is not there */
	assert_int_equal(run_sh("[ \"$LLMP_RUN_BOUNDED_X\" = given ] && [ -z \"${HOME:-}\" ]", &with_env, why,
				sizeof why),
			 0);
	setenv("LLMP_RUN_BOUNDED_Y", "ours", 1);
	const struct llmp_run_how ours = { .timeout_s = 5 }, quiet = { .quiet = 1, .timeout_s = 5 };
	assert_int_equal(run_sh("[ \"$LLMP_RUN_BOUNDED_Y\" = ours ]", &ours, why, sizeof why), 0);
	/* quiet: stdin reads nothing (/dev/null), stdout is /dev/null */
	assert_int_equal(run_sh("! read line && [ \"$(readlink /proc/$$/fd/1)\" = /dev/null ]", &quiet, why,
				sizeof why),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_deadline_kills),
		cmocka_unit_test(test_cannot_start),
		cmocka_unit_test(test_environment_and_quiet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

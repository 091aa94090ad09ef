/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_metrics.c - the metrics files (runtime/job/metrics_file.h) and
 * their reader (runtime/job/metrics_read.h): the LLMP_METRICS setting, whole lines
 * appended, a half-written last line skipped by the reader and cut off
 * before the next run appends, the Prometheus file replaced atomically.
 * Every record here is written out by hand.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/job/metrics_read.h"
#include "runtime/job/metrics_file.h"

/* A record as job_metrics.c writes it, for step `step`, newline included. */
static size_t record(char *buf, size_t cap, unsigned step)
{
	return (size_t)snprintf(
		buf, cap,
		"{\"v\":1,\"time\":1700000000.%03u,\"rank\":3,\"world\":4,\"host\":\"node2\","
		"\"layout\":\"tp=2,dp=2\",\"coords\":{\"tp\":1,\"dp\":1},\"step\":%u,\"steps\":%u,"
		"\"step_s\":%u.5,\"step_last_s\":0.25,\"step_max_s\":0.75,\"ckpt_stall_s\":0.125,"
		"\"ckpt_stalls\":1,\"final\":false,\"comms\":[{\"group\":\"tp\",\"size\":2,\"rank\":1,"
		"\"ops\":%u,\"bytes_sent\":%u,\"bytes_received\":8,\"seconds\":0.5,\"wait_s\":0.25,"
		"\"waits\":2,\"last\":[{\"rank\":2,\"times\":2,\"wait_s\":0.25}]}]}\n",
		step, step, step + 1, step, 10 * step, 100 * step);
}

static char dir[64];

static int make_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/llmp-test-metrics-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	(void)state;
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
	return 0;
}

static void spec(void **state)
{
	(void)state;
	struct job_metrics_spec s;
	char msg[256];
	assert_int_equal(job_metrics_spec_parse("/m", &s, msg, sizeof msg), LLMP_OK);
	assert_string_equal(s.dir, "/m");
	assert_true(s.every_s == 10.0 && !s.prom);
	assert_int_equal(job_metrics_spec_parse("/m/x,every=30s,prom", &s, msg, sizeof msg), LLMP_OK);
	assert_string_equal(s.dir, "/m/x");
	assert_true(s.every_s == 30.0 && s.prom);
	assert_int_equal(job_metrics_spec_parse("d,every=2m", &s, msg, sizeof msg), LLMP_OK);
	assert_true(s.every_s == 120.0);
	assert_int_equal(job_metrics_spec_parse("d,every=0", &s, msg, sizeof msg), LLMP_OK);
	assert_true(s.every_s == 0.0);

	assert_int_equal(job_metrics_spec_parse("", &s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_non_null(strstr(msg, "no directory"));
	assert_int_equal(job_metrics_spec_parse(",every=1s", &s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_int_equal(job_metrics_spec_parse("d,every=soon", &s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_non_null(strstr(msg, "every='soon'"));
	assert_int_equal(job_metrics_spec_parse("d,every=-1", &s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_int_equal(job_metrics_spec_parse("d,every=5h", &s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_int_equal(job_metrics_spec_parse("d,colour=red", &s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_non_null(strstr(msg, "'colour=red'"));
}

static void append_all(int fd, unsigned from, unsigned to)
{
	char line[2048], msg[256];
	for (unsigned step = from; step < to; step++) {
		size_t n = record(line, sizeof line, step);
		assert_int_equal(job_metrics_append(fd, line, n, msg, sizeof msg), LLMP_OK);
	}
}

static off_t size_of(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* A killed writer leaves half a line: skipped when read, cut off when the file is opened again. */
static void truncated_last_line(void **state)
{
	(void)state;
	char path[512], msg[256], line[2048];
	int fd;
	job_metrics_path(dir, 3, "jsonl", path, sizeof path);
	assert_int_equal(job_metrics_open(dir, 3, &fd, msg, sizeof msg), LLMP_OK);
	append_all(fd, 0, 3);
	off_t whole = size_of(path);
	size_t n = record(line, sizeof line, 3);
	assert_int_equal(write(fd, line, n / 2), (ssize_t)(n / 2)); /* killed mid-line */
	close(fd);

	struct job_metrics_file *f = malloc(sizeof *f);
	assert_non_null(f);
	assert_int_equal(job_metrics_read_file(path, f, msg, sizeof msg), 0);
	assert_int_equal(f->records, 3);
	assert_true(f->partial);
	assert_true(f->last.has_step);
	assert_int_equal(f->last.step, 2);
	assert_int_equal(f->prev.step, 1);
	assert_int_equal(f->last.rank, 3);
	assert_string_equal(f->last.host, "node2");
	assert_int_equal(f->last.steps, 3);
	assert_true(f->last.step_s == 2.5 && f->last.ckpt_stall_s == 0.125);
	assert_int_equal(f->last.ncomms, 1);
	assert_string_equal(f->last.comms[0].group, "tp");
	assert_int_equal(f->last.comms[0].ops, 20);
	assert_int_equal(f->last.comms[0].bytes_sent, 200);
	assert_int_equal(f->last.comms[0].nlast, 1);
	assert_int_equal(f->last.comms[0].last[0].rank, 2);

	/* The next run: the half line goes, then whole lines follow. */
	assert_int_equal(job_metrics_open(dir, 3, &fd, msg, sizeof msg), LLMP_OK);
	assert_int_equal(size_of(path), whole);
	append_all(fd, 3, 5);
	close(fd);
	assert_int_equal(job_metrics_read_file(path, f, msg, sizeof msg), 0);
	assert_int_equal(f->records, 5);
	assert_false(f->partial);
	assert_int_equal(f->last.step, 4);
	free(f);
}

/* A complete line that is not a record is an error naming the line and the field. */
static void bad_lines(void **state)
{
	(void)state;
	struct job_metrics_file *f = malloc(sizeof *f);
	char text[4096], msg[256];
	assert_non_null(f);
	size_t n = record(text, sizeof text, 0);
	snprintf(text + n, sizeof text - n, "{\"v\":1,\"time\":\"noon\"}\n");
	assert_int_equal(job_metrics_read_text(text, strlen(text), f, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "line 2"));
	assert_non_null(strstr(msg, "\"time\""));
	snprintf(text + n, sizeof text - n, "{\"v\":2}\n");
	assert_int_equal(job_metrics_read_text(text, strlen(text), f, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "version 2"));
	snprintf(text + n, sizeof text - n, "{\"v\":1,\"ti");
	assert_int_equal(job_metrics_read_text(text, strlen(text), f, msg, sizeof msg), 0);
	assert_int_equal(f->records, 1);
	assert_true(f->partial);
	assert_int_equal(job_metrics_read_text("", 0, f, msg, sizeof msg), 0);
	assert_int_equal(f->records, 0);
	free(f);
}

static void prom_replaced(void **state)
{
	(void)state;
	char path[512], msg[256], buf[64] = "";
	job_metrics_path(dir, 7, "prom", path, sizeof path);
	assert_int_equal(job_metrics_replace(path, "a 1\n", 4, msg, sizeof msg), LLMP_OK);
	assert_int_equal(job_metrics_replace(path, "b 22\n", 5, msg, sizeof msg), LLMP_OK);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof buf, f));
	fclose(f);
	assert_string_equal(buf, "b 22\n");
	assert_string_equal(strrchr(path, '/') + 1, "rank-00007.prom");
	/* nothing but the two files of the tests: no temporary left */
	DIR *d = opendir(dir);
	struct dirent *e;
	int files = 0;
	while ((e = readdir(d)))
		files += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(files, 2);
	assert_int_equal(job_metrics_replace("/nonexistent-dir/x.prom", "a", 1, msg, sizeof msg),
			 LLMP_ERR_IO);
	assert_non_null(strstr(msg, "/nonexistent-dir/x.prom"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spec),
		cmocka_unit_test(truncated_last_line),
		cmocka_unit_test(bad_lines),
		cmocka_unit_test(prom_replaced),
	};
	return cmocka_run_group_tests_name("metrics", tests, make_dir, remove_dir);
}

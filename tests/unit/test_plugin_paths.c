/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plugin_paths.c - what the plugin does on paths a user names: work in
 * a child under a deadline (plugin/bounded.h), the topology file refused
 * when it is a FIFO, a device, too large or someone else's, the layout
 * file's name and mode, and the check of a held port (plugin/netif.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <llmp/llmp_plan.h>
#include <llmp/llmp_spec.h>
#include "plugin/bounded.h"
#include "plugin/layout_file.h"
#include "plugin/netif.h"
#include "common/own_dir.h"

static char dir[] = "/tmp/llmp-test-paths.XXXXXX";

static int make_dir(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[64];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static int sleeps(void *arg, char **out, size_t *outlen, char *msg, size_t msglen)
{
	(void)arg, (void)out, (void)outlen, (void)msg, (void)msglen;
	pause(); /* a read that never returns */
	return 0;
}

static int says(void *arg, char **out, size_t *outlen, char *msg, size_t msglen)
{
	(void)msg, (void)msglen;
	*out = strdup(arg);
	*outlen = strlen(arg);
	return 0;
}

static int fails(void *arg, char **out, size_t *outlen, char *msg, size_t msglen)
{
	(void)out, (void)outlen;
	snprintf(msg, msglen, "%s", (const char *)arg);
	return -1;
}

static int dies(void *arg, char **out, size_t *outlen, char *msg, size_t msglen)
{
	(void)arg, (void)out, (void)outlen, (void)msg, (void)msglen;
	_exit(9);
}

static void child_under_a_deadline(void **state)
{
	char msg[512], *out;
	size_t n;
	struct timespec t0;
	(void)state;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(
		plugin_run_bounded(NULL, "reading /x", sleeps, NULL, 300, 16, &out, &n, msg, sizeof msg), -1);
	assert_string_equal(msg, "reading /x did not finish within 1 s (a FIFO, a hung file system?)");
	double s = seconds_since(&t0);
	assert_true(s >= 0.29 && s < 5.0); /* the deadline, not the child, ends the wait */
	assert_null(out);

	assert_int_equal(plugin_run_bounded(NULL, "w", says, "hello", 5000, 16, &out, &n, msg, sizeof msg),
			 0);
	assert_int_equal(n, 5);
	assert_string_equal(out, "hello");
	free(out);
	/* More output than the caller takes. */
	assert_int_equal(plugin_run_bounded(NULL, "w", says, "hello", 5000, 4, &out, &n, msg, sizeof msg),
			 -1);
	assert_string_equal(msg, "w: more than 4 bytes");
	/* The work's own message, whatever the cap. */
	assert_int_equal(
		plugin_run_bounded(NULL, "w", fails, "no such thing", 5000, 0, NULL, NULL, msg, sizeof msg),
		-1);
	assert_string_equal(msg, "no such thing");
	assert_int_equal(plugin_run_bounded(NULL, "w", dies, NULL, 5000, 0, NULL, NULL, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "ended without an answer"));
}

/* The topology reader's verdict on path: 0 with its bytes, or -1 with msg. */
static int read_file(const char *path, size_t cap, char *msg, size_t msglen, char **out, size_t *n)
{
	struct plugin_file_read r = { .path = path, .cap = cap };
	return plugin_run_bounded(NULL, "reading", plugin_read_file_work, &r, 5000, cap, out, n, msg, msglen);
}

static void topology_file_refused_unless_regular_small_and_owned(void **state)
{
	char path[256], msg[512], *out = NULL, want[512];
	size_t n;
	struct timespec t0;
	(void)state;

	snprintf(path, sizeof path, "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(read_file(path, 1024, msg, sizeof msg, &out, &n), -1);
	snprintf(want, sizeof want, "%s: not a regular file", path);
	assert_string_equal(msg, want);
	assert_true(seconds_since(&t0) < 4.0); /* refused, not waited on until the deadline */

	assert_int_equal(read_file("/dev/zero", 1024, msg, sizeof msg, &out, &n), -1);
	assert_string_equal(msg, "/dev/zero: not a regular file");

	snprintf(path, sizeof path, "%s/t.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"llmp_topology\": 1}", f);
	fclose(f);
	assert_int_equal(read_file(path, 1024, msg, sizeof msg, &out, &n), 0);
	assert_int_equal(n, 20);
	assert_memory_equal(out, "{\"llmp_topology\": 1}", 20);
	free(out);
	assert_int_equal(read_file(path, 19, msg, sizeof msg, &out, &n), -1);
	snprintf(want, sizeof want, "%s: 20 bytes, more than the plugin reads (19)", path);
	assert_string_equal(msg, want);

	/* Someone else's file: only root can make one here. */
	if (getuid() == 0) {
		assert_int_equal(chown(path, 4242, 4242), 0);
		assert_int_equal(read_file(path, 1024, msg, sizeof msg, &out, &n), -1);
		snprintf(want, sizeof want, "%s: owned by uid 4242, neither the job's user nor root", path);
		assert_string_equal(msg, want);
	}
	/* A name with a newline in it is shown with '?' (no forged log line). */
	assert_int_equal(read_file("/nonexistent\nerror: FORGED", 1024, msg, sizeof msg, &out, &n), -1);
	assert_string_equal(msg, "/nonexistent?error: FORGED: No such file or directory");
}

static void layout_file_new_private_and_removed(void **state)
{
	char path[512], again[512], msg[512];
	struct stat sb;
	llmp_spec spec;
	llmp_plan *plan;
	(void)state;

	assert_int_equal(llmp_spec_parse("tp=2", &spec, msg, sizeof msg), LLMP_OK);
	assert_int_equal(llmp_plan_create(&spec, 4, 0, &plan, msg, sizeof msg), LLMP_OK);
	assert_int_equal(plugin_layout_file_name(dir, 7, 0, 1, path, sizeof path, msg, sizeof msg), 0);
	assert_int_equal(plugin_layout_file_name(dir, 7, 0, 1, again, sizeof again, msg, sizeof msg), 0);
	assert_string_not_equal(path, again); /* a fresh token each time: 64 random bits */
	size_t base = strlen(dir) + strlen("/llmp-layout.7.0.1.");
	assert_int_equal(strlen(path), base + 16 + strlen(".json"));
	assert_int_equal(strspn(path + base, "0123456789abcdef"), 16);

	assert_int_equal(plugin_layout_file_write(plan, NULL, path, NULL, msg, sizeof msg), 0);
	assert_int_equal(lstat(path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_true(sb.st_size > 0);
	/* A name taken already (a file, a link planted there) is never written through. */
	assert_int_equal(symlink("/etc/passwd", again), 0);
	assert_int_equal(plugin_layout_file_write(plan, NULL, again, NULL, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "File exists"));
	assert_int_equal(unlink(again), 0);

	assert_int_equal(plugin_layout_file_remove(path, NULL, msg, sizeof msg), 0);
	assert_int_equal(lstat(path, &sb), -1);
	assert_int_equal(plugin_layout_file_remove(path, NULL, msg, sizeof msg), 0); /* gone already: fine */
	llmp_plan_destroy(plan);
}

/* The task's own copy when it cannot see the file (job_container/tmpfs): whole, 0600, once. */
static void layout_file_ensured_where_the_task_sees_it(void **state)
{
	char path[512], missing[600], msg[512], text[4096];
	struct stat sb;
	llmp_spec spec;
	llmp_plan *plan;
	bool written = true;
	(void)state;

	assert_int_equal(llmp_spec_parse("tp=2", &spec, msg, sizeof msg), LLMP_OK);
	assert_int_equal(llmp_plan_create(&spec, 4, 0, &plan, msg, sizeof msg), LLMP_OK);
	assert_int_equal(plugin_layout_file_name(dir, 8, 0, 0, path, sizeof path, msg, sizeof msg), 0);
	/* Seen: nothing to do. */
	assert_int_equal(plugin_layout_file_write(plan, NULL, path, NULL, msg, sizeof msg), 0);
	assert_int_equal(plugin_layout_file_ensure(plan, NULL, path, &written, msg, sizeof msg), 0);
	assert_false(written);
	assert_int_equal(unlink(path), 0);
	/* Not seen: written under its name, nothing else left in the directory. */
	assert_int_equal(plugin_layout_file_ensure(plan, NULL, path, &written, msg, sizeof msg), 0);
	assert_true(written);
	assert_int_equal(lstat(path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0600);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	/* By hand: tp=2 over 4 ranks pairs 0,1 and 2,3. */
	assert_non_null(strstr(text, "\"world\":4"));
	assert_non_null(strstr(text, "\"tp\":[[0,1],[2,3]]"));
	/* The child's own name (path.PID) was renamed away: one file of this job in the directory. */
	DIR *d = opendir(dir);
	assert_non_null(d);
	int files = 0;
	for (struct dirent *e; (e = readdir(d));)
		files += strncmp(e->d_name, "llmp-layout.8.0.0.", strlen("llmp-layout.8.0.0.")) == 0;
	closedir(d);
	assert_int_equal(files, 1);
	/* Seen again (a sibling task's copy): left as it is. */
	assert_int_equal(plugin_layout_file_ensure(plan, NULL, path, &written, msg, sizeof msg), 0);
	assert_false(written);
	assert_int_equal(unlink(path), 0);
	/* A directory the task does not have: the message names the path. */
	snprintf(missing, sizeof missing, "%s/nodir/llmp-layout.json", dir);
	assert_int_equal(plugin_layout_file_ensure(plan, NULL, missing, &written, msg, sizeof msg), -1);
	assert_false(written);
	assert_non_null(strstr(msg, "nodir/llmp-layout.json"));
	llmp_plan_destroy(plan);
}

/*
 * Ports below the kernel's ephemeral range (32768 by default) are taken only
 * by an explicit bind, never handed to some other process's connect between
 * two lines of this test; 31000 and up stays clear of the cluster tests'
 * MASTER_PORTs (20000-29999).
 */
static void held_port_is_seen(void **state)
{
	(void)state;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	unsigned port = 31000;
	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
	for (; port < 32000; port++) {
		a.sin_port = htons((uint16_t)port);
		if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0)
			break;
	}
	assert_true(port < 32000);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(plugin_port_held(port), 1);
	close(fd);
	assert_int_equal(plugin_port_held(port), 0); /* no connection, so nothing left in TIME_WAIT */
	assert_int_equal(plugin_port_held(0), -1);
	assert_int_equal(plugin_port_held(70000), -1);
}

static void directories_of_the_user_alone(void **state)
{
	char path[256], msg[512], want[512];
	(void)state;
	snprintf(path, sizeof path, "%s/ck", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(llmp_dir_own(path, geteuid(), msg, sizeof msg), 0);
	assert_int_equal(chmod(path, 0777), 0);
	assert_int_equal(llmp_dir_own(path, geteuid(), msg, sizeof msg), -1);
	snprintf(want, sizeof want, "%s is writable by everyone (mode 0777, no sticky bit)", path);
	assert_memory_equal(msg, want, strlen(want));
	assert_int_equal(chmod(path, 0775), 0);
	assert_int_equal(llmp_dir_own(path, geteuid(), msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "writable by its group (mode 0775"));
	assert_int_equal(chmod(path, 01777), 0); /* as /tmp: nobody removes another's files */
	assert_int_equal(llmp_dir_own(path, geteuid(), msg, sizeof msg), 0);
	assert_int_equal(llmp_dir_own(path, geteuid() + 1, msg, sizeof msg), -1);
	snprintf(want, sizeof want, "%s belongs to uid %u, not to this job's user (%u)", path,
		 (unsigned)geteuid(), (unsigned)geteuid() + 1);
	assert_memory_equal(msg, want, strlen(want));
	assert_int_equal(llmp_dir_own("/dev/null", geteuid(), msg, sizeof msg), -1);
	assert_string_equal(msg, "/dev/null is not a directory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(child_under_a_deadline),
		cmocka_unit_test(topology_file_refused_unless_regular_small_and_owned),
		cmocka_unit_test(layout_file_new_private_and_removed),
		cmocka_unit_test(layout_file_ensured_where_the_task_sees_it),
		cmocka_unit_test(held_port_is_seen),
		cmocka_unit_test(directories_of_the_user_alone),
	};
	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plugin_paths.c - what the plugin does on paths a user names: work in
 * a child under a deadline (plugin/bounded.h), the topology file refused
 * when it is a FIFO, a device, too large or someone else's, the layout
 * file's name and mode, the check of a held port (common/netif.h), and the
 * rule for a directory llmp writes in for a user (common/own_dir.h): every
 * directory and link on its path.
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
#include "common/netif.h"
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
	assert_int_equal(netif_port_held(port), 1);
	close(fd);
	assert_int_equal(netif_port_held(port), 0); /* no connection, so nothing left in TIME_WAIT */
	assert_int_equal(netif_port_held(0), -1);
	assert_int_equal(netif_port_held(70000), -1);
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
	if (geteuid() == 0) /* the directories above are root's: only the last one is not the user's */
		snprintf(want, sizeof want, "%s belongs to uid %u, not to this job's user (%u)", path,
			 (unsigned)geteuid(), (unsigned)geteuid() + 1);
	else /* the test's own directory, above, is not that user's either */
		snprintf(want, sizeof want,
			 "%s, on the path to %s, belongs to uid %u, neither root nor this job's user (%u)",
			 dir, path, (unsigned)geteuid(), (unsigned)geteuid() + 1);
	assert_memory_equal(msg, want, strlen(want));
	assert_int_equal(llmp_dir_own("/dev/null", geteuid(), msg, sizeof msg), -1);
	assert_string_equal(msg, "/dev/null is not a directory");
}

/* What a refusal on the way says first: the directory, the path it is on, and the rule. */
static void want_on_the_way(char *want, size_t len, const char *parent, const char *path, const char *rule)
{
	snprintf(want, len, "%s, on the path to %s, %s", parent, path, rule);
}

/* The inode of path (links followed) is the one fd is open on. */
static void same_directory(int fd, const char *path)
{
	struct stat a, b;
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	close(fd);
}

/*
 * Every directory and link on the way is checked, not only the last
 * directory: a parent others may write to could have the directory renamed
 * away and another put in its place; another user's link leads where they
 * chose. Objects of another user are made with chown, so those cases need
 * root (as in CI); the rest runs as anyone.
 */
static void directories_on_the_way_of_the_user_or_root(void **state)
{
	const uid_t me = geteuid(), other = 4242; /* other: only as root, who can give things away */
	char base[256], run[300], msg[1024], want[1024], rule[256];
	(void)state;
	snprintf(base, sizeof base, "%s/way", dir);
	snprintf(run, sizeof run, "%s/run", base);
	assert_int_equal(mkdir(base, 0700), 0);
	assert_int_equal(mkdir(run, 0700), 0);
	assert_int_equal(llmp_dir_own(run, me, msg, sizeof msg), 0);

	/* A parent anyone may write to, without the sticky bit. */
	assert_int_equal(chmod(base, 0777), 0);
	assert_int_equal(llmp_dir_own(run, me, msg, sizeof msg), -1);
	want_on_the_way(
		want, sizeof want, base, run,
		"is writable by everyone (mode 0777, no sticky bit): anyone could rename what is under it away");
	assert_memory_equal(msg, want, strlen(want));
	/* A project directory shared through its group. */
	assert_int_equal(chmod(base, 02770), 0);
	assert_int_equal(llmp_dir_own(run, me, msg, sizeof msg), -1);
	want_on_the_way(
		want, sizeof want, base, run,
		"is writable by its group (mode 2770, no sticky bit): another member of its group could rename");
	assert_memory_equal(msg, want, strlen(want));
	/* Sticky, as /tmp, and the user's or root's: nobody else moves what is in it. */
	assert_int_equal(chmod(base, 01777), 0);
	assert_int_equal(llmp_dir_own(run, me, msg, sizeof msg), 0);
	if (me != 0)
		return;
	/* Sticky but another user's: its owner may still rename anything in it. */
	snprintf(rule, sizeof rule,
		 "belongs to uid %u, neither root nor this job's user (%u): its owner could rename",
		 (unsigned)other, (unsigned)me);
	want_on_the_way(want, sizeof want, base, run, rule);
	assert_int_equal(chown(base, other, other), 0);
	assert_int_equal(llmp_dir_own(run, me, msg, sizeof msg), -1);
	assert_memory_equal(msg, want, strlen(want));
	assert_int_equal(chmod(base, 0755), 0); /* another user's, not writable by anyone else */
	assert_int_equal(llmp_dir_own(run, me, msg, sizeof msg), -1);
	assert_memory_equal(msg, want, strlen(want));
	assert_int_equal(chown(base, me, me), 0);
	assert_int_equal(llmp_dir_own(run, me, msg, sizeof msg), 0);
}

static void links_followed_only_when_the_user_or_root_made_them(void **state)
{
	const uid_t me = geteuid();
	char real[256], mine[256], theirs[256], path[300], msg[1024], want[1024];
	int fd = -1, cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	(void)state;
	assert_true(cwd >= 0);
	snprintf(real, sizeof real, "%s/real", dir);
	snprintf(mine, sizeof mine, "%s/mine", dir);
	snprintf(theirs, sizeof theirs, "%s/theirs", dir);
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(symlink("real", mine), 0);
	assert_int_equal(llmp_dir_open_own(mine, me, &fd, msg, sizeof msg), 0);
	same_directory(fd, real);
	/* On the way, and as the working directory's child. */
	snprintf(path, sizeof path, "%s/sub", real);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/sub", mine);
	assert_int_equal(llmp_dir_own(path, me, msg, sizeof msg), 0);
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(llmp_dir_open_own("mine/sub", me, &fd, msg, sizeof msg), 0);
	snprintf(path, sizeof path, "%s/sub", real);
	same_directory(fd, path);
	/* A link that leads back to itself: refused past 40 links, as the kernel does. */
	assert_int_equal(symlink("loop", "loop"), 0);
	assert_int_equal(llmp_dir_own("loop", me, msg, sizeof msg), -1);
	snprintf(want, sizeof want, "%s/loop: more than 40 symbolic links on the path to loop", dir);
	assert_memory_equal(msg, want, strlen(want));
	assert_int_equal(fchdir(cwd), 0);
	close(cwd);
	if (me != 0)
		return;
	/* Another user's link to a directory of ours (their pick of our runs): not followed. */
	assert_int_equal(symlink(real, theirs), 0);
	assert_int_equal(lchown(theirs, 4242, 4242), 0);
	snprintf(
		want, sizeof want,
		"%s is a symbolic link of uid 4242, neither root nor this job's user (%u): it is not followed",
		theirs, (unsigned)me);
	assert_int_equal(llmp_dir_own(theirs, me, msg, sizeof msg), -1);
	assert_memory_equal(msg, want, strlen(want));
	snprintf(path, sizeof path, "%s/sub", theirs);
	assert_int_equal(llmp_dir_own(path, me, msg, sizeof msg), -1);
	assert_memory_equal(msg, want, strlen(want));
	/* Nothing is made where it leads. */
	snprintf(path, sizeof path, "%s/new", theirs);
	assert_int_equal(llmp_dir_make_own(path, me, 0755, NULL, msg, sizeof msg), LLMP_DIR_REFUSED);
	assert_memory_equal(msg, want, strlen(want));
	snprintf(path, sizeof path, "%s/new", real);
	assert_int_equal(access(path, F_OK), -1);
}

/* ".." after a link is the parent of its target, as the kernel has it; "." is where the walk is. */
static void dots_resolved_as_the_kernel_does(void **state)
{
	char deep[256], up[256], link[256], path[300], msg[1024];
	int fd = -1;
	(void)state;
	snprintf(deep, sizeof deep, "%s/deep/a/b", dir);
	snprintf(up, sizeof up, "%s/deep/a", dir);
	snprintf(link, sizeof link, "%s/to-b", dir);
	assert_int_equal(llmp_dir_make_own(deep, geteuid(), 0700, &fd, msg, sizeof msg), 0);
	same_directory(fd, deep);
	assert_int_equal(symlink("deep/a/b", link), 0);
	snprintf(path, sizeof path, "%s/../", link); /* deep/a, not dir */
	assert_int_equal(llmp_dir_open_own(path, geteuid(), &fd, msg, sizeof msg), 0);
	same_directory(fd, up);
	snprintf(path, sizeof path, "%s/./../b/.", link);
	assert_int_equal(llmp_dir_open_own(path, geteuid(), &fd, msg, sizeof msg), 0);
	same_directory(fd, deep);
	assert_int_equal(llmp_dir_open_own("/..", geteuid(), &fd, msg, sizeof msg), geteuid() == 0 ? 0 : -1);
	if (geteuid() == 0)
		same_directory(fd, "/");
	assert_int_equal(llmp_dir_own("", geteuid(), msg, sizeof msg), -1);
	assert_string_equal(msg, "an empty path names no directory");
	/* A name that cannot be shown is shown with '?' for its odd bytes. */
	snprintf(path, sizeof path, "%s/odd\x1b[31m", dir);
	assert_int_equal(mkdir(path, 0777), 0);
	assert_int_equal(chmod(path, 0777), 0);
	snprintf(path, sizeof path, "%s/odd\x1b[31m/run", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(llmp_dir_own(path, geteuid(), msg, sizeof msg), -1);
	snprintf(path, sizeof path, "%s/odd?[31m, on the path to %s/odd?[31m/run, is writable by everyone",
		 dir, dir);
	assert_memory_equal(msg, path, strlen(path));
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
		cmocka_unit_test(directories_on_the_way_of_the_user_or_root),
		cmocka_unit_test(links_followed_only_when_the_user_or_root_made_them),
		cmocka_unit_test(dots_resolved_as_the_kernel_does),
	};
	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}

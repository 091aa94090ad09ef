/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bounded.c - work on a user's path in a child, under a deadline (bounded.h).
 *
 * The pipe carries one status byte and then the payload: 'K' and the
 * work's output, or 'E' and its message. A child that ends without a
 * status byte was killed (a resource limit, the OOM killer) or failed to
 * take the job owner's identity.
 */
#define _GNU_SOURCE
#include "bounded.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fail.h"
#include "common/open_regular.h"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Everything of buf to fd; false on an error. */
static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * Become *who for good: from slurmstepd (real uid 0, effective the user's,
 * or root again in exit), take root's effective id back first, since only
 * it may set groups and ids; then every id is the user's and cannot be
 * taken back. Returns 0, or -1 when the ids are not all the user's after.
 */
static int become(const struct plugin_identity *who)
{
	if (getuid() == 0 || geteuid() == 0) {
		if (geteuid() != 0 && seteuid(0) != 0)
			return -1;
		if (setgroups(who->ngroups, who->groups) != 0 ||
		    setresgid(who->gid, who->gid, who->gid) != 0 ||
		    setresuid(who->uid, who->uid, who->uid) != 0)
			return -1;
	}
	uid_t r, e, s;
	if (getresuid(&r, &e, &s) != 0 || r != who->uid || e != who->uid || s != who->uid)
		return -1;
	/* slurmstepd itself is exempt from the OOM killer; what a user's input makes it allocate is not. */
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "0", 1);
		close(fd);
	}
	return 0;
}

static void child(const struct plugin_identity *who, plugin_child_work work, void *arg, int pipe_out)
{
	char msg[512] = "", *out = NULL;
	size_t n = 0;
	signal(SIGPIPE, SIG_IGN); /* a parent gone past its deadline: the write fails, the child ends */
	if (who && become(who) != 0)
		_exit(3);
	if (work(arg, &out, &n, msg, sizeof msg) == 0)
		_exit(write_all(pipe_out, "K", 1) == 0 && write_all(pipe_out, out, n) == 0 ? 0 : 1);
	_exit(write_all(pipe_out, "E", 1) == 0 && write_all(pipe_out, msg, strlen(msg)) == 0 ? 1 : 2);
}

/* The child killed and, when it ends at once, reaped; else left behind (a wait no signal ends). */
static void end_child(pid_t pid, bool kill_it)
{
	if (kill_it)
		kill(pid, SIGKILL);
	for (int i = 0; i < 100; i++) { /* 100 ms at most */
		pid_t r = waitpid(pid, NULL, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return;
		if (r == 0)
			usleep(1000);
	}
}

/* The room a child's message takes on the pipe, besides the status byte. */
#define MESSAGE_MAX 1024

/* Read the child's pipe until its end, the deadline or more than limit bytes. */
static int read_reply(int fd, uint64_t deadline, size_t limit, char **buf, size_t *n, bool *late)
{
	size_t size = 4096;
	*late = false;
	*n = 0;
	if (!(*buf = malloc(size)))
		return -1;
	for (;;) {
		uint64_t now = now_ms();
		if (now >= deadline) {
			*late = true;
			return -1;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, (int)(deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			*late = r == 0;
			return -1;
		}
		if (*n == size) {
			if (size > limit)
				return -1;
			char *grown = realloc(*buf, size * 2);
			if (!grown)
				return -1;
			*buf = grown;
			size *= 2;
		}
		ssize_t got = read(fd, *buf + *n, size - *n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -1;
		if (got == 0)
			return 0;
		*n += (size_t)got;
		if (*n > limit)
			return -1;
	}
}

int plugin_run_bounded(const struct plugin_identity *who, const char *what, plugin_child_work work, void *arg,
		       unsigned timeout_ms, size_t cap, char **out, size_t *outlen, char *msg, size_t msglen)
{
	int fds[2];
	if (out)
		*out = NULL;
	if (outlen)
		*outlen = 0;
	if (pipe2(fds, O_CLOEXEC) != 0)
		return snprintf(msg, msglen, "%s: cannot make a pipe: %s", what, strerror(errno)), -1;
	uint64_t deadline = now_ms() + timeout_ms;
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return snprintf(msg, msglen, "%s: cannot fork: %s", what, strerror(errno)), -1;
	}
	if (pid == 0) {
		close(fds[0]);
		child(who, work, arg, fds[1]);
	}
	close(fds[1]);
	char *buf = NULL;
	size_t n = 0;
	bool late = false;
	/* The status byte, then cap bytes of output or a message. */
	size_t limit = 1 + (cap > MESSAGE_MAX ? cap : MESSAGE_MAX);
	int rc = read_reply(fds[0], deadline, limit, &buf, &n, &late);
	close(fds[0]);
	if (rc == 0 && n > 1 && buf[0] == 'K' && n - 1 > cap)
		rc = -1;
	end_child(pid, rc != 0);
	if (rc != 0) {
		if (late)
			snprintf(msg, msglen, "%s did not finish within %u s (a FIFO, a hung file system?)",
				 what, (timeout_ms + 999) / 1000);
		else if (n > cap + 1)
			snprintf(msg, msglen, "%s: more than %zu bytes", what, cap);
		else
			snprintf(msg, msglen, "%s: out of memory or a read error", what);
		free(buf);
		return -1;
	}
	if (n == 0 || (buf[0] != 'K' && buf[0] != 'E')) {
		snprintf(msg, msglen,
			 "%s: the process doing it ended without an answer (killed, or could not take "
			 "the job owner's identity)",
			 what);
		free(buf);
		return -1;
	}
	if (buf[0] == 'E') {
		snprintf(msg, msglen, "%.*s", (int)(n - 1), buf + 1);
		free(buf);
		return -1;
	}
	/* The payload moved to the front, NUL-terminated (n - 1 payload bytes fit before the old end). */
	memmove(buf, buf + 1, n - 1);
	buf[n - 1] = '\0';
	if (out)
		*out = buf;
	else
		free(buf);
	if (outlen)
		*outlen = n - 1;
	return 0;
}

int plugin_read_file_work(void *arg, char **out, size_t *outlen, char *msg, size_t msglen)
{
	const struct plugin_file_read *r = arg;
	char shown[PLUGIN_SHOWN];
	struct stat sb;
	const char *path = plugin_show_path(shown, r->path);
	int fd = llmp_open_regular(r->path, &sb);
	if (fd == LLMP_NOT_REGULAR)
		return snprintf(msg, msglen, "%s: not a regular file", path), -1;
	if (fd < 0)
		return snprintf(msg, msglen, "%s: %s", path, strerror(errno)), -1;
	if (sb.st_uid != getuid() && sb.st_uid != 0) {
		close(fd);
		return snprintf(msg, msglen, "%s: owned by uid %u, neither the job's user nor root", path,
				(unsigned)sb.st_uid),
		       -1;
	}
	if ((uint64_t)sb.st_size > r->cap) {
		close(fd);
		return snprintf(msg, msglen, "%s: %lld bytes, more than the plugin reads (%zu)", path,
				(long long)sb.st_size, r->cap),
		       -1;
	}
	size_t n = 0, want = (size_t)sb.st_size;
	char *buf = malloc(want ? want : 1);
	while (buf && n < want) {
		ssize_t got = read(fd, buf + n, want - n);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (!buf || n != want) {
		free(buf);
		return snprintf(msg, msglen, "%s: %s", path,
				buf ? "read failed (changed while read?)" : "out of memory"),
		       -1;
	}
	*out = buf;
	*outlen = n;
	return 0;
}

const char *plugin_show_path(char out[PLUGIN_SHOWN], const char *path)
{
	return llmp_show_in(out, PLUGIN_SHOWN, path, strlen(path));
}

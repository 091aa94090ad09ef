/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * run_bounded.c - a command waited for under a deadline (run_bounded.h).
 *
 * posix_spawn, not fork: the callers may have threads (the driver's
 * heartbeat, slurmstepd's), and a spawned child runs nothing of the
 * caller's between fork and exec. The wait polls every 50 ms, which the
 * commands run here (a second or less when the controller answers) never
 * notice.
 */
#define _GNU_SOURCE
#include "run_bounded.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static pid_t spawn(char *const *argv, const struct llmp_run_how *how, int *err)
{
	posix_spawn_file_actions_t fa;
	pid_t pid = -1;
	posix_spawn_file_actions_init(&fa);
	if (how->quiet) {
		posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	}
	char *const *env = how->env ? how->env : environ;
	*err = how->search_path ? posix_spawnp(&pid, argv[0], &fa, NULL, argv, env)
				: posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	return *err ? -1 : pid;
}

int llmp_run_bounded(char *const *argv, const struct llmp_run_how *how, char *why, size_t len)
{
	int err, status = 0;
	pid_t pid = spawn(argv, how, &err);
	if (pid < 0) {
		snprintf(why, len, "cannot run %.200s: %s", argv[0], strerror(err));
		return -1;
	}
	double until = mono_s() + how->timeout_s;
	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			break;
		if (got < 0 && errno != EINTR) {
			snprintf(why, len, "waiting for %.200s: %s", argv[0], strerror(errno));
			return -1;
		}
		if (mono_s() > until) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			snprintf(why, len, "%.200s gave no answer within %.0f s", argv[0], how->timeout_s);
			return -1;
		}
		usleep(50 * 1000);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, len, "%.200s failed (status %d)", argv[0],
			 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		return -1;
	}
	return 0;
}

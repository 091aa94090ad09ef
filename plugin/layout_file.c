/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * layout_file.c - write and remove the per-node JSON layout file.
 */
#include "layout_file.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llmp/llmp_json.h>

int plugin_layout_file_write(const llmp_plan *plan, const char *dir, uint32_t job_id, uint32_t step_id,
			     uint32_t node_id, char *path, size_t pathlen, char *msg, size_t msglen)
{
	char tmp[PATH_MAX];
	int n = snprintf(path, pathlen, "%s/llmp-layout.%u.%u.%u.json", dir, job_id, step_id, node_id);

	if (n < 0 || (size_t)n >= pathlen || (size_t)n + 8 >= sizeof tmp) {
		snprintf(msg, msglen, "layout file path under '%s' is too long", dir);
		return -1;
	}
	snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(msg, msglen, "cannot create the layout file in %s: %s", dir, strerror(errno));
		return -1;
	}
	fchmod(fd, 0644); /* every task of the job reads it */
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		snprintf(msg, msglen, "cannot write %s: %s", tmp, strerror(errno));
		return -1;
	}
	llmp_status st = llmp_plan_write_json(plan, LLMP_JSON_ALL_RANKS, f);
	int saved = errno;
	if (fclose(f) != 0 && st == LLMP_OK) {
		st = LLMP_ERR_IO;
		saved = errno;
	}
	if (st == LLMP_OK && rename(tmp, path) != 0) {
		st = LLMP_ERR_IO;
		saved = errno;
	}
	if (st != LLMP_OK) {
		unlink(tmp);
		snprintf(msg, msglen, "cannot write the layout file %s: %s", path,
			 st == LLMP_ERR_IO ? strerror(saved) : llmp_strerror(st));
		return -1;
	}
	return 0;
}

int plugin_layout_file_remove(const char *path, uid_t uid, gid_t gid)
{
	if (geteuid() != 0 || uid == 0)
		return unlink(path) == 0 || errno == ENOENT ? 0 : -1;

	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
			_exit(2);
		_exit(unlink(path) == 0 || errno == ENOENT ? 0 : 1);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

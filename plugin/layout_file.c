/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * layout_file.c - write and remove the per-node JSON layout file (layout_file.h).
 */
#define _GNU_SOURCE
#include "layout_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <llmp/llmp_json.h>

int plugin_random_file_name(const char *dir, const char *stem, const char *suffix, const char *what,
			    uint32_t job_id, uint32_t step_id, uint32_t node_id, char *path, size_t pathlen,
			    char *msg, size_t msglen)
{
	char shown[PLUGIN_SHOWN];
	uint64_t token;
	if (getrandom(&token, sizeof token, 0) != (ssize_t)sizeof token) {
		snprintf(msg, msglen, "no random bytes for the %s's name: %s", what, strerror(errno));
		return -1;
	}
	int n = snprintf(path, pathlen, "%s/%s.%u.%u.%u.%016llx%s", dir, stem, job_id, step_id, node_id,
			 (unsigned long long)token, suffix);
	if (n < 0 || (size_t)n >= pathlen) {
		snprintf(msg, msglen, "%s path under '%s' is too long", what, plugin_show_path(shown, dir));
		return -1;
	}
	return 0;
}

int plugin_layout_file_name(const char *dir, uint32_t job_id, uint32_t step_id, uint32_t node_id, char *path,
			    size_t pathlen, char *msg, size_t msglen)
{
	return plugin_random_file_name(dir, "llmp-layout", ".json", "layout file", job_id, step_id, node_id,
				       path, pathlen, msg, msglen);
}

struct write_job {
	const llmp_plan *plan;
	const uint32_t *stage_layers; /* NULL: even */
	const char *path;
};

/* In the child: the new file, written whole, or gone again. */
static int write_work(void *arg, char **out, size_t *outlen, char *msg, size_t msglen)
{
	const struct write_job *w = arg;
	char shown[PLUGIN_SHOWN];
	const char *path = plugin_show_path(shown, w->path);
	(void)out;
	(void)outlen;
	/* O_EXCL: never a file or link someone put there; the name is new, so nothing is there. */
	int fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return snprintf(msg, msglen, "cannot create the layout file %s: %s", path, strerror(errno)),
		       -1;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(w->path);
		return snprintf(msg, msglen, "cannot write %s: %s", path, strerror(errno)), -1;
	}
	llmp_status st = llmp_plan_write_json_stages(w->plan, LLMP_JSON_ALL_RANKS, w->stage_layers, f);
	int saved = errno;
	if (fclose(f) != 0 && st == LLMP_OK) {
		st = LLMP_ERR_IO;
		saved = errno;
	}
	if (st != LLMP_OK) {
		unlink(w->path);
		return snprintf(msg, msglen, "cannot write the layout file %s: %s", path,
				st == LLMP_ERR_IO ? strerror(saved) : llmp_strerror(st)),
		       -1;
	}
	return 0;
}

int plugin_layout_file_write(const llmp_plan *plan, const uint32_t *stage_layers, const char *path,
			     const struct plugin_identity *who, char *msg, size_t msglen)
{
	char shown[PLUGIN_SHOWN], what[PLUGIN_SHOWN + 32];
	struct write_job w = { .plan = plan, .stage_layers = stage_layers, .path = path };
	snprintf(what, sizeof what, "writing %s", plugin_show_path(shown, path));
	return plugin_run_bounded(who, what, write_work, &w, PLUGIN_PATH_TIMEOUT_MS, 0, NULL, NULL, msg,
				  msglen);
}

struct ensure_job {
	const llmp_plan *plan;
	const uint32_t *stage_layers;
	const char *path;
};

/* In the child: nothing when path is there, else a copy under a name of this process's, renamed to path. */
static int ensure_work(void *arg, char **out, size_t *outlen, char *msg, size_t msglen)
{
	const struct ensure_job *e = arg;
	char own[PATH_MAX + 32], shown[PLUGIN_SHOWN];
	struct stat st;
	if (lstat(e->path, &st) == 0)
		return 0;
	if (errno != ENOENT)
		return snprintf(msg, msglen, "cannot see the layout file %s: %s",
				plugin_show_path(shown, e->path), strerror(errno)),
		       -1;
	if (snprintf(own, sizeof own, "%s.%ld", e->path, (long)getpid()) >= (int)sizeof own)
		return snprintf(msg, msglen, "layout file path %s is too long",
				plugin_show_path(shown, e->path)),
		       -1;
	struct write_job w = { .plan = e->plan, .stage_layers = e->stage_layers, .path = own };
	if (write_work(&w, out, outlen, msg, msglen) < 0)
		return -1;
	if (rename(own, e->path) != 0) {
		int saved = errno;
		unlink(own);
		return snprintf(msg, msglen, "cannot put the layout file at %s: %s",
				plugin_show_path(shown, e->path), strerror(saved)),
		       -1;
	}
	/* Tell the parent a copy was made: one byte of output. */
	if ((*out = malloc(1)) != NULL) {
		**out = 'w';
		*outlen = 1;
	}
	return 0;
}

int plugin_layout_file_ensure(const llmp_plan *plan, const uint32_t *stage_layers, const char *path,
			      bool *written, char *msg, size_t msglen)
{
	char shown[PLUGIN_SHOWN], what[PLUGIN_SHOWN + 32], *out = NULL;
	size_t outlen = 0;
	struct ensure_job e = { .plan = plan, .stage_layers = stage_layers, .path = path };
	snprintf(what, sizeof what, "writing %s", plugin_show_path(shown, path));
	int rc = plugin_run_bounded(NULL, what, ensure_work, &e, PLUGIN_PATH_TIMEOUT_MS, 1, &out, &outlen,
				    msg, msglen);
	*written = rc == 0 && outlen == 1;
	free(out);
	return rc;
}

static int remove_work(void *arg, char **out, size_t *outlen, char *msg, size_t msglen)
{
	const char *path = arg;
	char shown[PLUGIN_SHOWN];
	(void)out;
	(void)outlen;
	if (unlink(path) == 0 || errno == ENOENT)
		return 0;
	return snprintf(msg, msglen, "could not remove %s: %s", plugin_show_path(shown, path),
			strerror(errno)),
	       -1;
}

int plugin_layout_file_remove(const char *path, const struct plugin_identity *who, char *msg, size_t msglen)
{
	char shown[PLUGIN_SHOWN], what[PLUGIN_SHOWN + 32];
	snprintf(what, sizeof what, "removing %s", plugin_show_path(shown, path));
	return plugin_run_bounded(who, what, remove_work, (void *)path, PLUGIN_PATH_TIMEOUT_MS, 0, NULL, NULL,
				  msg, msglen);
}

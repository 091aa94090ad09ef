/*
 * ckpt_fs.c - the filesystem side of an atomic commit: directories made and
 * removed, fsync of files and directories, the `latest` pointer, retention.
 *
 * A checkpoint directory is step-N once complete and step-N.tmp before;
 * the rename is the commit. Only names of the form step-<digits> count.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_internal.h"

void ck_step_path(const char *root, uint64_t step, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/step-%llu%s", root, (unsigned long long)step, suffix);
}

void ck_shard_path(const char *dir, uint32_t rank, char *buf, size_t len)
{
	if (dir)
		snprintf(buf, len, "%s/shard-%u.h5", dir, rank);
	else
		snprintf(buf, len, "shard-%u.h5", rank);
}

llmp_status ck_mkdirs(llmp_ctx *ctx, const char *path)
{
	char buf[4096];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return rt_fail(ctx, LLMP_ERR_ARG, "checkpoint path too long: %.60s...", path);
	for (char *p = buf + 1; ; p++) {
		char c = *p;
		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return rt_fail(ctx, LLMP_ERR_IO, "mkdir %s: %s", buf, strerror(errno));
		*p = c;
		if (!c)
			break;
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return rt_fail(ctx, LLMP_ERR_IO, "%s is not a directory", path);
	return LLMP_OK;
}

llmp_status ck_remove_tree(llmp_ctx *ctx, const char *path)
{
	DIR *dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? LLMP_OK : rt_fail(ctx, LLMP_ERR_IO, "opendir %s: %s", path, strerror(errno));
	struct dirent *e;
	llmp_status st = LLMP_OK;
	while (st == LLMP_OK && (e = readdir(dir))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char child[4096];
		snprintf(child, sizeof child, "%s/%s", path, e->d_name);
		struct stat sb;
		if (lstat(child, &sb) == 0 && S_ISDIR(sb.st_mode))
			st = ck_remove_tree(ctx, child);
		else if (unlink(child) != 0 && errno != ENOENT)
			st = rt_fail(ctx, LLMP_ERR_IO, "unlink %s: %s", child, strerror(errno));
	}
	closedir(dir);
	if (st == LLMP_OK && rmdir(path) != 0 && errno != ENOENT)
		st = rt_fail(ctx, LLMP_ERR_IO, "rmdir %s: %s", path, strerror(errno));
	return st;
}

llmp_status ck_fsync_msg(const char *path, char *msg, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(msg, len, "open %s for fsync: %s", path, strerror(errno));
		return LLMP_ERR_IO;
	}
	int rc = fsync(fd);
	int saved = errno;
	close(fd);
	/* Some filesystems cannot fsync a directory; the data files are what matter most. */
	if (rc != 0 && !(saved == EINVAL || saved == EBADF)) {
		snprintf(msg, len, "fsync %s: %s", path, strerror(saved));
		return LLMP_ERR_IO;
	}
	return LLMP_OK;
}

llmp_status ck_fsync_path(llmp_ctx *ctx, const char *path)
{
	return ck_fsync_msg(path, ctx->errmsg, sizeof ctx->errmsg);
}

/* N from "step-N" exactly; false for anything else (step-N.tmp included). */
static bool parse_step(const char *name, uint64_t *step)
{
	if (strncmp(name, "step-", 5) != 0 || !name[5])
		return false;
	uint64_t v = 0;
	for (const char *p = name + 5; *p; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*step = v;
	return true;
}

static int newest_first(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x > y ? -1 : x < y;
}

llmp_status ck_list_steps(llmp_ctx *ctx, const char *root, uint64_t **steps, size_t *n)
{
	*steps = NULL;
	*n = 0;
	DIR *dir = opendir(root);
	if (!dir)
		return errno == ENOENT ? LLMP_OK : rt_fail(ctx, LLMP_ERR_IO, "opendir %s: %s", root, strerror(errno));
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		uint64_t step;
		if (!parse_step(e->d_name, &step))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			uint64_t *grown = realloc(*steps, cap * sizeof *grown);
			if (!grown) {
				closedir(dir);
				free(*steps);
				*steps = NULL;
				return rt_fail(ctx, LLMP_ERR_NOMEM, "listing %s", root);
			}
			*steps = grown;
		}
		(*steps)[(*n)++] = step;
	}
	closedir(dir);
	if (*n)
		qsort(*steps, *n, sizeof **steps, newest_first);
	return LLMP_OK;
}

llmp_status ck_write_latest(llmp_ctx *ctx, const char *root, uint64_t step)
{
	char tmp[4096], final[4096];
	snprintf(tmp, sizeof tmp, "%s/latest.tmp", root);
	snprintf(final, sizeof final, "%s/latest", root);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return rt_fail(ctx, LLMP_ERR_IO, "create %s: %s", tmp, strerror(errno));
	int bad = fprintf(f, "step-%llu\n", (unsigned long long)step) < 0;
	bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
	bad |= fclose(f) != 0;
	if (bad)
		return rt_fail(ctx, LLMP_ERR_IO, "write %s: %s", tmp, strerror(errno));
	if (rename(tmp, final) != 0)
		return rt_fail(ctx, LLMP_ERR_IO, "rename %s: %s", tmp, strerror(errno));
	return ck_fsync_path(ctx, root);
}

llmp_status ck_retain(llmp_ctx *ctx, const char *root, unsigned keep, uint64_t saved)
{
	uint64_t *steps;
	size_t n;
	unsigned kept = 1; /* the checkpoint just saved, whatever its number */
	llmp_status st = ck_list_steps(ctx, root, &steps, &n);
	for (size_t i = 0; st == LLMP_OK && i < n; i++) {
		if (steps[i] == saved || kept++ < keep)
			continue;
		/* Renamed first: a deletion cut short must not leave a "complete" step-N. */
		char path[4096], doomed[4200];
		ck_step_path(root, steps[i], "", path, sizeof path);
		snprintf(doomed, sizeof doomed, "%s.deleting", path);
		if (rename(path, doomed) != 0)
			st = rt_fail(ctx, LLMP_ERR_IO, "rename %s: %s", path, strerror(errno));
		else
			st = ck_remove_tree(ctx, doomed);
	}
	free(steps);
	return st;
}

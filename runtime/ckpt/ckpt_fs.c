/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_fs.c - the filesystem side of an atomic commit with a context:
 * directories made and removed, fsync, the `latest` pointer, retention
 * (the names and the listing without a context: format/dir.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_internal.h"
#include "common/own_dir.h"

/*
 * Each missing directory is made only in one that has passed own_dir.h's
 * rule, so another user's link or directory on the way is refused before
 * anything is made where it leads; what already exists must pass too (made
 * by someone else first in a shared /tmp or scratch space, what is saved
 * there would be theirs to replace).
 */
llmp_status ck_mkdirs(llmp_ctx *ctx, const char *path)
{
	char why[1024];
	if (strlen(path) >= 4096)
		return rt_fail(ctx, LLMP_ERR_ARG, "checkpoint path too long: %.60s...", path);
	int r = llmp_dir_make_own(path, geteuid(), 0755, NULL, why, sizeof why);
	if (r == LLMP_DIR_REFUSED)
		return rt_fail(ctx, LLMP_ERR_IO, "checkpoint directory refused: %s", why);
	return r == 0 ? LLMP_OK : rt_fail(ctx, LLMP_ERR_IO, "%s", why);
}

llmp_status ck_remove_tree(llmp_ctx *ctx, const char *path)
{
	DIR *dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? LLMP_OK
				       : rt_fail(ctx, LLMP_ERR_IO, "opendir %s: %s", path, strerror(errno));
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

llmp_status ck_fsync_path(llmp_ctx *ctx, const char *path)
{
	return ck_fsync_msg(path, ctx->errmsg, sizeof ctx->errmsg);
}
llmp_status ck_list_steps(llmp_ctx *ctx, const char *root, uint64_t **steps, size_t *n)
{
	struct ck_entry *entries;
	size_t count;
	*steps = NULL;
	*n = 0;
	llmp_status st = ck_list_entries(root, &entries, &count, ctx->errmsg, sizeof ctx->errmsg);
	if (st != LLMP_OK || count == 0)
		return st;
	if (!(*steps = malloc(count * sizeof **steps))) {
		free(entries);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "listing %s", root);
	}
	for (size_t i = 0; i < count; i++)
		if (entries[i].kind == CK_ENTRY_COMPLETE)
			(*steps)[(*n)++] = entries[i].step;
	free(entries);
	return LLMP_OK;
}

llmp_status ck_write_latest(llmp_ctx *ctx, const char *root, uint64_t step)
{
	char text[32];
	snprintf(text, sizeof text, "step-%llu\n", (unsigned long long)step);
	return ck_replace_file(root, CK_LATEST, CK_LATEST CK_SUFFIX_TMP, text, ctx->errmsg,
			       sizeof ctx->errmsg);
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
		snprintf(doomed, sizeof doomed, "%s" CK_SUFFIX_DELETING, path);
		if (rename(path, doomed) != 0)
			st = rt_fail(ctx, LLMP_ERR_IO, "rename %s: %s", path, strerror(errno));
		else
			st = ck_remove_tree(ctx, doomed);
	}
	free(steps);
	return st;
}

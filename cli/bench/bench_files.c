/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_files.c - plain-file baselines and helpers of `llmp ckpt bench` (bench_files.h). */
#define _GNU_SOURCE /* statfs */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bench_files.h"

int bench_write_fsync(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	const char *p = buf;
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int saved = n < 0 ? errno : ENOSPC;
			close(fd);
			errno = saved;
			return -1;
		}
		done += (size_t)n;
	}
	if (fsync(fd) != 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return close(fd);
}

int bench_read(const char *path, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char *p = buf;
	for (size_t done = 0; done < len;) {
		ssize_t n = read(fd, p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int saved = n < 0 ? errno : EIO; /* shorter than written */
			close(fd);
			errno = saved;
			return -1;
		}
		done += (size_t)n;
	}
	return close(fd);
}

static int drop_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

/* fn on the path of each entry of directory `path` but . and .., until one returns nonzero. */
static int for_each_entry(const char *path, int (*fn)(const char *child))
{
	DIR *dir = opendir(path);
	if (!dir)
		return -1;
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(dir))) {
		char child[4200];
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(child, sizeof child, "%s/%s", path, e->d_name);
		rc = fn(child);
	}
	closedir(dir);
	return rc;
}

int bench_drop_cache(const char *path)
{
	struct stat sb;
	if (lstat(path, &sb) != 0)
		return -1;
	if (!S_ISDIR(sb.st_mode))
		return S_ISREG(sb.st_mode) ? drop_file(path) : 0;
	return for_each_entry(path, bench_drop_cache);
}

const char *bench_fs_name(const char *path)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} known[] = {
		{ 0xEF53, "ext4" },      { 0x58465342, "xfs" },     { 0x9123683E, "btrfs" },
		{ 0x01021994, "tmpfs" }, { 0x6969, "nfs" },         { 0x0BD00BD0, "lustre" },
		{ 0x47504653, "gpfs" },  { 0x794c7630, "overlay" }, { 0x65735546, "fuse" },
		{ 0x00C36400, "ceph" },  { 0x2FC12FC1, "zfs" },     { 0xFF534D42, "cifs" },
	};
	struct statfs fs;
	if (statfs(path, &fs) != 0)
		return "?";
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if ((unsigned long)fs.f_type == known[i].magic)
			return known[i].name;
	return "?";
}

int bench_remove_tree(const char *path)
{
	struct stat sb;
	if (lstat(path, &sb) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(sb.st_mode))
		return unlink(path);
	int rc = for_each_entry(path, bench_remove_tree);
	return rc == 0 ? rmdir(path) : rc;
}

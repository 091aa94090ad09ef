/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_files.h - the plain-file side of `llmp ckpt bench`: the baselines
 * a checkpoint is measured against (write()+fsync, read()), dropping a
 * file's pages from the page cache, the filesystem's name, and removing the
 * bench's directory. Each call returns 0, or -1 with errno set.
 */
#ifndef LLMP_BENCH_FILES_H
#define LLMP_BENCH_FILES_H

#include <stddef.h>

/* Create path and write len bytes of buf with write(), then fsync and close. */
int bench_write_fsync(const char *path, const void *buf, size_t len);

/* Read len bytes of path into buf with read(). */
int bench_read(const char *path, void *buf, size_t len);

/*
 * Drop the cached pages of path (of every file under it, when it is a
 * directory) with posix_fadvise(POSIX_FADV_DONTNEED): Linux drops clean
 * pages, which fsynced files have, without root. The next read goes to
 * the device (or, on a VM, to whatever the host caches).
 */
int bench_drop_cache(const char *path);

/* "ext4", "xfs", "lustre", ...: the filesystem holding path, or "?" */
const char *bench_fs_name(const char *path);

/* rm -r path: symbolic links are removed, not followed. */
int bench_remove_tree(const char *path);

#endif /* LLMP_BENCH_FILES_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_lustreapi.c - a test double of liblustreapi's layout calls, loaded by
 * libllmp through LLMP_LUSTREAPI_LIBRARY (tests/ckpt_stripe.bats). It is
 * not Lustre: it sets no layout, it writes every call it receives, with its
 * arguments, one line each, to the file named by FAKE_LUSTREAPI_LOG, so the
 * test can check which directory got which layout, and when.
 *
 *   FAKE_LUSTREAPI_FS_TYPE  the filesystem type it tells libllmp a
 *                           directory is on (llmp_test_double_fs_type, a
 *                           symbol no real liblustreapi has); default
 *                           Lustre's, 0x0BD00BD0
 *   FAKE_LUSTREAPI_FAIL     the name of one call to fail, with ENOSPC
 *
 * The layout calls' names and arguments are liblustreapi's (lustreapi.h);
 * no code of it is here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_DIRECTORY */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define WIDE (0x1000000000000001ULL + 2) /* LLAPI_LAYOUT_WIDE: every OST */

struct fake_layout {
	uint64_t count, size;
	char pool[32];
};

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	const char *path = getenv("FAKE_LUSTREAPI_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/* Whether this call is the one to fail (errno set). */
static int failing(const char *call)
{
	const char *which = getenv("FAKE_LUSTREAPI_FAIL");
	if (which && strcmp(which, call) == 0) {
		errno = ENOSPC;
		return 1;
	}
	return 0;
}

long llmp_test_double_fs_type(const char *path)
{
	const char *t = getenv("FAKE_LUSTREAPI_FS_TYPE");
	note("fs_type %s", path);
	return t ? strtol(t, NULL, 0) : 0x0BD00BD0L;
}

struct fake_layout *llapi_layout_alloc(void)
{
	if (failing("llapi_layout_alloc"))
		return NULL;
	note("alloc");
	return calloc(1, sizeof(struct fake_layout));
}

void llapi_layout_free(struct fake_layout *l)
{
	note("free");
	free(l);
}

int llapi_layout_stripe_count_set(struct fake_layout *l, uint64_t count)
{
	if (failing("llapi_layout_stripe_count_set"))
		return -1;
	if (count == WIDE)
		note("stripe_count_set WIDE");
	else
		note("stripe_count_set %llu", (unsigned long long)count);
	l->count = count;
	return 0;
}

int llapi_layout_stripe_size_set(struct fake_layout *l, uint64_t size)
{
	if (failing("llapi_layout_stripe_size_set"))
		return -1;
	note("stripe_size_set %llu", (unsigned long long)size);
	l->size = size;
	return 0;
}

int llapi_layout_pool_name_set(struct fake_layout *l, const char *pool)
{
	if (failing("llapi_layout_pool_name_set"))
		return -1;
	note("pool_name_set %s", pool);
	snprintf(l->pool, sizeof l->pool, "%s", pool);
	return 0;
}

/* How many entries besides . and .. path holds: 0 when no shard exists yet. */
static int entries(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

int llapi_layout_file_open(const char *path, int flags, mode_t mode, const struct fake_layout *l)
{
	if (failing("llapi_layout_file_open"))
		return -1;
	/* The whole layout as it reaches the directory, on one line. */
	note("file_open %s directory=%d entries=%d count=%s%llu size=%llu pool=%s", path,
	     (flags & O_DIRECTORY) != 0, entries(path), l->count == WIDE ? "WIDE" : "",
	     l->count == WIDE ? 0ULL : (unsigned long long)l->count, (unsigned long long)l->size,
	     l->pool[0] ? l->pool : "-");
	return open(path, flags, mode);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_stripe.c - the Lustre layout of a step directory (stripe= of
 * --llm-checkpoint, llmp_ckpt_opts.stripe_*).
 *
 * Rank 0 sets the directory's default layout right after it creates
 * step-N.tmp and before any rank creates a shard there, so every shard (a
 * rank's or a node's) inherits it: that is what `lfs setstripe DIR` does, an
 * open of the directory through llapi_layout_file_open() with the layout
 * attached. liblustreapi is loaded with dlopen, never linked, so libllmp
 * builds and runs where Lustre is absent.
 *
 * A layout that cannot be applied never fails the save: the layout only
 * changes how fast the shards are written, never what they hold, and a
 * checkpoint lost to a hint would be far worse than a slow one. Rank 0
 * warns once per handle instead, naming the call, the directory and the
 * library's words, and says once what it applied.
 *
 * GPFS has no per-directory or per-file stripe layout: every file is
 * striped over all the disks of its storage pool in blocks of the
 * filesystem's block size, which the alignment already follows. Its
 * gpfs_fcntl() hints (access ranges, freeing cached ranges) are advice
 * about one open file's cache, not a layout, and would not help a write of
 * each byte once; so on GPFS stripe= is reported as not applicable.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ckpt_internal.h"
#include <llmp/llmp_ckpt_spec.h>
#include <llmp/llmp_env.h>

#define LUSTRE_SUPER_MAGIC 0x0BD00BD0L
#define GPFS_SUPER_MAGIC 0x47504653L
/* liblustreapi's stripe count for "every OST" (lustreapi.h, LLAPI_LAYOUT_WIDE). */
#define LLAPI_LAYOUT_WIDE_COUNT (0x1000000000000001ULL + 2)
#define LUSTREAPI_ENV LLMP_ENV_LUSTREAPI_LIBRARY
/*
 * Exported only by the test double (tests/ckpt/fake_lustreapi.c), never by
 * liblustreapi: the filesystem type it pretends a directory is on. Looked up
 * only in a library named by LLMP_LUSTREAPI_LIBRARY, so no production run
 * sees a type other than statfs's.
 */
#define TEST_FS_TYPE_SYMBOL "llmp_test_double_fs_type"

struct lustreapi {
	void *(*alloc)(void);
	void (*free)(void *layout);
	int (*count_set)(void *layout, uint64_t count);
	int (*size_set)(void *layout, uint64_t size);
	int (*pool_set)(void *layout, const char *pool);
	int (*file_open)(const char *path, int flags, mode_t mode, const void *layout);
	long (*test_fs_type)(const char *path); /* the test double's, or NULL */
};

struct ck_stripe {
	int count;
	uint64_t size;
	char pool[LLMP_CKPT_STRIPE_POOL_MAX];
	void *lib;         /* liblustreapi once loaded */
	char libname[256]; /* the name it was loaded by, for messages */
	bool load_tried;
	char load_error[300]; /* why it could not be loaded */
	struct lustreapi api;
	bool told_applied, told_problem; /* the one message of each kind this handle prints */
};

llmp_status ck_stripe_open(llmp_ckpt *ck, const llmp_ckpt_opts *opts)
{
	if (!opts->stripe_count && !opts->stripe_size && !(opts->stripe_pool && *opts->stripe_pool))
		return LLMP_OK; /* no layout asked for: nothing to load, nothing to check */
	char why[LLMP_MSG_MAX];
	if (llmp_ckpt_stripe_check(opts->stripe_count, opts->stripe_size, opts->stripe_pool, why,
				   sizeof why) != LLMP_OK)
		return rt_fail(ck->ctx, LLMP_ERR_ARG, "llmp_ckpt_open: %s", why);
	struct ck_stripe *s = calloc(1, sizeof *s);
	if (!s)
		return rt_fail(ck->ctx, LLMP_ERR_NOMEM, "llmp_ckpt_open: stripe layout");
	s->count = opts->stripe_count;
	s->size = opts->stripe_size;
	snprintf(s->pool, sizeof s->pool, "%s", opts->stripe_pool ? opts->stripe_pool : "");
	ck->stripe = s;
	return LLMP_OK;
}

void ck_stripe_close(llmp_ckpt *ck)
{
	if (!ck->stripe)
		return;
	if (ck->stripe->lib)
		dlclose(ck->stripe->lib);
	free(ck->stripe);
	ck->stripe = NULL;
}

/* dlsym into a function pointer without the cast ISO C forbids. */
static bool resolve(void *lib, const char *name, void *fn)
{
	void *p = dlsym(lib, name);
	memcpy(fn, &p, sizeof p);
	return p != NULL;
}

/*
 * Load liblustreapi (LLMP_LUSTREAPI_LIBRARY, else its usual sonames) and
 * its layout calls, once per handle. False with s->load_error on failure.
 */
static bool load_lustreapi(struct ck_stripe *s)
{
	if (s->load_tried)
		return s->lib != NULL;
	s->load_tried = true;
	const char *env = getenv(LUSTREAPI_ENV);
	const char *names[] = { env && *env ? env : "liblustreapi.so.1",
				env && *env ? NULL : "liblustreapi.so" };
	for (size_t i = 0; i < 2 && names[i] && !s->lib; i++) {
		s->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		snprintf(s->libname, sizeof s->libname, "%s", names[i]);
		if (!s->lib) {
			const char *e = dlerror();
			snprintf(s->load_error, sizeof s->load_error, "%s", e ? e : names[i]);
		}
	}
	if (!s->lib)
		return false;
	struct lustreapi *a = &s->api;
	static const char *const calls[] = {
		"llapi_layout_alloc",           "llapi_layout_free",          "llapi_layout_stripe_count_set",
		"llapi_layout_stripe_size_set", "llapi_layout_pool_name_set", "llapi_layout_file_open"
	};
	void *fns[] = { &a->alloc, &a->free, &a->count_set, &a->size_set, &a->pool_set, &a->file_open };
	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
		if (!resolve(s->lib, calls[i], fns[i])) {
			snprintf(s->load_error, sizeof s->load_error, "%s lacks %s", s->libname, calls[i]);
			dlclose(s->lib);
			s->lib = NULL;
			return false;
		}
	}
	if (env && *env)
		resolve(s->lib, TEST_FS_TYPE_SYMBOL, &a->test_fs_type);
	return true;
}

/* The statfs type of dir; a library named by LLMP_LUSTREAPI_LIBRARY that is the test double may say otherwise. */
static long fs_type(struct ck_stripe *s, const char *dir)
{
	const char *env = getenv(LUSTREAPI_ENV);
	if (env && *env && load_lustreapi(s) && s->api.test_fs_type)
		return s->api.test_fs_type(dir);
	struct statfs sf;
	return statfs(dir, &sf) == 0 ? (long)sf.f_type : -1;
}

static const char *fs_name(long type)
{
	static const struct {
		long type;
		const char *name;
	} known[] = {
		{ 0xEF53, "ext2/3/4" },           { 0x58465342, "xfs" },  { 0x9123683E, "btrfs" },
		{ 0x01021994, "tmpfs" },          { 0x6969, "nfs" },      { 0x794C7630, "overlayfs" },
		{ 0x65735546, "fuse" },           { 0xFF534D42, "cifs" }, { 0x2FC12FC1, "zfs" },
		{ 0x00C36400, "ceph" },           { 0x5346414F, "afs" },  { GPFS_SUPER_MAGIC, "GPFS" },
		{ LUSTRE_SUPER_MAGIC, "Lustre" },
	};
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (known[i].type == type)
			return known[i].name;
	return "unknown";
}

/* "stripe=8:4M:flash" as the user would have written it (sizes in bytes). */
static void describe(const struct ck_stripe *s, char *out, size_t len)
{
	int n = snprintf(out, len, "stripe=%d", s->count);
	if (n > 0 && (size_t)n < len && (s->size || s->pool[0]))
		snprintf(out + n, len - (size_t)n, ":%.0llu%s%s", (unsigned long long)s->size,
			 s->pool[0] ? ":" : "", s->pool);
}

/* Rank 0's one warning of this handle: the layout was not applied, and why. */
static void warn_once(const llmp_ctx *ctx, struct ck_stripe *s, const char *dir, const char *why)
{
	char what[96];
	if (s->told_problem)
		return;
	s->told_problem = true;
	describe(s, what, sizeof what);
	rt_log(ctx, RT_LOG_CKPT, RT_LOG_WARN,
	       "checkpoint %s not applied to %s: %s; the shards get the directory's "
	       "inherited layout and the save goes on (doc/checkpoint.md, Filesystem hints)",
	       what, dir, why);
}

/* The layout set on dir through liblustreapi; the failing call and its errno in why. */
static bool set_lustre_layout(struct ck_stripe *s, const char *dir, char *why, size_t len)
{
	struct lustreapi *a = &s->api;
	errno = 0;
	void *layout = a->alloc();
	if (!layout) {
		snprintf(why, len, "llapi_layout_alloc (%s): %s", s->libname,
			 strerror(errno ? errno : ENOMEM));
		return false;
	}
	const char *call = NULL;
	uint64_t count = s->count < 0 ? LLAPI_LAYOUT_WIDE_COUNT : (uint64_t)s->count;
	char args[64] = "";
	if (a->count_set(layout, count) != 0) {
		call = "llapi_layout_stripe_count_set";
		snprintf(args, sizeof args, "%d", s->count);
	} else if (s->size && a->size_set(layout, s->size) != 0) {
		call = "llapi_layout_stripe_size_set";
		snprintf(args, sizeof args, "%llu", (unsigned long long)s->size);
	} else if (s->pool[0] && a->pool_set(layout, s->pool) != 0) {
		call = "llapi_layout_pool_name_set";
		snprintf(args, sizeof args, "%s", s->pool);
	} else {
		int fd = a->file_open(dir, O_RDONLY | O_DIRECTORY, 0, layout);
		if (fd < 0)
			call = "llapi_layout_file_open";
		else
			close(fd);
	}
	int err = errno;
	a->free(layout);
	if (call)
		snprintf(why, len, "%s(%s) failed (%s): %s", call, args[0] ? args : dir, s->libname,
			 strerror(err ? err : EIO));
	return call == NULL;
}

void ck_stripe_apply(llmp_ckpt *ck, const char *dir)
{
	struct ck_stripe *s = ck->stripe;
	if (!s)
		return;
	char why[600], what[96];
	long type = fs_type(s, dir);
	if (type == GPFS_SUPER_MAGIC) {
		warn_once(
			ck->ctx, s, dir,
			"GPFS has no stripe layout to set (each file is striped over every disk of its pool "
			"in blocks of the filesystem's block size, which the shard alignment follows)");
		return;
	}
	if (type != LUSTRE_SUPER_MAGIC) {
		snprintf(why, sizeof why, "it is on %s (filesystem type 0x%lX), not Lustre", fs_name(type),
			 (unsigned long)type);
		warn_once(ck->ctx, s, dir, why);
		return;
	}
	if (!load_lustreapi(s)) {
		snprintf(why, sizeof why, "it is on Lustre, but liblustreapi could not be loaded: %s",
			 s->load_error);
		warn_once(ck->ctx, s, dir, why);
		return;
	}
	if (!set_lustre_layout(s, dir, why, sizeof why)) {
		warn_once(ck->ctx, s, dir, why);
		return;
	}
	if (!s->told_applied) {
		s->told_applied = true;
		describe(s, what, sizeof what);
		rt_log(ck->ctx, RT_LOG_CKPT, RT_LOG_INFO,
		       "checkpoint layout %s set on %s (and each later step directory) through %s", what, dir,
		       s->libname);
	}
}

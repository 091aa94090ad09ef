/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_ckpt.c - checkpoints of device tensors, without a GPU: the CUDA
 * driver's test double (fake_cuda.so, its name or path in FAKE_CUDA, loaded
 * here first as a program loads its driver) holds the "device memory".
 *
 *   dev_ckpt ROOT save STEP [async] [overwrite] [prepare] [staging=BYTES] [count=K] [files=node]
 *       device tensors w (float32 24x40), b (bfloat16 7x5x9), e (uint8 1000)
 *       and a host tensor h (float64 16), split by rows over the ranks,
 *       filled with values(step) and saved (K saves, steps STEP..). With
 *       overwrite, an async save's tensors are overwritten with other
 *       values as soon as save_async returns, before the wait. With
 *       prepare, llmp_ckpt_prepare_async first (the pinned memory it holds
 *       printed). With nocontext (save or load), no CUDA context is
 *       current when libllmp is called: it must take the device's primary one.
 *   dev_ckpt ROOT load STEP into=device|host layout=rows|cols|window
 *       the same tensors registered in another layout (cols: split by the
 *       last dimension; window: an inner box of each), loaded, read back
 *       and compared with values(step), computed here from each element's
 *       global index.
 *   dev_ckpt ROOT fail STEP [async] [staging=BYTES]: a save that must fail.
 *
 * Each rank prints "rank R: ..." lines; exit 0 when every check held.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp.h>
#include <llmp/llmp_ckpt.h>

#include "runtime/device/cuda_api.h"

/* The fake driver's calls a program makes. */
static struct {
	rt_cu_result (*init)(unsigned);
	rt_cu_result (*retain)(rt_cu_ctx *, rt_cu_device);
	rt_cu_result (*set_current)(rt_cu_ctx);
	rt_cu_result (*alloc)(rt_cu_devptr *, size_t);
	rt_cu_result (*free)(rt_cu_devptr);
	rt_cu_result (*htod)(rt_cu_devptr, const void *, size_t);
	rt_cu_result (*dtoh)(void *, rt_cu_devptr, size_t);
} cu;

struct tensor {
	const char *name;
	llmp_dtype dtype;
	unsigned ndim;
	uint64_t global[3];
	bool device;
	uint64_t offset[3], shape[3];
	void *data; /* device or host */
};

static struct tensor model[] = {
	{ .name = "w", .dtype = LLMP_FLOAT32, .ndim = 2, .global = { 24, 40 }, .device = true },
	{ .name = "b", .dtype = LLMP_BFLOAT16, .ndim = 3, .global = { 7, 5, 9 }, .device = true },
	{ .name = "e", .dtype = LLMP_UINT8, .ndim = 1, .global = { 1000 }, .device = true },
	{ .name = "h", .dtype = LLMP_FLOAT64, .ndim = 1, .global = { 16 }, .device = false },
};
#define NTENSORS (sizeof model / sizeof model[0])

static uint32_t rank_, world_;
/* With nocontext, this program's context is current only around its own driver calls. */
static rt_cu_ctx own_ctx;
static bool no_context;

static void ctx_mine(void)
{
	if (no_context)
		cu.set_current(own_ctx);
}

static void ctx_none(void)
{
	if (no_context)
		cu.set_current(NULL);
}

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	return x ^ (x >> 16);
}

/* The value of element g (global row-major index) of tensor k at step s: its bytes, little-endian. */
static void value(size_t k, uint64_t g, uint64_t s, unsigned char *out, size_t esize)
{
	for (size_t byte = 0; byte < esize; byte += 4) {
		uint32_t v = mix((uint32_t)(k * 0x9E3779B9U) ^ mix((uint32_t)g + (uint32_t)(byte << 24)) ^
				 (uint32_t)(s * 0xC2B2AE35U));
		for (size_t i = 0; i < 4 && byte + i < esize; i++)
			out[byte + i] = (unsigned char)(v >> (8 * i));
	}
}

static size_t elements(const struct tensor *t)
{
	size_t n = 1;
	for (unsigned d = 0; d < t->ndim; d++)
		n *= t->shape[d];
	return n;
}

/* This rank's slice: rows (dimension 0) or cols (the last) split evenly, or an inner window. */
static void slice(struct tensor *t, const char *layout)
{
	for (unsigned d = 0; d < t->ndim; d++) {
		t->offset[d] = 0;
		t->shape[d] = t->global[d];
	}
	unsigned d = strcmp(layout, "cols") == 0 ? t->ndim - 1 : 0;
	if (strcmp(layout, "window") == 0) {
		for (unsigned i = 0; i < t->ndim; i++) {
			uint64_t lo = t->global[i] / 4, hi = t->global[i] - t->global[i] / 5;
			t->offset[i] = lo;
			t->shape[i] = hi - lo;
		}
		d = 0;
		uint64_t lo = t->offset[0], n = t->shape[0];
		t->offset[0] = lo + n * rank_ / world_;
		t->shape[0] = lo + n * (rank_ + 1) / world_ - t->offset[0];
		return;
	}
	t->offset[d] = t->global[d] * rank_ / world_;
	t->shape[d] = t->global[d] * (rank_ + 1) / world_ - t->offset[d];
}

/* The expected bytes of t's slice at step s. */
static unsigned char *expected(size_t k, const struct tensor *t, uint64_t s)
{
	size_t esize = llmp_dtype_size(t->dtype), n = elements(t);
	unsigned char *buf = malloc(n * esize);
	if (!buf)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t rem = i, g = 0, idx[3];
		for (int d = (int)t->ndim - 1; d >= 0; d--) {
			idx[d] = t->offset[d] + rem % t->shape[d];
			rem /= t->shape[d];
		}
		for (unsigned d = 0; d < t->ndim; d++)
			g = g * t->global[d] + idx[d];
		value(k, g, s, buf + i * esize, esize);
	}
	return buf;
}

static bool fail(const char *what)
{
	printf("rank %u: FAIL %s\n", rank_, what);
	return false;
}

/* Allocate t's memory (device or host) and fill it with values(s). */
static bool fill(size_t k, struct tensor *t, uint64_t s, bool allocate)
{
	size_t bytes = elements(t) * llmp_dtype_size(t->dtype);
	unsigned char *want = expected(k, t, s);
	if (!want)
		return fail("out of memory");
	bool ok = true;
	ctx_mine();
	if (t->device) {
		rt_cu_devptr p = 0;
		if (allocate)
			ok = cu.alloc(&p, bytes) == RT_CUDA_SUCCESS;
		if (allocate && ok)
			t->data = (void *)(uintptr_t)p;
		ok = ok && cu.htod((rt_cu_devptr)(uintptr_t)t->data, want, bytes) == RT_CUDA_SUCCESS;
	} else {
		if (allocate)
			t->data = malloc(bytes);
		ok = t->data != NULL;
		if (ok)
			memcpy(t->data, want, bytes);
	}
	ctx_none();
	free(want);
	return ok || fail("cannot allocate or fill a tensor");
}

/* Whether t holds values(s), read back from the device when it is there. */
static bool check(size_t k, const struct tensor *t, uint64_t s)
{
	size_t bytes = elements(t) * llmp_dtype_size(t->dtype);
	unsigned char *want = expected(k, t, s), *got = malloc(bytes);
	bool ok = want && got;
	ctx_mine();
	if (ok && t->device)
		ok = cu.dtoh(got, (rt_cu_devptr)(uintptr_t)t->data, bytes) == RT_CUDA_SUCCESS;
	else if (ok)
		memcpy(got, t->data, bytes);
	ctx_none();
	if (ok && memcmp(got, want, bytes) != 0) {
		size_t i = 0;
		while (got[i] == want[i])
			i++;
		printf("rank %u: FAIL tensor %s differs from step %llu's values at byte %zu of %zu\n", rank_,
		       t->name, (unsigned long long)s, i, bytes);
		ok = false;
	}
	free(want);
	free(got);
	return ok;
}

static void release(struct tensor *t)
{
	ctx_mine();
	if (t->device)
		cu.free((rt_cu_devptr)(uintptr_t)t->data);
	ctx_none();
	if (!t->device)
		free(t->data);
	t->data = NULL;
}

static bool load_driver(void)
{
	const char *path = getenv("FAKE_CUDA");
	void *lib = path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
	if (!lib) {
		printf("rank ?: FAIL cannot load FAKE_CUDA=%s: %s\n", path ? path : "(unset)", dlerror());
		return false;
	}
	static const char *names[] = { "cuInit",          "cuDevicePrimaryCtxRetain",
				       "cuCtxSetCurrent", "cuMemAlloc_v2",
				       "cuMemFree_v2",    "cuMemcpyHtoD_v2",
				       "cuMemcpyDtoH_v2" };
	void **slots[] = { (void **)&cu.init,  (void **)&cu.retain, (void **)&cu.set_current,
			   (void **)&cu.alloc, (void **)&cu.free,   (void **)&cu.htod,
			   (void **)&cu.dtoh };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!(*slots[i] = dlsym(lib, names[i]))) {
			printf("rank ?: FAIL %s has no %s\n", path, names[i]);
			return false;
		}
	/* As a program does (cudaSetDevice): the device's primary context current on this thread. */
	bool ok = cu.init(0) == RT_CUDA_SUCCESS && cu.retain(&own_ctx, 0) == RT_CUDA_SUCCESS &&
		  cu.set_current(own_ctx) == RT_CUDA_SUCCESS;
	ctx_none();
	return ok;
}

struct args {
	const char *root, *mode, *into, *layout;
	uint64_t step, count;
	bool async, overwrite, node_files, prepare;
	size_t staging;
};

static bool open_registered(llmp_ctx *ctx, const struct args *a, const char *layout, bool into_device,
			    uint64_t fill_step, llmp_ckpt **ck)
{
	llmp_ckpt_opts opts = { .root = a->root, .staging_max = a->staging };
	opts.files = a->node_files ? LLMP_CKPT_FILES_NODE : LLMP_CKPT_FILES_RANK;
	if (llmp_ckpt_open(ctx, &opts, ck) != LLMP_OK)
		return fail(llmp_errmsg(ctx));
	for (size_t k = 0; k < NTENSORS; k++) {
		struct tensor *t = &model[k];
		t->device = t->device && into_device;
		slice(t, layout);
		if (!fill(k, t, fill_step, true))
			return false;
		if (llmp_ckpt_register(*ck, t->name, t->dtype, t->ndim, t->global, t->offset, t->shape,
				       t->data) != LLMP_OK)
			return fail(llmp_errmsg(ctx));
	}
	return true;
}

static void print_stats(const llmp_ckpt *ck, uint64_t step)
{
	llmp_ckpt_stats s = { .size = sizeof s };
	if (llmp_ckpt_get_stats(ck, &s) == LLMP_OK)
		printf("rank %u: saved step %llu device_bytes %zu staged %zu pinned %zu copy_ok %d\n", rank_,
		       (unsigned long long)step, s.device_bytes, s.staged_bytes, s.device_staging_bytes,
		       s.device_copy_seconds >= 0 && s.device_copy_seconds <= s.total_seconds + 1);
}

static bool save(llmp_ctx *ctx, const struct args *a)
{
	llmp_ckpt *ck;
	bool ok = open_registered(ctx, a, "rows", true, a->step, &ck);
	llmp_ckpt_stats stats = { .size = sizeof stats };
	if (ok && a->prepare &&
	    (llmp_ckpt_prepare_async(ck) != LLMP_OK || llmp_ckpt_get_stats(ck, &stats) != LLMP_OK))
		ok = fail(llmp_errmsg(ctx));
	else if (ok && a->prepare)
		printf("rank %u: prepared pinned %zu\n", rank_, stats.device_staging_bytes);
	for (uint64_t step = a->step; ok && step < a->step + a->count; step++) {
		for (size_t k = 0; ok && k < NTENSORS && step > a->step; k++)
			ok = fill(k, &model[k], step, false);
		llmp_status st = a->async ? llmp_ckpt_save_async(ck, step, NULL, 0)
					  : llmp_ckpt_save(ck, step, NULL, 0);
		/* The program's next step changes its tensors at once; the checkpoint must not see it. */
		for (size_t k = 0; ok && st == LLMP_OK && a->overwrite && k < NTENSORS; k++)
			ok = fill(k, &model[k], step + 1000, false);
		if (st == LLMP_OK && a->async)
			st = llmp_ckpt_wait(ck);
		if (st != LLMP_OK)
			ok = fail(llmp_errmsg(ctx));
		if (ok)
			print_stats(ck, step);
	}
	llmp_ckpt_close(ck);
	for (size_t k = 0; k < NTENSORS; k++)
		release(&model[k]);
	return ok;
}

static bool save_fails(llmp_ctx *ctx, const struct args *a)
{
	llmp_ckpt *ck;
	bool ok = open_registered(ctx, a, "rows", true, a->step, &ck);
	if (ok) {
		llmp_status st = a->async ? llmp_ckpt_save_async(ck, a->step, NULL, 0)
					  : llmp_ckpt_save(ck, a->step, NULL, 0);
		if (st == LLMP_OK && a->async)
			st = llmp_ckpt_wait(ck); /* a failure of the copy is reported here, on every rank */
		printf("rank %u: save %s: %s\n", rank_, st == LLMP_OK ? "succeeded" : "failed",
		       llmp_errmsg(ctx));
		ok = st != LLMP_OK;
	}
	llmp_ckpt_close(ck);
	for (size_t k = 0; k < NTENSORS; k++)
		release(&model[k]);
	return ok;
}

static bool load(llmp_ctx *ctx, const struct args *a)
{
	llmp_ckpt *ck;
	bool into_device = strcmp(a->into, "device") == 0;
	/* Filled with other values first: the load must replace every byte. */
	bool ok = open_registered(ctx, a, a->layout, into_device, a->step + 5000, &ck);
	uint64_t loaded = 0;
	if (ok && llmp_ckpt_load(ck, a->step, &loaded, NULL, 0, NULL) != LLMP_OK)
		ok = fail(llmp_errmsg(ctx));
	for (size_t k = 0; ok && k < NTENSORS; k++)
		ok = check(k, &model[k], a->step);
	if (ok)
		printf("rank %u: loaded step %llu into %s layout %s: every value as computed\n", rank_,
		       (unsigned long long)loaded, a->into, a->layout);
	llmp_ckpt_close(ck);
	for (size_t k = 0; k < NTENSORS; k++)
		release(&model[k]);
	return ok;
}

static bool parse(int argc, char **argv, struct args *a)
{
	*a = (struct args){ .into = "device", .layout = "rows", .count = 1 };
	if (argc < 4)
		return false;
	a->root = argv[1];
	a->mode = argv[2];
	a->step = strtoull(argv[3], NULL, 10);
	for (int i = 4; i < argc; i++) {
		const char *v = strchr(argv[i], '=');
		if (strcmp(argv[i], "async") == 0)
			a->async = true;
		else if (strcmp(argv[i], "overwrite") == 0)
			a->overwrite = true;
		else if (strcmp(argv[i], "nocontext") == 0)
			no_context = true;
		else if (strcmp(argv[i], "prepare") == 0)
			a->prepare = true;
		else if (strcmp(argv[i], "files=node") == 0)
			a->node_files = true;
		else if (v && strncmp(argv[i], "staging=", 8) == 0)
			a->staging = strtoull(v + 1, NULL, 10);
		else if (v && strncmp(argv[i], "count=", 6) == 0)
			a->count = strtoull(v + 1, NULL, 10);
		else if (v && strncmp(argv[i], "into=", 5) == 0)
			a->into = v + 1;
		else if (v && strncmp(argv[i], "layout=", 7) == 0)
			a->layout = v + 1;
		else
			return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	struct args a;
	if (!parse(argc, argv, &a)) {
		fprintf(stderr, "usage: dev_ckpt ROOT save|load|fail STEP [options] (see the source)\n");
		return 2;
	}
	if (!load_driver())
		return 1;
	llmp_ctx *ctx = NULL;
	if (llmp_init(NULL, &ctx) != LLMP_OK) {
		printf("rank ?: FAIL init: %s\n", ctx ? llmp_errmsg(ctx) : "no context");
		llmp_finalize(ctx);
		return 1;
	}
	rank_ = llmp_rank(ctx);
	world_ = llmp_world_size(ctx);
	bool ok = strcmp(a.mode, "save") == 0   ? save(ctx, &a)
		  : strcmp(a.mode, "load") == 0 ? load(ctx, &a)
		  : strcmp(a.mode, "fail") == 0 ? save_fails(ctx, &a)
						: fail("unknown mode");
	llmp_finalize(ctx);
	return ok ? 0 : 1;
}

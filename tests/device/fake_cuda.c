/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_cuda.c - a test double of the CUDA driver calls libllmp makes for
 * device checkpoints (runtime/device/cuda_api.c), plus the few a test
 * program needs to hold "device memory". No GPU, no CUDA code. A program
 * that loads it first (tests/device_ckpt.bats links it as libcuda.so.1 on
 * the test's LD_LIBRARY_PATH) is one that "loaded the driver", which is
 * how libllmp asks whether a pointer is device memory (RTLD_NOLOAD); libllmp
 * then loads the same library as its driver.
 *
 * - Device memory is host memory this library allocated (cuMemAlloc) and
 *   tracks: cuPointerGetAttribute calls it DEVICE, pinned memory
 *   (cuMemHostAlloc) HOST, anything else an error, as the driver does.
 * - Each stream has a thread that performs its copies and event records in
 *   order, each after FAKE_CUDA_DELAY_US (default 2000; 0: at once)
 *   microseconds: a caller that reads a copy's destination before
 *   synchronising sees the old bytes.
 * - Stricter than the driver, to check the caller: an async copy's host
 *   side must be pinned memory of this library, its device side inside one
 *   allocation; stream, event, copy and pinned calls need a current
 *   context on the calling thread (CUDA_ERROR_INVALID_CONTEXT otherwise);
 *   every call but the error strings needs cuInit first.
 * - FAKE_CUDA_FAIL=NAME:N[,NAME:N]: the Nth call of NAME (cuMemcpyDtoHAsync,
 *   no _v2) returns CUDA_ERROR_ILLEGAL_ADDRESS; cuInit:1 makes it
 *   CUDA_ERROR_NO_DEVICE, as a driver on a machine without a GPU says.
 * - cuDeviceGetByPCIBusId takes any bus id as the one device, and
 *   cuDeviceGetAttribute answers GPU_DIRECT_RDMA_SUPPORTED and
 *   DMA_BUF_SUPPORTED from FAKE_CUDA_GDR and FAKE_CUDA_DMABUF (default 1).
 * - cuLaunchHostFunc runs its function on the stream's thread, in order:
 *   NCCL's test double (fake_nccl.c) puts work that blocks there.
 * - cuEventElapsedTime: the time between the moments the streams' threads
 *   reached the two events (CLOCK_MONOTONIC), so an operation's time is the
 *   work put between them plus FAKE_CUDA_DELAY_US per stream op.
 * - FAKE_CUDA_LOG=FILE: at exit, one line "fake_cuda PID host_allocs N
 *   dtoh N htod N copy2d N pushes N retains N releases N" appended (calls
 *   made by anyone; retains and releases: of the primary context).
 * - fake_cuda_event_calls(): the event calls made so far (creations,
 *   records, queries, elapsed times), which tests/device/dev_overhead.c
 *   divides by the device operations it made.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/device/cuda_api.h"

#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_ILLEGAL_ADDRESS 700

/* Exported with the driver's names and types as the table in cuda_api.h declares them. */
#define API __attribute__((visibility("default")))

struct block {
	char *base;
	size_t bytes;
	int type; /* RT_CU_MEMORYTYPE_DEVICE or _HOST (pinned) */
	struct block *next;
};

struct op {
	enum { OP_COPY, OP_RECORD, OP_HOST } kind;
	char *dst;
	const char *src;
	size_t width, height, dpitch, spitch;
	struct rt_cu_event_st *event;
	void (*fn)(void *); /* OP_HOST: run on the stream's thread, as cuLaunchHostFunc does */
	void *arg;
	struct op *next;
};

struct rt_cu_event_st {
	int pending;    /* records queued and not yet reached */
	bool timed;     /* made without CU_EVENT_DISABLE_TIMING */
	bool reached;   /* a record of it has been reached */
	double when_us; /* CLOCK_MONOTONIC when the stream's thread last reached it */
};

struct rt_cu_stream_st {
	pthread_t thread;
	struct op *head, *tail;
	int queued; /* ops not yet finished */
	bool stop;
	struct rt_cu_stream_st *next;
};

struct rt_cu_ctx_st {
	int refs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct block *blocks;
static struct rt_cu_stream_st *streams;
static struct rt_cu_ctx_st primary;
static bool initialized;
static unsigned long n_host_allocs, n_dtoh, n_htod, n_2d, n_push, n_retain, n_release;
static unsigned long n_event_create, n_event_record, n_event_query, n_event_elapsed;
static __thread struct rt_cu_ctx_st *ctx_stack[16];
static __thread int ctx_depth;

/* ------------------------------------------------------------ injection */

/* Whether this call of `name` is the one FAKE_CUDA_FAIL names. */
static bool injected(const char *name)
{
	static struct {
		char name[64];
		unsigned long calls;
	} seen[32];
	const char *spec = getenv("FAKE_CUDA_FAIL");
	if (!spec || !*spec)
		return false;
	pthread_mutex_lock(&lock);
	unsigned long calls = 0;
	for (int i = 0; i < 32; i++)
		if (!seen[i].name[0] || strcmp(seen[i].name, name) == 0) {
			snprintf(seen[i].name, sizeof seen[i].name, "%s", name);
			calls = ++seen[i].calls;
			break;
		}
	pthread_mutex_unlock(&lock);
	size_t len = strlen(name);
	for (const char *p = spec; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, name, len) == 0 && p[len] == ':' && strtoul(p + len + 1, NULL, 10) == calls)
			return true;
	return false;
}

static void write_log(void)
{
	const char *path = getenv("FAKE_CUDA_LOG");
	if (!path || !*path)
		return;
	char line[256];
	int n = snprintf(
		line, sizeof line,
		"fake_cuda %d host_allocs %lu dtoh %lu htod %lu copy2d %lu pushes %lu retains %lu releases %lu\n",
		(int)getpid(), n_host_allocs, n_dtoh, n_htod, n_2d, n_push, n_retain, n_release);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) != n)
			perror("fake_cuda: log");
		close(fd);
	}
}

__attribute__((destructor)) static void at_exit(void)
{
	write_log();
}

/* ------------------------------------------------------------- memory */

/* The block holding [p, p + bytes) entirely, of the given type; NULL if none. */
static struct block *find(const void *p, size_t bytes, int type)
{
	const char *c = p;
	for (struct block *b = blocks; b; b = b->next)
		if (c >= b->base && c < b->base + b->bytes && bytes <= (size_t)(b->base + b->bytes - c))
			return type && b->type != type ? NULL : b;
	return NULL;
}

static rt_cu_result track(void **p, size_t bytes, int type)
{
	struct block *b = calloc(1, sizeof *b);
	if (!b || !(b->base = malloc(bytes ? bytes : 1))) {
		free(b);
		return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	}
	b->bytes = bytes;
	b->type = type;
	pthread_mutex_lock(&lock);
	b->next = blocks;
	blocks = b;
	pthread_mutex_unlock(&lock);
	*p = b->base;
	return RT_CUDA_SUCCESS;
}

static rt_cu_result untrack(void *p, int type)
{
	pthread_mutex_lock(&lock);
	for (struct block **b = &blocks; *b; b = &(*b)->next)
		if ((*b)->base == p && (*b)->type == type) {
			struct block *gone = *b;
			*b = gone->next;
			pthread_mutex_unlock(&lock);
			free(gone->base);
			free(gone);
			return RT_CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&lock);
	return CUDA_ERROR_INVALID_VALUE;
}

static bool has_context(void)
{
	return ctx_depth > 0 && ctx_stack[ctx_depth - 1];
}

/* The common checks of a call: initialised, a context if it needs one, not the injected failure. */
static rt_cu_result enter(const char *name, bool needs_context)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (needs_context && !has_context())
		return CUDA_ERROR_INVALID_CONTEXT;
	return injected(name) ? CUDA_ERROR_ILLEGAL_ADDRESS : RT_CUDA_SUCCESS;
}

/* ------------------------------------------------------------- streams */

static double monotonic_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static void *stream_main(void *arg)
{
	struct rt_cu_stream_st *s = arg;
	const char *delay = getenv("FAKE_CUDA_DELAY_US");
	useconds_t us = delay && *delay ? (useconds_t)strtoul(delay, NULL, 10) : 2000;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!s->head && !s->stop)
			pthread_cond_wait(&changed, &lock);
		if (!s->head)
			break;
		struct op *o = s->head;
		pthread_mutex_unlock(&lock);
		/* The copy takes time: an early reader sees old bytes. A delay of 0 is
		 * none: usleep(0) would still sleep the timer's slack, 50 us or more. */
		if (us)
			usleep(us);
		if (o->kind == OP_COPY)
			for (size_t r = 0; r < o->height; r++)
				memcpy(o->dst + r * o->dpitch, o->src + r * o->spitch, o->width);
		if (o->kind == OP_HOST)
			o->fn(o->arg); /* may block: the stream waits behind it (NCCL's double, FAKE_NCCL_STUCK) */
		double now = monotonic_us();
		pthread_mutex_lock(&lock);
		if (o->kind == OP_RECORD) {
			o->event->pending--;
			o->event->reached = true;
			o->event->when_us = now;
		}
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		s->queued--;
		free(o);
		pthread_cond_broadcast(&changed);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

static bool known_stream(struct rt_cu_stream_st *s)
{
	for (struct rt_cu_stream_st *t = streams; t; t = t->next)
		if (t == s)
			return true;
	return false;
}

static rt_cu_result enqueue(struct rt_cu_stream_st *s, struct op *o)
{
	pthread_mutex_lock(&lock);
	if (!known_stream(s)) {
		pthread_mutex_unlock(&lock);
		free(o);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	if (o->kind == OP_RECORD)
		o->event->pending++;
	if (s->tail)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
	s->queued++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
	return RT_CUDA_SUCCESS;
}

/* A copy of height rows; each side must be what the stricter rules above allow. */
static rt_cu_result queue_copy(struct rt_cu_stream_st *s, void *dst, int dtype, const void *src, int stype,
			       size_t width, size_t height, size_t dpitch, size_t spitch)
{
	size_t dspan = height ? (height - 1) * dpitch + width : 0,
	       sspan = height ? (height - 1) * spitch + width : 0;
	pthread_mutex_lock(&lock);
	bool ok = find(dst, dspan, dtype) && find(src, sspan, stype);
	pthread_mutex_unlock(&lock);
	if (!ok || width > dpitch || width > spitch)
		return CUDA_ERROR_INVALID_VALUE;
	struct op *o = calloc(1, sizeof *o);
	if (!o)
		return 2;
	*o = (struct op){ .kind = OP_COPY,
			  .dst = dst,
			  .src = src,
			  .width = width,
			  .height = height,
			  .dpitch = dpitch,
			  .spitch = spitch };
	return enqueue(s, o);
}

/* ----------------------------------------------------------- the calls */

API rt_cu_result cuInit(unsigned flags)
{
	(void)flags;
	if (injected("cuInit"))
		return CUDA_ERROR_NO_DEVICE;
	initialized = true;
	return RT_CUDA_SUCCESS;
}

static const char *error_text(rt_cu_result r, bool name)
{
	switch (r) {
	case RT_CUDA_SUCCESS: return name ? "CUDA_SUCCESS" : "no error";
	case CUDA_ERROR_INVALID_VALUE: return name ? "CUDA_ERROR_INVALID_VALUE" : "invalid argument";
	case CUDA_ERROR_NOT_INITIALIZED: return name ? "CUDA_ERROR_NOT_INITIALIZED" : "initialization error";
	case CUDA_ERROR_NO_DEVICE:
		return name ? "CUDA_ERROR_NO_DEVICE" : "no CUDA-capable device is detected";
	case CUDA_ERROR_INVALID_CONTEXT:
		return name ? "CUDA_ERROR_INVALID_CONTEXT" : "invalid device context";
	case CUDA_ERROR_INVALID_HANDLE: return name ? "CUDA_ERROR_INVALID_HANDLE" : "invalid resource handle";
	case RT_CUDA_ERROR_NOT_READY: return name ? "CUDA_ERROR_NOT_READY" : "device not ready";
	case CUDA_ERROR_ILLEGAL_ADDRESS:
		return name ? "CUDA_ERROR_ILLEGAL_ADDRESS" : "an illegal memory access was encountered";
	default: return NULL;
	}
}

API rt_cu_result cuGetErrorName(rt_cu_result r, const char **s)
{
	*s = error_text(r, true);
	return *s ? RT_CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

API rt_cu_result cuGetErrorString(rt_cu_result r, const char **s)
{
	*s = error_text(r, false);
	return *s ? RT_CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

API rt_cu_result cuPointerGetAttribute(void *data, int attribute, rt_cu_devptr ptr)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_lock(&lock);
	struct block *b = find((const void *)(uintptr_t)ptr, 1, 0);
	int type = b ? b->type : 0;
	pthread_mutex_unlock(&lock);
	if (!b)
		return CUDA_ERROR_INVALID_VALUE; /* memory CUDA never saw */
	if (attribute == RT_CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
		*(unsigned *)data = (unsigned)type;
	else if (attribute == RT_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
		*(int *)data = 0;
	else
		return CUDA_ERROR_INVALID_VALUE;
	return RT_CUDA_SUCCESS;
}

API rt_cu_result cuDeviceGet(rt_cu_device *dev, int ordinal)
{
	rt_cu_result r = enter("cuDeviceGet", false);
	if (r == RT_CUDA_SUCCESS && ordinal != 0)
		r = CUDA_ERROR_INVALID_VALUE; /* one device */
	if (r == RT_CUDA_SUCCESS)
		*dev = 0;
	return r;
}

/* For `llmp topo --gdr` (cli/cuda_probe.c): every bus id is the one device. */
API rt_cu_result cuDeviceGetByPCIBusId(rt_cu_device *dev, const char *bus)
{
	rt_cu_result r = enter("cuDeviceGetByPCIBusId", false);
	if (r == RT_CUDA_SUCCESS && (!bus || !*bus))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == RT_CUDA_SUCCESS)
		*dev = 0;
	return r;
}

/* GPU_DIRECT_RDMA_SUPPORTED (116) and DMA_BUF_SUPPORTED (124): FAKE_CUDA_GDR, FAKE_CUDA_DMABUF (0 or 1, default 1). */
API rt_cu_result cuDeviceGetAttribute(int *value, int attribute, rt_cu_device dev)
{
	rt_cu_result r = enter("cuDeviceGetAttribute", false);
	if (r != RT_CUDA_SUCCESS)
		return r;
	const char *env = attribute == 116   ? getenv("FAKE_CUDA_GDR")
			  : attribute == 124 ? getenv("FAKE_CUDA_DMABUF")
					     : NULL;
	if (dev != 0 || (attribute != 116 && attribute != 124))
		return CUDA_ERROR_INVALID_VALUE;
	*value = env && *env ? atoi(env) != 0 : 1;
	return RT_CUDA_SUCCESS;
}

API rt_cu_result cuDevicePrimaryCtxRetain(rt_cu_ctx *ctx, rt_cu_device dev)
{
	rt_cu_result r = enter("cuDevicePrimaryCtxRetain", false);
	if (r == RT_CUDA_SUCCESS && dev != 0)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r != RT_CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&lock);
	primary.refs++;
	n_retain++;
	pthread_mutex_unlock(&lock);
	*ctx = &primary;
	return RT_CUDA_SUCCESS;
}

API rt_cu_result cuDevicePrimaryCtxRelease_v2(rt_cu_device dev)
{
	rt_cu_result r = enter("cuDevicePrimaryCtxRelease", false);
	pthread_mutex_lock(&lock);
	if (r == RT_CUDA_SUCCESS && (dev != 0 || primary.refs == 0))
		r = CUDA_ERROR_INVALID_VALUE; /* released more often than retained */
	else if (r == RT_CUDA_SUCCESS) {
		primary.refs--;
		n_release++;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

/* For a test program: make the primary context current, as cudaSetDevice does. */
API rt_cu_result cuCtxSetCurrent(rt_cu_ctx ctx)
{
	rt_cu_result r = enter("cuCtxSetCurrent", false);
	if (r != RT_CUDA_SUCCESS)
		return r;
	if (ctx_depth == 0)
		ctx_depth = 1;
	ctx_stack[ctx_depth - 1] = ctx;
	return RT_CUDA_SUCCESS;
}

API rt_cu_result cuCtxGetCurrent(rt_cu_ctx *ctx)
{
	rt_cu_result r = enter("cuCtxGetCurrent", false);
	if (r == RT_CUDA_SUCCESS)
		*ctx = has_context() ? ctx_stack[ctx_depth - 1] : NULL;
	return r;
}

API rt_cu_result cuCtxPushCurrent_v2(rt_cu_ctx ctx)
{
	rt_cu_result r = enter("cuCtxPushCurrent", false);
	if (r == RT_CUDA_SUCCESS && (!ctx || ctx_depth == 16))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == RT_CUDA_SUCCESS) {
		ctx_stack[ctx_depth++] = ctx;
		__atomic_add_fetch(&n_push, 1, __ATOMIC_RELAXED);
	}
	return r;
}

API rt_cu_result cuCtxPopCurrent_v2(rt_cu_ctx *ctx)
{
	rt_cu_result r = enter("cuCtxPopCurrent", false);
	if (r == RT_CUDA_SUCCESS && ctx_depth == 0)
		r = CUDA_ERROR_INVALID_CONTEXT;
	if (r == RT_CUDA_SUCCESS)
		*ctx = ctx_stack[--ctx_depth];
	return r;
}

/* Every stream of the process drained. */
API rt_cu_result cuCtxSynchronize(void)
{
	rt_cu_result r = enter("cuCtxSynchronize", true);
	if (r != RT_CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&lock);
	for (;;) {
		bool busy = false;
		for (struct rt_cu_stream_st *s = streams; s; s = s->next)
			busy |= s->queued > 0;
		if (!busy)
			break;
		pthread_cond_wait(&changed, &lock);
	}
	pthread_mutex_unlock(&lock);
	return RT_CUDA_SUCCESS;
}

API rt_cu_result cuMemHostAlloc(void **p, size_t bytes, unsigned flags)
{
	(void)flags;
	rt_cu_result r = enter("cuMemHostAlloc", true);
	if (r != RT_CUDA_SUCCESS)
		return r;
	__atomic_add_fetch(&n_host_allocs, 1, __ATOMIC_RELAXED);
	return track(p, bytes, RT_CU_MEMORYTYPE_HOST);
}

API rt_cu_result cuMemFreeHost(void *p)
{
	rt_cu_result r = enter("cuMemFreeHost", false);
	return r == RT_CUDA_SUCCESS ? untrack(p, RT_CU_MEMORYTYPE_HOST) : r;
}

/* For a test program: device memory. */
API rt_cu_result cuMemAlloc_v2(rt_cu_devptr *p, size_t bytes)
{
	rt_cu_result r = enter("cuMemAlloc", true);
	void *m = NULL;
	if (r == RT_CUDA_SUCCESS)
		r = track(&m, bytes, RT_CU_MEMORYTYPE_DEVICE);
	if (r == RT_CUDA_SUCCESS)
		*p = (rt_cu_devptr)(uintptr_t)m;
	return r;
}

API rt_cu_result cuMemFree_v2(rt_cu_devptr p)
{
	rt_cu_result r = enter("cuMemFree", false);
	return r == RT_CUDA_SUCCESS ? untrack((void *)(uintptr_t)p, RT_CU_MEMORYTYPE_DEVICE) : r;
}

/* For a test program: synchronous copies, done at once (no stream of libllmp's is waited for). */
API rt_cu_result cuMemcpyHtoD_v2(rt_cu_devptr dst, const void *src, size_t bytes)
{
	rt_cu_result r = enter("cuMemcpyHtoD", true);
	pthread_mutex_lock(&lock);
	if (r == RT_CUDA_SUCCESS && !find((void *)(uintptr_t)dst, bytes, RT_CU_MEMORYTYPE_DEVICE))
		r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&lock);
	if (r == RT_CUDA_SUCCESS)
		memcpy((void *)(uintptr_t)dst, src, bytes);
	return r;
}

API rt_cu_result cuMemcpyDtoH_v2(void *dst, rt_cu_devptr src, size_t bytes)
{
	rt_cu_result r = enter("cuMemcpyDtoH", true);
	pthread_mutex_lock(&lock);
	if (r == RT_CUDA_SUCCESS && !find((void *)(uintptr_t)src, bytes, RT_CU_MEMORYTYPE_DEVICE))
		r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&lock);
	if (r == RT_CUDA_SUCCESS)
		memcpy(dst, (void *)(uintptr_t)src, bytes);
	return r;
}

API rt_cu_result cuStreamCreate(rt_cu_stream *out, unsigned flags)
{
	(void)flags;
	rt_cu_result r = enter("cuStreamCreate", true);
	if (r != RT_CUDA_SUCCESS)
		return r;
	struct rt_cu_stream_st *s = calloc(1, sizeof *s);
	if (!s)
		return 2;
	if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
		free(s);
		return 2;
	}
	pthread_mutex_lock(&lock);
	s->next = streams;
	streams = s;
	pthread_mutex_unlock(&lock);
	*out = s;
	return RT_CUDA_SUCCESS;
}

API rt_cu_result cuStreamDestroy_v2(rt_cu_stream s)
{
	rt_cu_result r = enter("cuStreamDestroy", false);
	if (r != RT_CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&lock);
	struct rt_cu_stream_st **p = &streams;
	while (*p && *p != s)
		p = &(*p)->next;
	if (!*p) {
		pthread_mutex_unlock(&lock);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	s->stop = true; /* the thread finishes what is queued, as the driver does */
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
	pthread_join(s->thread, NULL);
	pthread_mutex_lock(&lock);
	for (p = &streams; *p != s;)
		p = &(*p)->next;
	*p = s->next;
	pthread_mutex_unlock(&lock);
	free(s);
	return RT_CUDA_SUCCESS;
}

API rt_cu_result cuStreamSynchronize(rt_cu_stream s)
{
	rt_cu_result r = enter("cuStreamSynchronize", false);
	if (r != RT_CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&lock);
	if (!known_stream(s))
		r = CUDA_ERROR_INVALID_HANDLE;
	while (r == RT_CUDA_SUCCESS && s->queued > 0)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
	return r;
}

API rt_cu_result cuMemcpyDtoHAsync_v2(void *dst, rt_cu_devptr src, size_t bytes, rt_cu_stream s)
{
	rt_cu_result r = enter("cuMemcpyDtoHAsync", true);
	__atomic_add_fetch(&n_dtoh, 1, __ATOMIC_RELAXED);
	return r == RT_CUDA_SUCCESS ? queue_copy(s, dst, RT_CU_MEMORYTYPE_HOST, (const void *)(uintptr_t)src,
						 RT_CU_MEMORYTYPE_DEVICE, bytes, 1, bytes, bytes)
				    : r;
}

API rt_cu_result cuMemcpyHtoDAsync_v2(rt_cu_devptr dst, const void *src, size_t bytes, rt_cu_stream s)
{
	rt_cu_result r = enter("cuMemcpyHtoDAsync", true);
	__atomic_add_fetch(&n_htod, 1, __ATOMIC_RELAXED);
	return r == RT_CUDA_SUCCESS ? queue_copy(s, (void *)(uintptr_t)dst, RT_CU_MEMORYTYPE_DEVICE, src,
						 RT_CU_MEMORYTYPE_HOST, bytes, 1, bytes, bytes)
				    : r;
}

/* One side of a 2D copy: its address and memory type (UNIFIED: the device pointer, any tracked block). */
static char *side(int type, const void *host, rt_cu_devptr device, size_t x, size_t y, size_t pitch,
		  int *track_type)
{
	*track_type = type == RT_CU_MEMORYTYPE_HOST     ? RT_CU_MEMORYTYPE_HOST
		      : type == RT_CU_MEMORYTYPE_DEVICE ? RT_CU_MEMORYTYPE_DEVICE
							: 0;
	const char *base = type == RT_CU_MEMORYTYPE_HOST ? host : (const char *)(uintptr_t)device;
	return base ? (char *)base + y * pitch + x : NULL;
}

API rt_cu_result cuMemcpy2DAsync_v2(const struct rt_cu_memcpy2d *c, rt_cu_stream s)
{
	rt_cu_result r = enter("cuMemcpy2DAsync", true);
	__atomic_add_fetch(&n_2d, 1, __ATOMIC_RELAXED);
	if (r != RT_CUDA_SUCCESS)
		return r;
	if (c->src_memory_type == RT_CU_MEMORYTYPE_ARRAY || c->dst_memory_type == RT_CU_MEMORYTYPE_ARRAY)
		return CUDA_ERROR_INVALID_VALUE; /* no arrays here */
	int st, dt;
	const char *src = side(c->src_memory_type, c->src_host, c->src_device, c->src_x_bytes, c->src_y,
			       c->src_pitch, &st);
	char *dst = side(c->dst_memory_type, c->dst_host, c->dst_device, c->dst_x_bytes, c->dst_y,
			 c->dst_pitch, &dt);
	if (!src || !dst)
		return CUDA_ERROR_INVALID_VALUE;
	return queue_copy(s, dst, dt, src, st, c->width_bytes, c->height, c->dst_pitch, c->src_pitch);
}

API rt_cu_result cuEventCreate(rt_cu_event *e, unsigned flags)
{
	rt_cu_result r = enter("cuEventCreate", true);
	if (r == RT_CUDA_SUCCESS && !(*e = calloc(1, sizeof **e)))
		r = 2;
	if (r == RT_CUDA_SUCCESS) {
		(*e)->timed = !(flags & RT_CU_EVENT_DISABLE_TIMING);
		__atomic_add_fetch(&n_event_create, 1, __ATOMIC_RELAXED);
	}
	return r;
}

API rt_cu_result cuEventDestroy_v2(rt_cu_event e)
{
	rt_cu_result r = enter("cuEventDestroy", false);
	if (r == RT_CUDA_SUCCESS) {
		/* The driver defers the release; here the record must have run first. */
		pthread_mutex_lock(&lock);
		while (e->pending > 0)
			pthread_cond_wait(&changed, &lock);
		pthread_mutex_unlock(&lock);
		free(e);
	}
	return r;
}

API rt_cu_result cuEventRecord(rt_cu_event e, rt_cu_stream s)
{
	rt_cu_result r = enter("cuEventRecord", true);
	struct op *o = r == RT_CUDA_SUCCESS ? calloc(1, sizeof *o) : NULL;
	if (r == RT_CUDA_SUCCESS && !o)
		r = 2;
	if (r != RT_CUDA_SUCCESS)
		return r;
	__atomic_add_fetch(&n_event_record, 1, __ATOMIC_RELAXED);
	*o = (struct op){ .kind = OP_RECORD, .event = e };
	return enqueue(s, o);
}

/* Host work on a stream: fake_nccl.c puts a "kernel" that never ends there. */
API rt_cu_result cuLaunchHostFunc(rt_cu_stream s, void (*fn)(void *), void *arg)
{
	rt_cu_result r = enter("cuLaunchHostFunc", false);
	struct op *o = r == RT_CUDA_SUCCESS ? calloc(1, sizeof *o) : NULL;
	if (r == RT_CUDA_SUCCESS && !o)
		r = 2;
	if (r != RT_CUDA_SUCCESS)
		return r;
	*o = (struct op){ .kind = OP_HOST, .fn = fn, .arg = arg };
	return enqueue(s, o);
}

API rt_cu_result cuEventSynchronize(rt_cu_event e)
{
	rt_cu_result r = enter("cuEventSynchronize", false);
	if (r != RT_CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&lock);
	while (e->pending > 0)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
	return RT_CUDA_SUCCESS;
}

API rt_cu_result cuEventQuery(rt_cu_event e)
{
	rt_cu_result r = enter("cuEventQuery", false);
	if (r != RT_CUDA_SUCCESS)
		return r;
	__atomic_add_fetch(&n_event_query, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&lock);
	r = e->pending > 0 ? RT_CUDA_ERROR_NOT_READY : RT_CUDA_SUCCESS;
	pthread_mutex_unlock(&lock);
	return r;
}

/*
 * The time between the moments the streams' threads reached the two
 * events, as the driver's: CUDA_ERROR_INVALID_HANDLE for an event made
 * without timing or never recorded, CUDA_ERROR_NOT_READY while a record is
 * pending. Negative when end was reached first, as the driver allows.
 */
API rt_cu_result cuEventElapsedTime(float *ms, rt_cu_event start, rt_cu_event end)
{
	rt_cu_result r = enter("cuEventElapsedTime", false);
	if (r != RT_CUDA_SUCCESS)
		return r;
	if (!ms || !start || !end)
		return CUDA_ERROR_INVALID_VALUE;
	__atomic_add_fetch(&n_event_elapsed, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&lock);
	if (!start->timed || !end->timed || (!start->reached && !start->pending) ||
	    (!end->reached && !end->pending))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (start->pending || end->pending)
		r = RT_CUDA_ERROR_NOT_READY;
	else
		*ms = (float)((end->when_us - start->when_us) / 1000.0);
	pthread_mutex_unlock(&lock);
	return r;
}

/* For tests/device/dev_overhead.c: event creations, records, queries and elapsed times so far. */
API void fake_cuda_event_calls(unsigned long calls[4])
{
	calls[0] = __atomic_load_n(&n_event_create, __ATOMIC_RELAXED);
	calls[1] = __atomic_load_n(&n_event_record, __ATOMIC_RELAXED);
	calls[2] = __atomic_load_n(&n_event_query, __ATOMIC_RELAXED);
	calls[3] = __atomic_load_n(&n_event_elapsed, __ATOMIC_RELAXED);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_device.c - device memory in checkpoints: slices staged through
 * pinned host memory on a copy stream of libllmp's own (ckpt_device.h).
 *
 * Every CUDA call runs with the handle's context pushed on the calling
 * thread and popped after: the program's current context when the first
 * device tensor was registered, else the primary context of that tensor's
 * device (retained, released at close). A save first waits for the work
 * queued in that context (cuCtxSynchronize), so it saves what the
 * program's kernels queued before the call left in its tensors.
 */
#include "ckpt_device.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/crc32c.h"
#include "runtime/device/cuda_api.h"

/* Bytes a load reads from the file per call. */
#define READ_BYTES ((size_t)16 << 20)
/* The widest row pitch a 2D copy is given; wider rows are copied one by one. */
#define MAX_PITCH ((size_t)1 << 30)

struct ck_device {
	llmp_ckpt *ck;
	struct rt_cuda cu;
	bool loaded;
	int ordinal;
	rt_cu_device device;
	bool primary; /* ctx is the device's primary context, retained by us */
	rt_cu_ctx ctx;
	rt_cu_stream stream;
	rt_cu_event done[2]; /* the two halves of a streamed save */
	char *pinned;        /* a save's staging: whole, or two halves when streamed */
	size_t pinned_cap;
	char *load_buf; /* a load's: one saved slice */
	size_t load_cap;
	bool streamed; /* this save streams its device slices (over staging_max) */
	size_t half;   /* bytes of each half when streamed */
	size_t bytes;  /* of this rank's slices in the last save, from device memory */
	double copy_seconds;
};

/* "tensor NAME: cuCall: CUDA_ERROR_...: words" into msg. */
static llmp_status cuda_fail(const struct ck_device *dev, rt_cu_result r, const char *tensor,
			     const char *call, char *msg, size_t len)
{
	char why[200];
	return llmp_fail(LLMP_ERR_DEVICE, msg, len, "tensor %s: %s: %s", tensor, call,
			 rt_cuda_why(&dev->cu, r, why, sizeof why));
}

static const char *call_name(const char *field)
{
	/* The table's fields, as the driver names the calls, for messages. */
	static const struct {
		const char *field, *call;
	} names[] = {
		{ "ctx_push_current", "cuCtxPushCurrent" },
		{ "ctx_synchronize", "cuCtxSynchronize" },
		{ "mem_host_alloc", "cuMemHostAlloc" },
		{ "stream_create", "cuStreamCreate" },
		{ "stream_synchronize", "cuStreamSynchronize" },
		{ "memcpy_dtoh_async", "cuMemcpyDtoHAsync" },
		{ "memcpy_htod_async", "cuMemcpyHtoDAsync" },
		{ "memcpy_2d_async", "cuMemcpy2DAsync" },
		{ "event_create", "cuEventCreate" },
		{ "event_record", "cuEventRecord" },
		{ "event_synchronize", "cuEventSynchronize" },
		{ "ctx_get_current", "cuCtxGetCurrent" },
		{ "device_get", "cuDeviceGet" },
		{ "primary_ctx_retain", "cuDevicePrimaryCtxRetain" },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(names[i].field, field) == 0)
			return names[i].call;
	return field;
}

/* One driver call: its failure names the tensor, the call and the driver's words. */
#define CALL(dev, tensor, msg, len, field, ...) \
	cu_check(dev, (dev)->cu.field(__VA_ARGS__), tensor, #field, msg, len)

static llmp_status cu_check(const struct ck_device *dev, rt_cu_result r, const char *tensor,
			    const char *field, char *msg, size_t len)
{
	return r == RT_CUDA_SUCCESS ? LLMP_OK : cuda_fail(dev, r, tensor, call_name(field), msg, len);
}

static void pop_ctx(struct ck_device *dev)
{
	rt_cu_ctx popped;
	dev->cu.ctx_pop_current(&popped);
}

/* The context, copy stream and events, made when the first device tensor is registered. */
static llmp_status open_device(struct ck_device *dev, const char *tensor, int ordinal, char *msg, size_t len)
{
	llmp_status st = rt_cuda_load(&dev->cu, msg, len);
	if (st != LLMP_OK)
		return st;
	dev->ordinal = ordinal;
	st = CALL(dev, tensor, msg, len, ctx_get_current, &dev->ctx);
	if (st == LLMP_OK && !dev->ctx) {
		st = CALL(dev, tensor, msg, len, device_get, &dev->device, ordinal);
		if (st == LLMP_OK)
			st = CALL(dev, tensor, msg, len, primary_ctx_retain, &dev->ctx, dev->device);
		dev->primary = st == LLMP_OK;
	}
	if (st == LLMP_OK)
		st = CALL(dev, tensor, msg, len, ctx_push_current, dev->ctx);
	if (st != LLMP_OK)
		return st; /* the caller unloads */
	st = CALL(dev, tensor, msg, len, stream_create, &dev->stream, RT_CU_STREAM_NON_BLOCKING);
	for (int k = 0; k < 2 && st == LLMP_OK; k++)
		st = CALL(dev, tensor, msg, len, event_create, &dev->done[k], RT_CU_EVENT_DISABLE_TIMING);
	pop_ctx(dev);
	dev->loaded = st == LLMP_OK;
	return st;
}

static void close_device(struct ck_device *dev)
{
	if (!dev->cu.lib)
		return;
	if (dev->ctx && dev->cu.ctx_push_current(dev->ctx) == RT_CUDA_SUCCESS) {
		if (dev->stream)
			dev->cu.stream_synchronize(dev->stream);
		for (int k = 0; k < 2; k++)
			if (dev->done[k])
				dev->cu.event_destroy(dev->done[k]);
		if (dev->stream)
			dev->cu.stream_destroy(dev->stream);
		if (dev->pinned)
			dev->cu.mem_free_host(dev->pinned);
		if (dev->load_buf)
			dev->cu.mem_free_host(dev->load_buf);
		pop_ctx(dev);
	}
	if (dev->primary)
		dev->cu.primary_ctx_release(dev->device);
	rt_cuda_unload(&dev->cu);
}

llmp_status ck_dev_register(llmp_ckpt *ck, const char *name, const void *data, bool *device)
{
	llmp_ctx *ctx = ck->ctx;
	int ordinal;
	*device = rt_cuda_is_device_memory(data, &ordinal);
	if (!*device)
		return LLMP_OK;
	if (!ck->dev && !(ck->dev = calloc(1, sizeof *ck->dev)))
		return rt_fail(ctx, LLMP_ERR_NOMEM, "registering device tensor %s", name);
	struct ck_device *dev = ck->dev;
	dev->ck = ck;
	if (dev->loaded && ordinal != dev->ordinal)
		return rt_fail(ctx, LLMP_ERR_UNSUPPORTED,
			       "tensor %s is on device %d, the handle's other device tensors on device %d: "
			       "a handle saves from one device",
			       name, ordinal, dev->ordinal);
	if (dev->loaded)
		return LLMP_OK;
	char why[LLMP_MSG_MAX - 64];
	llmp_status st = open_device(dev, name, ordinal, why, sizeof why);
	if (st != LLMP_OK) {
		close_device(dev);
		memset(dev, 0, sizeof *dev);
		return rt_fail(ctx, st, "tensor %s is device memory, but the CUDA driver cannot be used: %s",
			       name, why);
	}
	return LLMP_OK;
}

/* Pinned memory for *buf, kept while big enough: one allocation for every save or load that fits. */
static llmp_status reserve_pinned(struct ck_device *dev, char **buf, size_t *cap, size_t bytes,
				  const char *tensor, char *msg, size_t len)
{
	if (bytes <= *cap)
		return LLMP_OK;
	if (*buf)
		dev->cu.mem_free_host(*buf);
	*buf = NULL;
	*cap = 0;
	llmp_status st = CALL(dev, tensor, msg, len, mem_host_alloc, (void **)buf, bytes,
			      RT_CU_MEMHOSTALLOC_PORTABLE);
	if (st == LLMP_OK)
		*cap = bytes;
	return st;
}

/*
 * The pinned staging a save of `bytes` from the device uses: all of them
 * within staging_max (or with no bound), else the bound in two halves
 * (*half), which the shard writer streams each slice through.
 */
static size_t pinned_size(const llmp_ckpt *ck, size_t bytes, size_t *half)
{
	if (!ck->staging_max || bytes <= ck->staging_max) {
		*half = bytes;
		return bytes;
	}
	*half = ck->staging_max / 2 ? ck->staging_max / 2 : 1;
	return 2 * *half;
}

llmp_status ck_dev_prepare(llmp_ckpt *ck, size_t device_bytes)
{
	struct ck_device *dev = ck->dev;
	if (!dev || !dev->loaded || !device_bytes)
		return LLMP_OK;
	char *msg = ck->ctx->errmsg;
	size_t len = sizeof ck->ctx->errmsg, half;
	llmp_status st = CALL(dev, "(this rank's device slices)", msg, len, ctx_push_current, dev->ctx);
	if (st != LLMP_OK)
		return st;
	st = reserve_pinned(dev, &dev->pinned, &dev->pinned_cap, pinned_size(ck, device_bytes, &half),
			    "(this rank's device slices)", msg, len);
	pop_ctx(dev);
	return st;
}

static bool is_device_slice(const llmp_ckpt *ck, const struct ck_slice *s, const void *data)
{
	return data && ck->tensors[s->tensor].device;
}

/* Every device slice of p copied into dev->pinned on the stream; p->data pointed there once done. */
static llmp_status copy_whole(struct ck_device *dev, struct ck_pending *p, char *msg, size_t len)
{
	llmp_ckpt *ck = dev->ck;
	llmp_status st = LLMP_OK;
	size_t off = 0;
	for (size_t i = 0; st == LLMP_OK && i < p->n; i++) {
		if (!is_device_slice(ck, &p->all[i], p->data[i]))
			continue;
		size_t bytes = (size_t)ck_bytes(&p->all[i]);
		st = CALL(dev, p->all[i].name, msg, len, memcpy_dtoh_async, dev->pinned + off,
			  (rt_cu_devptr)(uintptr_t)p->data[i], bytes, dev->stream);
		off += bytes;
	}
	/* Drained even after a failure: no copy may land in the buffer later. */
	rt_cu_result r = dev->cu.stream_synchronize(dev->stream);
	if (st == LLMP_OK && r != RT_CUDA_SUCCESS)
		st = cuda_fail(dev, r, "(this rank's device slices)", "cuStreamSynchronize", msg, len);
	for (size_t i = 0, at = 0; st == LLMP_OK && i < p->n; i++)
		if (is_device_slice(ck, &p->all[i], p->data[i])) {
			p->data[i] = dev->pinned + at;
			at += (size_t)ck_bytes(&p->all[i]);
		}
	return st;
}

/* The first device slice this rank writes, for messages about all of them. */
static const char *first_device_slice(const llmp_ckpt *ck, const struct ck_pending *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (is_device_slice(ck, &p->all[i], p->data[i]))
			return p->all[i].name;
	return "?";
}

llmp_status ck_dev_stage(llmp_ckpt *ck, struct ck_pending *p, size_t *device_bytes)
{
	struct ck_device *dev = ck->dev;
	*device_bytes = 0;
	if (!dev || !dev->loaded)
		return LLMP_OK;
	dev->bytes = 0;
	dev->copy_seconds = 0;
	dev->streamed = false;
	for (size_t i = 0; i < p->n; i++)
		if (is_device_slice(ck, &p->all[i], p->data[i]))
			*device_bytes += (size_t)ck_bytes(&p->all[i]);
	if (!*device_bytes)
		return LLMP_OK;
	dev->bytes = *device_bytes;
	p->job.dev = dev;
	const char *first = first_device_slice(ck, p);
	char *msg = ck->ctx->errmsg;
	size_t len = sizeof ck->ctx->errmsg;
	double started = rt_now();
	llmp_status st = CALL(dev, first, msg, len, ctx_push_current, dev->ctx);
	if (st != LLMP_OK)
		return st;
	st = CALL(dev, first, msg, len, ctx_synchronize);
	dev->streamed = ck->staging_max && *device_bytes > ck->staging_max;
	if (st == LLMP_OK)
		st = reserve_pinned(dev, &dev->pinned, &dev->pinned_cap,
				    pinned_size(ck, *device_bytes, &dev->half), first, msg, len);
	if (st == LLMP_OK && !dev->streamed)
		st = copy_whole(dev, p, msg, len);
	pop_ctx(dev);
	dev->copy_seconds += rt_now() - started;
	return st;
}

bool ck_dev_streams(const struct ck_shard_job *job, size_t i)
{
	const struct ck_device *dev = job->dev;
	return dev && dev->streamed && is_device_slice(dev->ck, &job->all[i], job->data[i]);
}

static bool write_at(int fd, const char *buf, size_t len, uint64_t at)
{
	for (size_t done = 0; done < len;) {
		ssize_t put = pwrite(fd, buf + done, len - done, (off_t)(at + done));
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0)
			return false;
		done += (size_t)put;
	}
	return true;
}

/* Chunk k of a streamed slice: its device-to-host copy queued into half k % 2, then the half's event. */
static llmp_status queue_chunk(struct ck_device *dev, const struct ck_slice *s, const char *src,
			       uint64_t bytes, uint64_t k, char *msg, size_t len)
{
	uint64_t off = k * dev->half;
	size_t n = bytes - off < dev->half ? (size_t)(bytes - off) : dev->half;
	llmp_status st = CALL(dev, s->name, msg, len, memcpy_dtoh_async, dev->pinned + (k % 2) * dev->half,
			      (rt_cu_devptr)(uintptr_t)(src + off), n, dev->stream);
	return st == LLMP_OK ? CALL(dev, s->name, msg, len, event_record, dev->done[k % 2], dev->stream) : st;
}

/*
 * Double buffering: chunk k+1 is queued before chunk k is waited for, so
 * its copy runs while chunk k is checksummed and written. Half (k+1) % 2
 * held chunk k-1, which was written before the loop came round.
 */
static llmp_status stream_slice(struct ck_device *dev, struct ck_slice *s, const char *src, int fd,
				const char *path, char *msg, size_t len)
{
	uint64_t bytes = ck_bytes(s), chunks = (bytes + dev->half - 1) / dev->half;
	uint32_t crc = 0;
	llmp_status st = queue_chunk(dev, s, src, bytes, 0, msg, len);
	for (uint64_t k = 0; st == LLMP_OK && k < chunks; k++) {
		if (k + 1 < chunks)
			st = queue_chunk(dev, s, src, bytes, k + 1, msg, len);
		double waited = rt_now();
		if (st == LLMP_OK)
			st = CALL(dev, s->name, msg, len, event_synchronize, dev->done[k % 2]);
		dev->copy_seconds += rt_now() - waited;
		uint64_t off = k * dev->half;
		size_t n = bytes - off < dev->half ? (size_t)(bytes - off) : dev->half;
		const char *chunk = dev->pinned + (k % 2) * dev->half;
		if (st == LLMP_OK)
			crc = kern_crc32c(crc, chunk, n);
		if (st == LLMP_OK && !write_at(fd, chunk, n, s->at + off))
			st = llmp_fail(LLMP_ERR_IO, msg, len, "writing tensor %s to %s at byte %llu: %s",
				       s->name, path, (unsigned long long)(s->at + off), strerror(errno));
	}
	dev->cu.stream_synchronize(dev->stream); /* nothing in flight into the halves after a failure */
	s->crc = crc;
	return st;
}

llmp_status ck_dev_write_slice(struct ck_shard_job *job, size_t i, char *msg, size_t len)
{
	struct ck_device *dev = job->dev;
	struct ck_slice *s = &job->all[i];
	int fd = open(job->path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return llmp_fail(LLMP_ERR_IO, msg, len, "open %s: %s", job->path, strerror(errno));
	llmp_status st = CALL(dev, s->name, msg, len, ctx_push_current, dev->ctx);
	if (st == LLMP_OK) {
		st = stream_slice(dev, s, job->data[i], fd, job->path, msg, len);
		pop_ctx(dev);
	}
	/* The shard writer fsyncs the file after its last slice. */
	if (close(fd) != 0 && st == LLMP_OK)
		st = llmp_fail(LLMP_ERR_IO, msg, len, "close %s: %s", job->path, strerror(errno));
	return st;
}

/* ------------------------------------------------------------------ load */

/* Saved slice s whole into dev->load_buf, its CRC-32C in *crc. */
static llmp_status read_slice(llmp_ctx *ctx, struct ck_device *dev, int fd, const char *path,
			      const struct ck_slice *s, uint32_t *crc)
{
	uint64_t bytes = ck_bytes(s);
	*crc = 0;
	for (uint64_t done = 0; done < bytes;) {
		size_t want = bytes - done < READ_BYTES ? (size_t)(bytes - done) : READ_BYTES;
		ssize_t got = pread(fd, dev->load_buf + done, want, (off_t)(s->at + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return rt_fail(ctx, LLMP_ERR_IO, "reading tensor %s from %s: %s", s->name, path,
				       got < 0 ? strerror(errno) : "the file ends inside it");
		*crc = kern_crc32c(*crc, dev->load_buf + done, (size_t)got);
		done += (size_t)got;
	}
	return LLMP_OK;
}

/* Rows [lo, hi) of the last dimension's plane: one 2D copy, or a copy per row when the pitches are too wide. */
static llmp_status copy_plane(struct ck_device *dev, const char *tensor, const char *src, size_t spitch,
			      char *dst, size_t dpitch, size_t width, size_t height, char *msg, size_t len)
{
	if (height == 1 || spitch > MAX_PITCH || dpitch > MAX_PITCH) {
		llmp_status st = LLMP_OK;
		for (size_t r = 0; st == LLMP_OK && r < height; r++)
			st = CALL(dev, tensor, msg, len, memcpy_htod_async,
				  (rt_cu_devptr)(uintptr_t)(dst + r * dpitch), src + r * spitch, width,
				  dev->stream);
		return st;
	}
	struct rt_cu_memcpy2d c = { .src_memory_type = RT_CU_MEMORYTYPE_HOST,
				    .src_host = src,
				    .src_pitch = spitch,
				    .dst_memory_type = RT_CU_MEMORYTYPE_DEVICE,
				    .dst_device = (rt_cu_devptr)(uintptr_t)dst,
				    .dst_pitch = dpitch,
				    .width_bytes = width,
				    .height = height };
	return CALL(dev, tensor, msg, len, memcpy_2d_async, &c, dev->stream);
}

/*
 * The part of saved slice s (host, src) inside tensor slice t (device,
 * dst): a 2D copy for the last two dimensions, one per index of the
 * dimensions before them.
 */
static llmp_status copy_to_device(struct ck_device *dev, const struct ck_slice *s, const char *src,
				  const struct ck_slice *t, char *dst, char *msg, size_t len)
{
	unsigned nd = t->ndim;
	size_t esize = llmp_dtype_size((llmp_dtype)t->dtype);
	uint64_t lo[LLMP_CKPT_MAX_DIMS], hi[LLMP_CKPT_MAX_DIMS], idx[LLMP_CKPT_MAX_DIMS];
	for (unsigned d = 0; d < nd; d++) {
		lo[d] = s->offset[d] > t->offset[d] ? s->offset[d] : t->offset[d];
		uint64_t se = s->offset[d] + s->shape[d], te = t->offset[d] + t->shape[d];
		hi[d] = se < te ? se : te;
		if (lo[d] >= hi[d])
			return LLMP_OK;
		idx[d] = lo[d];
	}
	unsigned rowdim = nd >= 2 ? nd - 2 : 0; /* the plane: dimensions rowdim.. */
	size_t width = (size_t)(hi[nd - 1] - lo[nd - 1]) * esize;
	size_t height = nd >= 2 ? (size_t)(hi[nd - 2] - lo[nd - 2]) : 1;
	size_t spitch = (size_t)s->shape[nd - 1] * esize, dpitch = (size_t)t->shape[nd - 1] * esize;
	llmp_status st = LLMP_OK;
	while (st == LLMP_OK) {
		uint64_t spos = 0, tpos = 0; /* row-major places of idx */
		for (unsigned d = 0; d < nd; d++) {
			spos = spos * s->shape[d] + (idx[d] - s->offset[d]);
			tpos = tpos * t->shape[d] + (idx[d] - t->offset[d]);
		}
		st = copy_plane(dev, t->name, src + spos * esize, spitch, dst + tpos * esize, dpitch, width,
				height, msg, len);
		/* Next plane: odometer over the dimensions before the plane's. */
		int d = (int)rowdim - 1;
		while (d >= 0 && ++idx[d] == hi[d]) {
			idx[d] = lo[d];
			d--;
		}
		if (d < 0)
			break;
	}
	return st;
}

llmp_status ck_dev_read(llmp_ckpt *ck, int fd, const char *path, const struct ck_slice *s,
			const struct ck_tensor *t)
{
	llmp_ctx *ctx = ck->ctx;
	struct ck_device *dev = ck->dev;
	char *msg = ctx->errmsg;
	size_t len = sizeof ctx->errmsg;
	uint32_t crc;
	llmp_status st = CALL(dev, t->slice.name, msg, len, ctx_push_current, dev->ctx);
	if (st != LLMP_OK)
		return st;
	st = reserve_pinned(dev, &dev->load_buf, &dev->load_cap, (size_t)ck_bytes(s), t->slice.name, msg,
			    len);
	if (st == LLMP_OK)
		st = read_slice(ctx, dev, fd, path, s, &crc);
	/* Checked whole before a byte of it reaches the device. */
	if (st == LLMP_OK && crc != s->crc)
		st = rt_fail(
			ctx, LLMP_ERR_IO,
			"tensor %s in %s fails its checksum (CRC-32C 0x%08x, MANIFEST 0x%08x): the file is "
			"corrupted",
			s->name, path, crc, s->crc);
	if (st == LLMP_OK)
		st = copy_to_device(dev, s, dev->load_buf, &t->slice, t->data, msg, len);
	/* Waited for even after a failure: load_buf is reused by the next slice. */
	rt_cu_result r = dev->cu.stream_synchronize(dev->stream);
	if (st == LLMP_OK && r != RT_CUDA_SUCCESS)
		st = cuda_fail(dev, r, t->slice.name, "cuStreamSynchronize", msg, len);
	pop_ctx(dev);
	return st;
}

void ck_dev_stats(const llmp_ckpt *ck, llmp_ckpt_stats *stats)
{
	const struct ck_device *dev = ck->dev;
	stats->device_bytes = dev ? dev->bytes : 0;
	stats->device_copy_seconds = dev ? dev->copy_seconds : 0;
	stats->device_staging_bytes = dev ? dev->pinned_cap : 0;
}

void ck_dev_free(llmp_ckpt *ck)
{
	if (!ck->dev)
		return;
	close_device(ck->dev);
	free(ck->dev);
	ck->dev = NULL;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_device.h - checkpoints of tensors in device memory: what the save,
 * the shard writer and the load call (ckpt_device.c).
 *
 * A registered slice whose data the CUDA driver calls device memory is
 * moved through pinned host memory the handle allocates once and keeps,
 * on a copy stream of its own. A save copies this rank's device slices
 * into one pinned buffer when they fit staging_max (or there is none):
 * that copy is the stall of an async save, and the shard is written from
 * the pinned copy. When they do not fit, the shard writer streams each
 * device slice through two pinned chunks: the copy of chunk k+1 runs while
 * chunk k is checksummed and written. A load reads a saved slice whole into
 * pinned memory, checks its CRC-32C, and only then copies its part to the
 * device.
 */
#ifndef LLMP_CKPT_DEVICE_H
#define LLMP_CKPT_DEVICE_H

#include <stdbool.h>

#include "ckpt_internal.h"

/*
 * llmp_ckpt_register: *device says whether data is device memory. The
 * first device tensor of a handle loads the driver and makes the copy
 * stream; an error names the tensor and the cause (no usable driver, a
 * failing call in the driver's words).
 */
llmp_status ck_dev_register(llmp_ckpt *ck, const char *name, const void *data, bool *device);

/*
 * A save, once the slices this rank writes are in p->data: the device ones
 * copied to pinned staging (p->data then points there), or, over
 * staging_max, left for the shard writer to stream (p->job.dev set).
 * *device_bytes: the bytes of this rank's device slices.
 */
llmp_status ck_dev_stage(llmp_ckpt *ck, struct ck_pending *p, size_t *device_bytes);

/* llmp_ckpt_prepare_async: the pinned memory a save of device_bytes from the device needs, allocated now. */
llmp_status ck_dev_prepare(llmp_ckpt *ck, size_t device_bytes);

/* The shard writer: whether slice i of job is streamed from device memory. */
bool ck_dev_streams(const struct ck_shard_job *job, size_t i);

/*
 * The shard writer, once slice i's dataset has room at job->all[i].at: its
 * bytes copied from the device in chunks and written there; its CRC set.
 */
llmp_status ck_dev_write_slice(struct ck_shard_job *job, size_t i, char *msg, size_t len);

/*
 * A load: saved slice s (at s->at in the shard open as fd) read into pinned
 * memory and checked against its CRC, then its part in device tensor t
 * copied there. Returns once the copy is done.
 */
llmp_status ck_dev_read(llmp_ckpt *ck, int fd, const char *path, const struct ck_slice *s,
			const struct ck_tensor *t);

/* llmp_ckpt_get_stats: the last save's device bytes and copy time, the pinned memory held. */
void ck_dev_stats(const llmp_ckpt *ck, llmp_ckpt_stats *stats);

/* llmp_ckpt_close: the stream, events, pinned memory and context reference released. */
void ck_dev_free(llmp_ckpt *ck);

#endif /* LLMP_CKPT_DEVICE_H */

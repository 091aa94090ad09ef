# SPDX-License-Identifier: BSD-3-Clause
# runtime/ckpt/local.mk - checkpoints (included by runtime/local.mk). The
# context-free reader is format/, a library of its own.
include runtime/ckpt/format/local.mk
runtime_sources += \
	runtime/ckpt/ckpt_internal.h runtime/ckpt/ckpt.c \
	runtime/ckpt/ckpt_fs.c runtime/ckpt/ckpt_manifest.c \
	runtime/ckpt/ckpt_hdf5.c runtime/ckpt/ckpt_save.c runtime/ckpt/ckpt_load.c \
	runtime/ckpt/ckpt_read.c runtime/ckpt/ckpt_node.c \
	runtime/ckpt/ckpt_device.h runtime/ckpt/ckpt_device.c \
	runtime/ckpt/ckpt_stripe.c

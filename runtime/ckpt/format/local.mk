# SPDX-License-Identifier: BSD-3-Clause
# runtime/ckpt/format/local.mk - a checkpoint on disk without a context
# (included by runtime/local.mk).
#
# A convenience library of its own, linked into libllmp and into the `llmp`
# tool: `llmp ckpt list|verify|inspect` read checkpoints with the runtime's
# own code and link HDF5 and the kernels' CRC-32C, but neither PMIx nor UCX.
# It holds no copy of the planner or the kernels (whoever links it links
# them once): after it, a program names $(LLMP_PLANNER_LIBS) (llmp_fail)
# and kernels/libkernels.la (CRC-32C, dtype sizes).
noinst_LTLIBRARIES += runtime/ckpt/format/libckpt_format.la
runtime_ckpt_format_libckpt_format_la_SOURCES = \
	runtime/ckpt/format/ckpt_format.h runtime/ckpt/format/ckpt_h5.h \
	runtime/ckpt/format/slices.c runtime/ckpt/format/dir.c \
	runtime/ckpt/format/manifest.c runtime/ckpt/format/filesum.c \
	runtime/ckpt/format/h5check.c runtime/ckpt/format/verify.c
runtime_ckpt_format_libckpt_format_la_CPPFLAGS = $(AM_CPPFLAGS) -D_GNU_SOURCE $(HDF5_CFLAGS)
runtime_ckpt_format_libckpt_format_la_LIBADD = $(HDF5_LIBS)

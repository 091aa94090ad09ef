# SPDX-License-Identifier: BSD-3-Clause
# runtime/local.mk - libllmp (included by Makefile.am when PMIx and UCX exist).
#
# The planner and the kernels are linked in statically, so a program needs
# -lllmp alone (pkg-config llmp). Only the public API is exported.
#
# Everything is compiled once into a convenience library, libllmp_core:
# libllmp.la is it with the exports of runtime/libllmp.map, and
# `llmp-bench` (the tool's subcommands that join a job) links it whole.
# What reads files without a context is in two smaller convenience
# libraries that libllmp_core includes and the `llmp` tool links alone,
# without PMIx or UCX: the checkpoint format (ckpt/format/), the run
# record (job/job_record.c) and the metrics files (job/metrics.mk).
#
# Each folder's fragment appends its files to runtime_sources:
# comm/ (context, wire-up, transport, failure), coll/ (the operations on a
# communicator), ckpt/ (checkpoints), job/ (stop, requeue, resume),
# device/ (NCCL), init/ (llmp_init and llmp_finalize, above them all).
runtime_sources =
include runtime/comm/local.mk
include runtime/coll/local.mk
include runtime/ckpt/local.mk
include runtime/job/local.mk
include runtime/device/local.mk
include runtime/init/local.mk

noinst_LTLIBRARIES += runtime/libllmp_core.la
runtime_libllmp_core_la_SOURCES = $(runtime_sources)
runtime_libllmp_core_la_CPPFLAGS = $(AM_CPPFLAGS) -D_GNU_SOURCE $(PMIX_CFLAGS) $(UCX_CFLAGS) $(HDF5_CFLAGS)
runtime_libllmp_core_la_LIBADD = runtime/device/libdevice.la runtime/job/libjob_record.la runtime/job/libmetrics.la runtime/ckpt/format/libckpt_format.la \
	topology/discover/libdiscover.la $(LLMP_PLANNER_LIBS) kernels/libkernels.la $(PMIX_LIBS) $(UCX_LIBS) $(HDF5_LIBS) -lpthread

lib_LTLIBRARIES += runtime/libllmp.la
runtime_libllmp_la_SOURCES =
runtime_libllmp_la_LIBADD = runtime/libllmp_core.la
runtime_libllmp_la_LDFLAGS = -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/runtime/libllmp.map
EXTRA_runtime_libllmp_la_DEPENDENCIES = runtime/libllmp.map
EXTRA_DIST += runtime/libllmp.map

pkginclude_HEADERS += include/llmp/llmp.h include/llmp/llmp_ckpt.h include/llmp/llmp_job.h \
	include/llmp/llmp_device.h
pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = runtime/llmp.pc

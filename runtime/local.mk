# runtime/local.mk - libllmp (included by Makefile.am when PMIx and UCX exist).
#
# The planner and the kernels are linked in statically, so a program needs
# -lllmp alone (pkg-config llmp). Only the public API is exported.
#
# Everything is compiled once into a convenience library, libllmp_core:
# libllmp.la is it with the exports of runtime/libllmp.map, and the `llmp` tool links it
# whole, because `llmp ckpt` reads checkpoints with the runtime's own
# internal code (runtime/ckpt_format.h) rather than a copy of it.
runtime_sources = \
	runtime/llmp.h runtime/rt.h runtime/ctx.c runtime/memtype.c \
	runtime/wireup.h runtime/wireup.c \
	runtime/transport.h runtime/transport.c \
	runtime/failure.h runtime/failure.c \
	runtime/liveness.h runtime/liveness.c \
	runtime/comm.c \
	runtime/coll.h runtime/coll.c runtime/allreduce.c runtime/reduce_scatter.c \
	runtime/allgather.c runtime/broadcast.c runtime/barrier.c runtime/p2p.c \
	runtime/shm.h runtime/shm.c \
	runtime/llmp_ckpt.h runtime/ckpt_format.h runtime/ckpt_internal.h runtime/ckpt.c \
	runtime/ckpt_fs.c runtime/ckpt_manifest.c runtime/ckpt_filesum.c runtime/ckpt_hdf5.c runtime/ckpt_save.c \
	runtime/ckpt_load.c runtime/ckpt_read.c runtime/ckpt_verify.c \
	runtime/agree.c \
	runtime/llmp_job.h runtime/job_internal.h runtime/job.c runtime/job_signal.c \
	runtime/job_record.c runtime/job_log.c

noinst_LTLIBRARIES += runtime/libllmp_core.la
runtime_libllmp_core_la_SOURCES = $(runtime_sources)
runtime_libllmp_core_la_CPPFLAGS = $(AM_CPPFLAGS) -D_GNU_SOURCE $(PMIX_CFLAGS) $(UCX_CFLAGS) $(HDF5_CFLAGS)
runtime_libllmp_core_la_LIBADD = topology/libplanner.la kernels/libkernels.la $(PMIX_LIBS) $(UCX_LIBS) $(HDF5_LIBS) -lpthread

lib_LTLIBRARIES += runtime/libllmp.la
runtime_libllmp_la_SOURCES =
runtime_libllmp_la_LIBADD = runtime/libllmp_core.la
runtime_libllmp_la_LDFLAGS = -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/runtime/libllmp.map
EXTRA_runtime_libllmp_la_DEPENDENCIES = runtime/libllmp.map
EXTRA_DIST += runtime/libllmp.map

pkginclude_HEADERS += runtime/llmp.h runtime/llmp_ckpt.h runtime/llmp_job.h
pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = runtime/llmp.pc

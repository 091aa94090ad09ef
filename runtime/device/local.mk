# SPDX-License-Identifier: BSD-3-Clause
# runtime/device/local.mk - the device path: NCCL loaded with dlopen, one
# communicator per group of the rank (included by runtime/local.mk).
#
# Its own convenience library, so that only these files see the CUDA
# toolkit's include directory (nccl.h includes cuda_runtime.h). Built
# without nccl.h too: the API then says why the device path is off.
noinst_LTLIBRARIES += runtime/device/libdevice.la
runtime_device_libdevice_la_SOURCES = runtime/device/device.h runtime/device/device_internal.h \
	runtime/device/device.c runtime/device/device_coll.c runtime/device/device_p2p.c runtime/device/watchdog.c \
	runtime/device/inflight.c \
	runtime/device/cuda_api.h runtime/device/cuda_api.c runtime/device/dl_table.h runtime/device/dl_table.c
runtime_device_libdevice_la_CPPFLAGS = $(AM_CPPFLAGS) -D_GNU_SOURCE $(PMIX_CFLAGS) $(UCX_CFLAGS)
if HAVE_NCCL
runtime_device_libdevice_la_SOURCES += runtime/device/nccl_api.h runtime/device/nccl_api.c
runtime_device_libdevice_la_CPPFLAGS += $(NCCL_CPPFLAGS)
endif
EXTRA_DIST += runtime/device/nccl_api.h runtime/device/nccl_api.c

# SPDX-License-Identifier: BSD-3-Clause
# tests/device/local.mk - the device path's tests (included by Makefile.am
# inside `if BUILD_RUNTIME`).
#
# dev_check is a program of the public API (llmp_device.h); fake_nccl is a
# test double of NCCL's calls that tests/device.bats loads through
# LLMP_NCCL_LIBRARY, so the id exchange, the communicators' creation and
# their failures run on the test cluster without a GPU.
check_PROGRAMS += tests/device/dev_check
tests_device_dev_check_SOURCES = tests/device/dev_check.c
tests_device_dev_check_LDADD = runtime/libllmp.la
# libllmp linked in statically: srun runs the real binary (as rt_check).
tests_device_dev_check_LDFLAGS = -static

# Device checkpoints (tests/device_ckpt.bats, no cluster): dev_ckpt saves
# and loads "device" tensors that fake_cuda, a test double of the CUDA
# driver, holds. The bats file links it as libcuda.so.1 in a directory of
# the test's own, on LD_LIBRARY_PATH for those runs only: dev_ckpt loads
# "libcuda.so.1" as a program loads its driver, and libllmp then finds it
# the way it finds the real one. It is never installed.
check_PROGRAMS += tests/device/dev_ckpt
tests_device_dev_ckpt_SOURCES = tests/device/dev_ckpt.c
tests_device_dev_ckpt_LDADD = runtime/libllmp.la
tests_device_dev_ckpt_LDFLAGS = -static
check_LTLIBRARIES += tests/device/fake_cuda.la
tests_device_fake_cuda_la_SOURCES = tests/device/fake_cuda.c
# Its calls are the driver's, declared by no header of ours.
tests_device_fake_cuda_la_CFLAGS = $(AM_CFLAGS) -Wno-missing-prototypes
tests_device_fake_cuda_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_device_fake_cuda_la_LIBADD = -lpthread
if HAVE_BATS
TESTS += tests/device_ckpt.bats
endif
EXTRA_DIST += tests/device_ckpt.bats

if HAVE_CUDA
# cuda_api.h writes the driver's constants and CUDA_MEMCPY2D out, so that
# libllmp builds without CUDA headers; this checks them against cuda.h as it compiles.
check_PROGRAMS += tests/device/cuda_abi_check
TESTS += tests/device/cuda_abi_check
tests_device_cuda_abi_check_SOURCES = tests/device/cuda_abi_check.c
tests_device_cuda_abi_check_CPPFLAGS = $(AM_CPPFLAGS) $(NCCL_CPPFLAGS) $(CUDA_CPPFLAGS)
endif
EXTRA_DIST += tests/device/cuda_abi_check.c

if HAVE_NCCL
check_LTLIBRARIES += tests/device/fake_nccl.la
tests_device_fake_nccl_la_SOURCES = tests/device/fake_nccl.c
tests_device_fake_nccl_la_CPPFLAGS = $(AM_CPPFLAGS) $(NCCL_CPPFLAGS)
# nccl.h declares ncclGroupStart() and ncclGroupEnd() without (void).
tests_device_fake_nccl_la_CFLAGS = $(AM_CFLAGS) -Wno-missing-prototypes
tests_device_fake_nccl_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
if HAVE_BATS
if BUILD_PLUGIN
# Starts the local three-node Slurm cluster; skipped (and counted so) without root.
TESTS += tests/device.bats
endif
# No cluster: llmp bench as a singleton with both doubles, NCCL's HCA lines
# read back after its init and set against llmp's prediction (about 1 s).
TESTS += tests/device_gdr.bats
endif
endif
EXTRA_DIST += tests/device.bats tests/device_gdr.bats tests/device/fake_nccl.c

# The device path's own cost per call against both doubles, and the deadline
# and GPU time under each LLMP_DEVICE_TIMING mode, as a PMIx singleton (no
# cluster): tests/device_overhead.bats prints the figures of dev_overhead and
# holds the event calls per operation to each mode's.
if HAVE_NCCL
check_PROGRAMS += tests/device/dev_overhead
tests_device_dev_overhead_SOURCES = tests/device/dev_overhead.c
tests_device_dev_overhead_CPPFLAGS = $(AM_CPPFLAGS) $(NCCL_CPPFLAGS)
tests_device_dev_overhead_LDADD = runtime/libllmp.la
tests_device_dev_overhead_LDFLAGS = -static
if HAVE_BATS
TESTS += tests/device_overhead.bats
endif
endif
EXTRA_DIST += tests/device_overhead.bats

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
endif
endif
EXTRA_DIST += tests/device.bats tests/device/fake_nccl.c

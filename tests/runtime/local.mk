# SPDX-License-Identifier: BSD-3-Clause
# tests/runtime/local.mk - the runtime's tests (included by Makefile.am
# inside `if BUILD_RUNTIME`).
#
# rt_check is one program with a subcommand per concern (collectives, p2p,
# stats, layout mismatch, a killed rank, singleton, bad arguments); it computes
# every expected value itself. tests/runtime.bats runs it through srun --mpi=pmix
# on the local three-node Slurm cluster, and alone as a PMIx singleton.
check_PROGRAMS += tests/runtime/rt_check
tests_runtime_rt_check_SOURCES = \
	tests/runtime/rt_check.c tests/runtime/rt_check.h \
	tests/runtime/rt_report.c tests/lib/report.c tests/lib/report.h \
	tests/runtime/rt_values.c tests/runtime/rt_values.h \
	tests/runtime/rt_coll.c \
	tests/runtime/rt_p2p.c \
	tests/runtime/rt_stats.c \
	tests/runtime/rt_fault.c \
	tests/runtime/rt_singleton.c \
	tests/runtime/rt_badargs.c \
	tests/runtime/rt_leave.c \
	tests/runtime/rt_metrics.c
tests_runtime_rt_check_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CFLAGS)
tests_runtime_rt_check_LDADD = runtime/libllmp.la -lm
# libllmp linked in statically: srun runs the real binary, with no libtool
# wrapper script and no LD_LIBRARY_PATH to carry into the tasks.
tests_runtime_rt_check_LDFLAGS = -static

if HAVE_BATS
TESTS += tests/runtime_singleton.bats
if BUILD_PLUGIN
# Starts the local three-node Slurm cluster; skipped (and counted so) without root.
TESTS += tests/runtime.bats tests/metrics.bats
endif
endif
EXTRA_DIST += tests/metrics.bats tests/runtime.bats tests/runtime_singleton.bats tests/runtime/common.bash

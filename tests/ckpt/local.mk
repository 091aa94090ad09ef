# SPDX-License-Identifier: BSD-3-Clause
# tests/ckpt/local.mk - the checkpoint tests (included by Makefile.am inside
# `if BUILD_RUNTIME`).
#
# ck_check saves and loads a synthetic model through llmp_ckpt (subcommands
# save, load, badargs, mismatch) and checks every value itself;
# tests/ckpt.bats runs it through srun --mpi=pmix on the local three-node
# Slurm cluster (and alone as a PMIx singleton for badargs), and reads the
# checkpoints back with h5py (tests/ckpt/check_view.py).
check_PROGRAMS += tests/ckpt/ck_check
tests_ckpt_ck_check_SOURCES = \
	tests/ckpt/ck_check.c tests/ckpt/ck_check.h \
	tests/ckpt/ck_badargs.c tests/lib/report.c tests/lib/report.h
tests_ckpt_ck_check_CPPFLAGS = $(AM_CPPFLAGS)
tests_ckpt_ck_check_LDADD = runtime/libllmp.la -lm
# libllmp linked in statically: srun runs the real binary, with no libtool
# wrapper script and no LD_LIBRARY_PATH to carry into the tasks.
tests_ckpt_ck_check_LDFLAGS = -static

# stripe= (runtime/ckpt/ckpt_stripe.c), no cluster: ck_stripe saves through
# llmp_job as a PMIx singleton and loads back; fake_lustreapi, a test double
# of liblustreapi's layout calls (never installed), is loaded through
# LLMP_LUSTREAPI_LIBRARY and logs the layout each step directory got.
check_PROGRAMS += tests/ckpt/ck_stripe
tests_ckpt_ck_stripe_SOURCES = tests/ckpt/ck_stripe.c
tests_ckpt_ck_stripe_LDADD = runtime/libllmp.la
tests_ckpt_ck_stripe_LDFLAGS = -static
check_LTLIBRARIES += tests/ckpt/fake_lustreapi.la
tests_ckpt_fake_lustreapi_la_SOURCES = tests/ckpt/fake_lustreapi.c
# Its calls are liblustreapi's, declared by no header of ours.
tests_ckpt_fake_lustreapi_la_CFLAGS = $(AM_CFLAGS) -Wno-missing-prototypes
tests_ckpt_fake_lustreapi_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere

# The context-free reading of checkpoints has a unit test of its own:
# tests/unit/test_ckpt_format.c (tests/unit/local.mk).

if HAVE_BATS
# `llmp ckpt` on checkpoints ck_check saves as a PMIx singleton: no cluster.
# ckpt_damage.bats: every file of a checkpoint damaged in turn (tests/ckpt/damage.py).
TESTS += tests/ckpt_tool.bats tests/ckpt_damage.bats tests/ckpt_stripe.bats
# LLMP_DEBUG: what libllmp says on stderr while ck_check and ck_stripe save and load.
TESTS += tests/debug_log.bats
if BUILD_PLUGIN
# Starts the local three-node Slurm cluster; skipped (and counted so) without root.
TESTS += tests/ckpt.bats
endif
endif
EXTRA_DIST += tests/ckpt.bats tests/ckpt/check_view.py tests/ckpt_tool.bats tests/ckpt/tool_expect.py \
	tests/ckpt_damage.bats tests/ckpt/damage.py tests/ckpt_stripe.bats tests/debug_log.bats

# SPDX-License-Identifier: BSD-3-Clause
# examples/local.mk - the example training program (included by Makefile.am
# inside `if BUILD_RUNTIME`).
#
# mlp_train uses only libllmp's public API (llmp.h, llmp_ckpt.h,
# llmp_job.h); tests/example_mlp.bats checks it as a PMIx singleton, the
# cluster tests run it through etc/examples/mlp-train.sbatch.
noinst_PROGRAMS += examples/mlp_train
examples_mlp_train_SOURCES = \
	examples/mlp_train.c \
	examples/mlp_options.c examples/mlp_options.h \
	examples/mlp_rng.h \
	examples/mlp_data.c examples/mlp_data.h \
	examples/mlp_model.c examples/mlp_model.h \
	examples/mlp_trainer.c examples/mlp_trainer.h \
	examples/mlp_checksum.c examples/mlp_checksum.h \
	examples/mlp_gradcheck.c examples/mlp_gradcheck.h \
	examples/mlp_state.c examples/mlp_state.h \
	examples/mlp_fault.c examples/mlp_fault.h
examples_mlp_train_LDADD = runtime/libllmp.la -lm
# libllmp linked in statically: srun runs the real binary, with no libtool
# wrapper script (which relinks on first use, racing between tasks) and no
# LD_LIBRARY_PATH to carry into the tasks.
examples_mlp_train_LDFLAGS = -static

if HAVE_BATS
TESTS += tests/example_mlp.bats
endif
EXTRA_DIST += tests/example_mlp.bats doc/example-mlp.md

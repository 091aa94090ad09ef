# SPDX-License-Identifier: BSD-3-Clause
# bench/local.mk - benchmarks (included by Makefile.am).
#
# `make bench` prints figures; it is never part of `make check`.
# bench_mpi_allreduce.c is built by scripts/bench-runtime.sh with mpicc,
# as the yardstick for `llmp bench` (doc/benchmarks.md).
# bench_ckpt_commit links the runtime (its commit path, without a job):
# scripts/bench-ckpt-scale.sh runs it at full scale and opens its output with h5py.
bench_programs = bench/bench_plan bench/bench_reduce bench/bench_crc32c bench/bench_metrics \
	bench/bench_auto_layout bench/bench_validate
if BUILD_RUNTIME
bench_programs += bench/bench_ckpt_commit
endif
# The JSON reader at 10k-1M keys: linear, where a user's topology file once made it quadratic.
bench_programs += bench/bench_json
# A training job under node failures, simulated: requeue-only against in-allocation
# restart with hot spares (ETTR, doc/benchmarks.md); the model is tested by tests/unit/test_goodput.
bench_programs += bench/bench_goodput
bench_bench_goodput_SOURCES = bench/bench_goodput.c bench/goodput_sim.c bench/goodput_sim.h
bench_bench_goodput_LDADD = -lm
EXTRA_PROGRAMS += $(bench_programs)
bench_bench_plan_LDADD = $(LLMP_PLANNER_LIBS)
bench_bench_json_CFLAGS = $(LLMP_CFLAGS)
bench_bench_json_LDADD = $(LLMP_PLANNER_LIBS)
bench_bench_auto_layout_CFLAGS = $(LLMP_CFLAGS)
bench_bench_auto_layout_LDADD = $(LLMP_PLANNER_LIBS)
# The step model against published runs (bench/data/published_layouts.tsv, doc/step-model.md).
bench_bench_validate_CPPFLAGS = $(AM_CPPFLAGS) -DLLMP_SRCDIR='"$(abs_top_srcdir)"'
bench_bench_validate_CFLAGS = $(LLMP_CFLAGS)
bench_bench_validate_LDADD = $(LLMP_PLANNER_LIBS)
EXTRA_DIST += bench/data/published_layouts.tsv bench/data/README.md
bench_bench_reduce_CFLAGS = $(LLMP_CFLAGS)
bench_bench_reduce_LDADD = kernels/libkernels.la $(LLMP_PLANNER_LIBS)
bench_bench_crc32c_CFLAGS = $(LLMP_CFLAGS)
bench_bench_crc32c_LDADD = kernels/libkernels.la
bench_bench_metrics_CFLAGS = $(LLMP_CFLAGS)
bench_bench_ckpt_commit_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CFLAGS) $(UCX_CFLAGS) $(HDF5_CFLAGS)
bench_bench_ckpt_commit_LDADD = runtime/libllmp_core.la
EXTRA_DIST += bench/bench_mpi_allreduce.c
bench: $(bench_programs)
	bench/bench_plan
	bench/bench_auto_layout
	bench/bench_validate
	bench/bench_reduce
	bench/bench_crc32c
	bench/bench_metrics
	bench/bench_goodput
if BUILD_RUNTIME
	bench/bench_ckpt_commit --no-shards
endif

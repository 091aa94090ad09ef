# SPDX-License-Identifier: BSD-3-Clause
# cli/local.mk - the tool llmp, and llmp-bench (cli/bench/), which `llmp bench` runs
# (included by Makefile.am; paths are from the top of the tree).

bin_PROGRAMS += cli/llmp
cli_llmp_SOURCES = cli/llmp.c cli/llmp_cli.h cli/args.c cli/cmd_plan.c cli/cmd_calibrate.c cli/plan_text.c cli/cmd_topo.c cli/topo_gdr.c cli/topo_gdr_json.c cli/gdr_nccl_log.c cli/ibv_probe.c cli/cuda_probe.c cli/topo_nccl_xml.c cli/topo_rails.c \
	cli/plan_place.c cli/plan_svg.c cli/plan_step.c \
	cli/cmd_top.c cli/cmd_report.c cli/report_fr.c cli/report_fr.h cli/cmd_serve.c \
	cli/serve_nic.c cli/serve_nic.h \
	cli/cmd_info.c cli/settings.c cli/settings.h runtime/comm/log_conf.c
ckpt_cli_sources = cli/cmd_ckpt.c cli/ckpt_cli.h cli/ckpt_list.c cli/ckpt_verify.c \
	cli/ckpt_inspect.c cli/ckpt_export.c
# llmp-bench, in cli/bench/: the commands that join a job as its ranks.
bench_cli_sources = cli/bench/bench_main.c cli/bench/join_job.c cli/bench/cmd_bench.c cli/bench/ckpt_bench.c \
	cli/bench/topo_job.c cli/bench/bench_files.c cli/bench/bench_files.h \
	cli/bench/bench_cuda.c cli/bench/bench_cuda.h cli/bench/bench_gdr.c cli/bench/bench_gdr.h \
	cli/topo_rails.c cli/topo_gdr.c cli/gdr_nccl_log.c cli/ibv_probe.c cli/cuda_probe.c
if BUILD_RUNTIME
# `llmp job-end` reads run records (runtime/job/job_record.c) and `llmp
# ckpt` reads checkpoints with the runtime's own code
# (runtime/ckpt/format/), both without a context: the tool links those two
# libraries, the planner, the kernels and HDF5, but neither PMIx nor UCX.
# `llmp bench` and `llmp ckpt bench` join a job: they are llmp-bench,
# linked with the whole runtime, which llmp runs (cli/bench_exec.c).
cli_llmp_SOURCES += cli/cmd_job_end.c cli/cmd_job_run.c cli/job_run_plan.c cli/job_run_plan.h cli/bench_exec.c \
	$(ckpt_cli_sources)
cli_llmp_CPPFLAGS = $(AM_CPPFLAGS) -DLLMP_PKGLIBEXECDIR='"$(pkglibexecdir)"'
cli_llmp_LDADD = topology/discover/libdiscover.la runtime/job/libjob_record.la runtime/job/libmetrics.la runtime/ckpt/format/libckpt_format.la \
	$(LLMP_PLANNER_LIBS) kernels/libkernels.la -lm

pkglibexec_PROGRAMS = cli/bench/llmp-bench
cli_bench_llmp_bench_SOURCES = $(bench_cli_sources) cli/args.c cli/llmp_cli.h cli/ckpt_cli.h
cli_bench_llmp_bench_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CFLAGS) $(UCX_CFLAGS)
cli_bench_llmp_bench_LDADD = runtime/libllmp_core.la -lm
else
# (set in both branches: automake leaves a per-target variable empty in the
# branch that does not set it, and the tool would lose AM_CPPFLAGS)
cli_llmp_CPPFLAGS = $(AM_CPPFLAGS)
cli_llmp_LDADD = topology/discover/libdiscover.la runtime/job/libmetrics.la $(LLMP_PLANNER_LIBS) -lm
endif
EXTRA_DIST += cli/cmd_job_end.c cli/cmd_job_run.c cli/job_run_plan.c cli/job_run_plan.h cli/bench_exec.c \
	$(ckpt_cli_sources) $(bench_cli_sources) cli/bench/README.md


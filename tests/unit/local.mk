# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/local.mk - the unit tests (cmocka, TAP), included by Makefile.am.
#
# One program per concept, each computing its expected values on its own;
# they need no cluster, no PMIx and no UCX (test_ckpt_format links the
# context-free checkpoint reader and HDF5, as the `llmp` tool does). The fuzz
# target's corpus is replayed as one of them (tests/fuzz/).
if HAVE_CMOCKA
unit_tests = tests/unit/test_spec tests/unit/test_ckpt_spec tests/unit/test_plan \
	tests/unit/test_plan_megatron tests/unit/test_json tests/unit/test_plugin_core tests/unit/test_plugin_paths \
	tests/unit/test_plugin_model tests/unit/test_plugin_gpu_check tests/unit/test_plugin_node_clean tests/unit/test_task_map \
	tests/unit/test_plugin_serve \
	tests/fuzz/fuzz_replay tests/fuzz/fuzz_replay_topo tests/fuzz/fuzz_replay_model tests/unit/test_kernels tests/unit/test_crc32c \
	tests/unit/test_json_writer tests/unit/test_run_bounded tests/unit/test_topo tests/unit/test_metrics \
	tests/unit/test_metrics_sample tests/unit/test_idle tests/unit/test_step_model tests/unit/test_mem_guard tests/unit/test_hetero \
	tests/unit/test_gdr tests/unit/test_nccl_topo tests/unit/test_nccl_log tests/unit/test_log_conf
if BUILD_RUNTIME
unit_tests += tests/unit/test_ckpt_format tests/unit/test_ckpt_node tests/unit/test_job_run tests/unit/test_job_driver \
	tests/unit/test_job_record
endif
# The goodput simulator of bench/bench_goodput (bench/goodput_sim.c).
unit_tests += tests/unit/test_goodput
# The CUDA kernels' element functions, compiled by the C compiler (always)
# and, with nvcc, by nvcc as CUDA host code; the link of the kernels'
# archive, and its check, only with nvcc.
unit_tests += tests/unit/test_cuda_elem
if HAVE_CUDA
unit_tests += tests/unit/test_cuda_elem_nvcc tests/unit/test_cuda_link
endif
check_PROGRAMS += $(unit_tests)
TESTS += $(unit_tests)
if HAVE_CUDA
TESTS += tests/unit/cuda_link_check.sh
endif
endif
EXTRA_DIST += tests/unit/cuda_link_check.sh tests/unit/bits.h

test_cflags = $(LLMP_CFLAGS) $(CMOCKA_CFLAGS)
test_ldadd = $(LLMP_PLANNER_LIBS) $(CMOCKA_LIBS)
tests_unit_test_spec_CFLAGS = $(test_cflags)
tests_unit_test_spec_LDADD = $(test_ldadd)
tests_unit_test_ckpt_spec_CFLAGS = $(test_cflags)
tests_unit_test_ckpt_spec_LDADD = $(test_ldadd)
tests_unit_test_plan_CFLAGS = $(test_cflags)
tests_unit_test_plan_LDADD = $(test_ldadd)
tests_unit_test_plan_megatron_CFLAGS = $(test_cflags)
tests_unit_test_plan_megatron_LDADD = $(test_ldadd)
# The step model and --parallel auto (planner/step_model.c, auto_layout.c, model_desc.c).
tests_unit_test_step_model_CFLAGS = $(test_cflags)
tests_unit_test_step_model_LDADD = $(test_ldadd)
tests_unit_test_mem_guard_CFLAGS = $(test_cflags)
tests_unit_test_mem_guard_LDADD = $(test_ldadd)
# Pipelines on mixed GPU kinds (planner/hetero.c).
tests_unit_test_hetero_CFLAGS = $(test_cflags)
tests_unit_test_hetero_LDADD = $(test_ldadd)
tests_unit_test_nccl_topo_CFLAGS = $(test_cflags)
tests_unit_test_nccl_topo_LDADD = $(test_ldadd)
tests_unit_test_nccl_log_CFLAGS = $(test_cflags)
tests_unit_test_nccl_log_LDADD = $(test_ldadd)
tests_unit_test_gdr_CFLAGS = $(test_cflags)
tests_unit_test_gdr_LDADD = topology/discover/libdiscover.la $(test_ldadd)
tests_unit_test_topo_CFLAGS = $(test_cflags)
tests_unit_test_topo_LDADD = $(test_ldadd)
tests_unit_test_json_CFLAGS = $(test_cflags)
tests_unit_test_json_LDADD = $(test_ldadd)
tests_unit_test_plugin_core_CFLAGS = $(test_cflags)
tests_unit_test_plugin_core_LDADD = plugin/libplugin_core.la topology/discover/libdiscover.la $(test_ldadd)
tests_unit_test_plugin_model_CFLAGS = $(test_cflags)
tests_unit_test_plugin_model_LDADD = plugin/libplugin_core.la $(test_ldadd)
tests_unit_test_plugin_gpu_check_CFLAGS = $(test_cflags)
tests_unit_test_plugin_gpu_check_LDADD = plugin/libplugin_core.la $(test_ldadd)
tests_unit_test_plugin_node_clean_CFLAGS = $(test_cflags)
tests_unit_test_plugin_node_clean_LDADD = plugin/libplugin_core.la $(test_ldadd)
tests_unit_test_plugin_serve_CFLAGS = $(test_cflags)
tests_unit_test_plugin_serve_LDADD = plugin/libplugin_core.la $(test_ldadd)
tests_unit_test_task_map_CFLAGS = $(test_cflags)
tests_unit_test_task_map_LDADD = plugin/libplugin_core.la $(test_ldadd)
# LLMP_DEBUG's levels and parts (runtime/comm/log_conf.c, which needs no context: compiled here alone).
tests_unit_test_log_conf_SOURCES = tests/unit/test_log_conf.c runtime/comm/log_conf.c
tests_unit_test_log_conf_CFLAGS = $(test_cflags)
tests_unit_test_log_conf_LDADD = $(CMOCKA_LIBS)
# `llmp job run`'s choice of nodes, on names alone (cli/job_run_plan.h).
tests_unit_test_job_run_SOURCES = tests/unit/test_job_run.c cli/job_run_plan.c
tests_unit_test_job_run_CFLAGS = $(test_cflags)
tests_unit_test_job_run_LDADD = $(test_ldadd)
tests_unit_test_job_driver_SOURCES = tests/unit/test_job_driver.c
tests_unit_test_job_driver_CFLAGS = $(test_cflags)
tests_unit_test_job_driver_LDADD = runtime/job/libjob_record.la runtime/ckpt/format/libckpt_format.la \
	$(LLMP_PLANNER_LIBS) kernels/libkernels.la $(CMOCKA_LIBS)
tests_unit_test_job_record_SOURCES = tests/unit/test_job_record.c
tests_unit_test_job_record_CFLAGS = $(test_cflags)
tests_unit_test_job_record_LDADD = runtime/job/libjob_record.la runtime/ckpt/format/libckpt_format.la \
	$(LLMP_PLANNER_LIBS) kernels/libkernels.la $(CMOCKA_LIBS)
tests_unit_test_plugin_paths_CFLAGS = $(test_cflags)
tests_unit_test_plugin_paths_LDADD = plugin/libplugin_core.la $(test_ldadd)
tests_fuzz_fuzz_replay_SOURCES = tests/fuzz/fuzz_replay.c tests/fuzz/fuzz_spec.c tests/fuzz/fuzz_check.h
tests_fuzz_fuzz_replay_CFLAGS = $(test_cflags) -DLLMP_FUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus"'
tests_fuzz_fuzz_replay_LDADD = $(test_ldadd)
tests_fuzz_fuzz_replay_topo_SOURCES = tests/fuzz/fuzz_replay.c tests/fuzz/fuzz_topo.c tests/fuzz/fuzz_check.h
tests_fuzz_fuzz_replay_topo_CFLAGS = $(test_cflags) -DLLMP_FUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus-topo"'
tests_fuzz_fuzz_replay_topo_LDADD = $(test_ldadd)
tests_fuzz_fuzz_replay_model_SOURCES = tests/fuzz/fuzz_replay.c tests/fuzz/fuzz_model.c tests/fuzz/fuzz_check.h
tests_fuzz_fuzz_replay_model_CFLAGS = $(test_cflags) -DLLMP_FUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus-model"'
tests_fuzz_fuzz_replay_model_LDADD = plugin/libplugin_core.la $(test_ldadd)
tests_unit_test_kernels_CFLAGS = $(test_cflags)
tests_unit_test_kernels_LDADD = kernels/libkernels.la $(test_ldadd)
tests_unit_test_crc32c_CFLAGS = $(test_cflags)
tests_unit_test_crc32c_LDADD = kernels/libkernels.la $(test_ldadd)
tests_unit_test_json_writer_SOURCES = tests/unit/test_json_writer.c
tests_unit_test_json_writer_CFLAGS = $(test_cflags)
tests_unit_test_json_writer_LDADD = common/libcommon.la $(CMOCKA_LIBS) -lm
tests_unit_test_run_bounded_SOURCES = tests/unit/test_run_bounded.c
tests_unit_test_run_bounded_CFLAGS = $(test_cflags)
tests_unit_test_run_bounded_LDADD = common/libcommon.la $(CMOCKA_LIBS)
# The metrics files and their reader, as libllmp writes them and `llmp top` reads them.
tests_unit_test_metrics_SOURCES = tests/unit/test_metrics.c
tests_unit_test_metrics_CFLAGS = $(test_cflags)
tests_unit_test_metrics_LDADD = runtime/job/libmetrics.la $(test_ldadd) -lm
# The time counted inside calls (runtime/comm/metrics.h: exact for large calls, sampled for small), on a hand-moved clock.
tests_unit_test_metrics_sample_CFLAGS = $(test_cflags)
tests_unit_test_metrics_sample_LDADD = $(CMOCKA_LIBS) -lm
# How a long wait lets its core go (runtime/comm/idle.h).
tests_unit_test_idle_CFLAGS = $(test_cflags)
tests_unit_test_idle_LDADD = $(CMOCKA_LIBS) -lm
if BUILD_RUNTIME
# The context-free reading of checkpoints (runtime/ckpt/format/), which
# libllmp does not export: linked as the `llmp` tool links it.
tests_unit_test_ckpt_format_CFLAGS = $(test_cflags)
tests_unit_test_ckpt_format_LDADD = runtime/ckpt/format/libckpt_format.la $(LLMP_PLANNER_LIBS) \
	kernels/libkernels.la $(CMOCKA_LIBS)
# files=node's layout and writes (runtime/ckpt/ckpt_node.c, ckpt_hdf5.c): the
# runtime linked as bench_ckpt_commit links it, no job started.
tests_unit_test_ckpt_node_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CFLAGS) $(UCX_CFLAGS) $(HDF5_CFLAGS)
tests_unit_test_ckpt_node_CFLAGS = $(test_cflags)
tests_unit_test_ckpt_node_LDADD = runtime/libllmp_core.la $(CMOCKA_LIBS)
endif
tests_unit_test_goodput_SOURCES = tests/unit/test_goodput.c bench/goodput_sim.c bench/goodput_sim.h
tests_unit_test_goodput_CFLAGS = $(test_cflags)
tests_unit_test_goodput_LDADD = $(CMOCKA_LIBS) -lm
tests_unit_test_cuda_elem_CFLAGS = $(test_cflags)
tests_unit_test_cuda_elem_LDADD = kernels/libkernels.la $(CMOCKA_LIBS) -lm
if HAVE_CUDA
# The same source as CUDA C++ host code (-x cu), where KERN_HD is
# __host__ __device__; linked by the C compiler with the CUDA runtime.
tests_unit_test_cuda_elem_nvcc_SOURCES =
tests_unit_test_cuda_elem_nvcc_LDADD = tests/unit/test_cuda_elem_nvcc.$(OBJEXT) kernels/libkernels.la \
	$(CMOCKA_LIBS) $(CUDART_LIBS) -lm
tests/unit/test_cuda_elem_nvcc.$(OBJEXT): tests/unit/test_cuda_elem.c tests/unit/bits.h $(kernels_cuda_headers)
	$(AM_V_NVCC)$(NVCC_COMPILE) $(CMOCKA_CFLAGS) $(NVCCFLAGS) -x cu -c -o $@ $(srcdir)/tests/unit/test_cuda_elem.c
tests_unit_test_cuda_link_CFLAGS = $(test_cflags)
tests_unit_test_cuda_link_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_unit_test_cuda_link_LDADD = kernels/cuda/libkernels_cuda.a kernels/libkernels.la $(CMOCKA_LIBS) $(CUDART_LIBS)
endif

# SPDX-License-Identifier: BSD-3-Clause
# plugin/local.mk - the SPANK plugin llm_parallel.so and its Slurm-free core
# (included by Makefile.am; paths are from the top of the tree).

# The parts of the plugin that need no Slurm (hostlists, GPU choice, site
# arguments, precedence, the task environment) form a library of their own,
# so the unit tests link them without a cluster.
plugin_core_sources = \
	plugin/slurm_env.c plugin/slurm_env.h \
	plugin/gpu_bind.c plugin/gpu_bind.h \
	plugin/site.c plugin/site.h \
	plugin/resolve.c plugin/resolve.h \
	plugin/resolve_ckpt.c plugin/resolve_ckpt.h \
	plugin/task_env.c plugin/task_env.h \
	plugin/task_map.c plugin/task_map.h \
	plugin/node_place.c plugin/node_place.h \
	plugin/nccl_env.c plugin/nccl_env.h \
	plugin/job_place.c plugin/job_place.h \
	plugin/bounded.c plugin/bounded.h \
	plugin/layout_file.c plugin/layout_file.h \
	plugin/model_layout.c plugin/model_layout.h \
	plugin/model_machines.c plugin/model_machines.h \
	plugin/gpu_check.c plugin/gpu_check.h \
	plugin/node_clean.c plugin/node_clean.h \
	plugin/srun_args.c plugin/srun_args.h \
	plugin/serve.c plugin/serve.h \
	plugin/serve_token.c plugin/serve_token.h
noinst_LTLIBRARIES += plugin/libplugin_core.la
plugin_libplugin_core_la_SOURCES = $(plugin_core_sources)

EXTRA_DIST += plugin/llm_parallel.map etc/plugstack.conf.d/llm_parallel.conf.in etc/plugstack.conf.d/README.md
if BUILD_PLUGIN
# llm_parallel.so runs inside srun, sbatch and slurmstepd: it links the
# planner statically and exports only the SPANK symbols.
pkglib_LTLIBRARIES = plugin/llm_parallel.la
plugin_llm_parallel_la_SOURCES = \
	plugin/llm_parallel.c plugin/plugin.h plugin/options.c plugin/log.c \
	plugin/submit.c plugin/step.c plugin/step_gdr.c plugin/job_script.c
plugin_llm_parallel_la_CPPFLAGS = $(AM_CPPFLAGS) -D_GNU_SOURCE $(SLURM_CPPFLAGS)
plugin_llm_parallel_la_LIBADD = plugin/libplugin_core.la topology/discover/libdiscover.la $(LLMP_PLANNER_LIBS)
plugin_llm_parallel_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/plugin/llm_parallel.map
EXTRA_plugin_llm_parallel_la_DEPENDENCIES = plugin/llm_parallel.map

# The plugstack.conf.d snippet names the installed plugin by its full path.
plugstackdir = $(sysconfdir)/slurm/plugstack.conf.d
plugstack_DATA = etc/plugstack.conf.d/llm_parallel.conf
etc/plugstack.conf.d/llm_parallel.conf: $(srcdir)/etc/plugstack.conf.d/llm_parallel.conf.in Makefile
	$(AM_V_GEN)$(MKDIR_P) etc/plugstack.conf.d && \
	sed 's|@pkglibdir[@]|$(pkglibdir)|g' $< > $@
CLEANFILES = etc/plugstack.conf.d/llm_parallel.conf

# The nodes' Epilog that removes layout files a killed slurmstepd left
# (etc/slurm/llmp-epilog.sh: slurm.conf Epilog=$(pkgdatadir)/llmp-epilog.sh);
# etc/slurm ships whole (EXTRA_DIST in Makefile.am).
epilogdir = $(pkgdatadir)
epilog_SCRIPTS = etc/slurm/llmp-epilog.sh

dist_man_MANS += doc/llm_parallel.8
endif


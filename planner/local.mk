# SPDX-License-Identifier: BSD-3-Clause
# planner/local.mk - the planner: layout specs, rank groups, placement on the
# machine model, network cost, the step model and the layout chooser
# (included by Makefile.am; paths are from the top of the tree).
planner_sources = \
	planner/items.c planner/items.h \
	planner/llmp_spec.c \
	planner/llmp_ckpt_spec.c \
	planner/llmp_plan.c planner/plan_internal.h \
	planner/llmp_groups.c \
	planner/llmp_json.c \
	planner/placement.h planner/placement.c \
	planner/cost.h planner/cost.c \
	planner/model_desc.h planner/model_desc.c \
	planner/step_model.h planner/step_model.c \
	planner/mem_guard.h planner/mem_guard.c \
	planner/auto_layout.h planner/auto_layout.c \
	planner/hetero.h planner/hetero.c \
	planner/machines.h planner/machines.c \
	planner/megatron_args.h planner/megatron_args.c
noinst_LTLIBRARIES += planner/libplanner.la
planner_libplanner_la_SOURCES = $(planner_sources)

# The installed library: the planner with the machine model and the base,
# exporting only the public API of the planner's headers (include/llmp/).
lib_LTLIBRARIES += planner/libllmp_topology.la
planner_libllmp_topology_la_SOURCES =
planner_libllmp_topology_la_LIBADD = $(LLMP_PLANNER_LIBS)
planner_libllmp_topology_la_LDFLAGS = -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/planner/libllmp_topology.map
EXTRA_planner_libllmp_topology_la_DEPENDENCIES = planner/libllmp_topology.map
EXTRA_DIST += planner/libllmp_topology.map planner/README.md

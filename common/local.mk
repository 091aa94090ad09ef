# SPDX-License-Identifier: BSD-3-Clause
# common/local.mk - what every part of llmp uses: status codes and messages,
# the bounded JSON reader and the one JSON writer, Slurm hostlists, the
# directory-ownership rule, opening a user's file without waiting on it,
# a Slurm command run under a deadline, the interface and address toward
# a host and whether a port is held
# (included by Makefile.am; paths are from the top of the tree).
#
# Compiled once, position-independent, into a convenience library that the
# tool, the plugin, the runtime and the installed libllmp_topology link in
# ($(LLMP_PLANNER_LIBS)).
common_sources = \
	common/llmp_status.c common/fail.h \
	common/json_read.c common/json_read.h \
	common/hostlist.c common/hostlist.h \
	common/own_dir.c common/own_dir.h \
	common/open_regular.c common/open_regular.h \
	common/run_bounded.c common/run_bounded.h \
	common/netif.c common/netif.h \
	common/json_writer.c common/json_writer.h
noinst_LTLIBRARIES += common/libcommon.la
common_libcommon_la_SOURCES = $(common_sources)
EXTRA_DIST += common/README.md

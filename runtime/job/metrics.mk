# SPDX-License-Identifier: BSD-3-Clause
# runtime/job/metrics.mk - the metrics files (doc/metrics-json.md): their
# writer (metrics_file.c, which libllmp's job layer calls) and their reader
# (metrics_read.c, which `llmp top` and `llmp report` call), one library
# that needs no context. Included by Makefile.am whether or not the runtime
# is built: the tool reads a job's files on a login node without it.
noinst_LTLIBRARIES += runtime/job/libmetrics.la
runtime_job_libmetrics_la_SOURCES = runtime/job/metrics_file.h runtime/job/metrics_file.c \
	runtime/job/metrics_read.h runtime/job/metrics_read.c

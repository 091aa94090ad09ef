# SPDX-License-Identifier: BSD-3-Clause
# runtime/job/local.mk - the job layer: stop, requeue, resume (included by
# runtime/local.mk).
#
# The run record (job_record.c) and the driver's heartbeat (job_driver.c)
# need no context and are a convenience library of their own, so `llmp
# job-end` and `llmp job run` use them without PMIx or UCX; it needs
# runtime/ckpt/format/libckpt_format.la after it.
noinst_LTLIBRARIES += runtime/job/libjob_record.la
runtime_job_libjob_record_la_SOURCES = runtime/job/job_record.h runtime/job/job_record.c \
	runtime/job/job_driver.h runtime/job/job_driver.c

# The metrics files' writer and reader are libmetrics (runtime/job/metrics.mk).
runtime_sources += \
	runtime/job/job_internal.h runtime/job/job.c runtime/job/job_signal.c \
	runtime/job/job_metrics.c runtime/job/job_gpu_mem.c runtime/job/job_orphan.c

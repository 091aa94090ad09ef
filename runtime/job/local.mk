# runtime/job/local.mk - the job layer: stop, requeue, resume (included by
# runtime/local.mk).
runtime_sources += \
	runtime/job/job_internal.h runtime/job/job.c runtime/job/job_signal.c \
	runtime/job/job_record.c runtime/job/job_log.c

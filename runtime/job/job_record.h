/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_record.h - ROOT/llmp-run, the record of the newest run of a job
 * (job_record.c). Needs no context: the runtime writes it, and `llmp
 * job-end` reads it (llmp_run_record_read, in llmp_job.h) without joining
 * the job, so the tool links neither PMIx nor UCX.
 */
#ifndef LLMP_JOB_RECORD_H
#define LLMP_JOB_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_job.h>

/*
 * Write rec as ROOT/llmp-run, atomically (rank names the temporary file),
 * with suspect (a host name, or NULL or "": none) the host the failure was
 * blamed on.
 */
llmp_status job_record_write(const char *root, const llmp_run_record *rec, const char *suspect, uint32_t rank,
			     char *msg, size_t msglen);

#endif /* LLMP_JOB_RECORD_H */

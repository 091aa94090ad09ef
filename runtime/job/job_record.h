/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_record.h - ROOT/llmp-run, the record of the newest run of a job
 * (job_record.c). Needs no context: the runtime writes it, and `llmp
 * job-end` reads it (llmp_run_record_read, in llmp_job.h) without joining
 * the job, so the tool links neither PMIx nor UCX.
 */
#ifndef LLMP_JOB_RECORD_H
#define LLMP_JOB_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_job.h>

/* What a version 2 record says beyond llmp_run_record; "" for a line it lacks. */
struct job_record_run {
	char slurm_step[24]; /* SLURM_STEP_ID of the run */
	char suspect[64];    /* the host a failure was blamed on */
};

/* Write rec as ROOT/llmp-run, atomically (rank names the temporary file); run may be NULL. */
llmp_status job_record_write(const char *root, const llmp_run_record *rec, const struct job_record_run *run,
			     uint32_t rank, char *msg, size_t msglen);

/* A host name as Slurm writes one: letters, digits, '.', '_' and '-', 1 to 63 of them. */
bool job_record_host_ok(const char *host);

/*
 * The host a failed run's record is to blame after this rank writes it:
 * the one it holds for this same failed run (same_failed_run; recorded ""
 * is none), else this rank's own (mine, "" for none). The first blame of a
 * run stands. A rank writes its blame before it exits, so a later rank
 * that blames that rank's host saw only the fallout; one that blames none
 * is the blamed rank itself, or one told by a report.
 */
const char *job_record_blame(const char *mine, bool same_failed_run, const char *recorded);

/* Read ROOT/llmp-run into rec and run (llmp_run_record_read, with the version 2 lines). */
llmp_status job_record_read(const char *root, llmp_run_record *rec, struct job_record_run *run, char *msg,
			    size_t msglen);

#endif /* LLMP_JOB_RECORD_H */

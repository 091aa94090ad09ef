/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_internal.h - what the files of the job layer share (job*.c).
 */
#ifndef LLMP_JOB_INTERNAL_H
#define LLMP_JOB_INTERNAL_H

#include <stdbool.h>
#include <time.h>

#include <llmp/llmp_ckpt_spec.h>
#include <llmp/llmp_job.h>
#include "job_record.h"
#include "runtime/comm/rt.h"

struct llmp_job {
	llmp_ctx *ctx;
	llmp_comm *world;
	llmp_ckpt *ckpt;
	llmp_ckpt_spec spec;
	char errmsg[LLMP_MSG_MAX];
	bool signals_installed;

	/* This run, as its record says (job_record.c). */
	llmp_run_record run;
	char slurm_step[24]; /* SLURM_STEP_ID: this run among the allocation's; "" outside a step */
	char restart_reason[LLMP_MSG_MAX];
	bool over_limit;       /* open found the crash-loop limit exceeded */
	uint64_t resumed_step; /* LLMP_NO_STEP until resume loaded one */

	/* Saves */
	uint64_t pending_step; /* an async save not yet committed; LLMP_NO_STEP: none */
	uint64_t last_saved;   /* newest step saved by this run; LLMP_NO_STEP: none */
	double last_save_time; /* rt_now() of it, or of open: for every=Nmin */
	size_t rank_bytes;     /* bytes of the slices this rank registered */

	/* Stop */
	bool signal_logged;
	bool stopped; /* a stop was agreed and its checkpoint committed */

	/* The step deadline (LLMP_STEP_DEADLINE): 0 when off. */
	double deadline_factor;
	double last_step_end; /* rt_now() at the last step_end; 0 before the first */
	double slowest_step;  /* the longest time from one step_end to the next in this run */
	uint64_t steps_timed;
	double timeout_given; /* the runtime's timeout before the deadline: its ceiling */

	struct job_metrics *metrics; /* job_metrics.c; NULL without LLMP_METRICS */
	double stalled;              /* seconds the last step_end spent checkpointing */
};

/* job_signal.c: the stop-request flag, set by signal handlers. */
llmp_status job_signals_install(llmp_job *job, const int *signals);
void job_signals_restore(void);
/* The first stop signal received (0: none) and when, on the wall clock. */
int job_signal_received(struct timespec *when);

/* job_record.h: ROOT/llmp-run, the record of the newest run. */

/*
 * job_orphan.c: after this rank recorded a failure blamed on suspect (a
 * host, or ""/NULL): when that host is the driver's (`llmp job run`) and
 * its heartbeat has stopped, requeue the job (cancel it when give_up),
 * once for all ranks. Returns at once when another driver's host failed.
 */
void job_orphan(llmp_job *job, const char *suspect, bool give_up);

/* The story of a run, one line per rank and event on stderr: rt_log (comm/log.h) with RT_LOG_JOB. */

/*
 * job_metrics.c: LLMP_METRICS (doc/metrics-json.md). start reads the
 * setting and opens the file (a bad setting fails llmp_job_open);
 * training_starts after resume; step at each step's end (when it ended,
 * and how long checkpointing held it); stop writes the last line.
 */
llmp_status job_metrics_start(llmp_job *job);
void job_metrics_training_starts(llmp_job *job);
void job_metrics_step(llmp_job *job, uint64_t step, double step_end_at, double stall_s);
void job_metrics_stop(llmp_job *job);
/* llmp_job_note_memory: the largest peak given, for the next lines' "peak_gib". */
void job_metrics_note_memory(llmp_job *job, uint64_t peak_bytes);
/* job_gpu_mem.c: this process's GPU memory as NVML lists it now (0 when it lists none);
 * false with why when NVML cannot be read (no driver). */
bool job_gpu_mem_self(uint64_t *bytes, char *why, size_t len);

#endif /* LLMP_JOB_INTERNAL_H */

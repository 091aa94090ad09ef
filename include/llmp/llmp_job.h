/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_job.h - a training run that survives preemption, time limits, node
 * loss and hangs by checkpointing, exiting and being requeued.
 *
 * A training loop built on it:
 *
 *     llmp_job_open(ctx, NULL, &job);            // --llm-checkpoint / LLMP_CHECKPOINT
 *     llmp_ckpt_register(llmp_job_ckpt(job), ...) for every tensor of the state;
 *     llmp_job_resume(job, &step, &meta, sizeof meta, &len);   // newest checkpoint
 *     for (; step < steps; step++) {
 *             ... one training step ...
 *             st = llmp_job_step_end(job, step, &meta, sizeof meta, &action);
 *             if (st != LLMP_OK || action == LLMP_JOB_STOP)
 *                     break;
 *     }
 *     return llmp_job_finish(job, st);           // 0, LLMP_EXIT_REQUEUE or ..._NO_REQUEUE
 *
 * Stopping: SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 (Slurm's preemption and
 * time-limit signals, whichever --signal chose) only set a flag. At every
 * step boundary the ranks agree, with one small allreduce over the world,
 * whether any rank was asked to stop and whether a periodic checkpoint is
 * due; so a rank that was not signalled stops with the others, never alone.
 * On a stop the job finishes any asynchronous save, writes a checkpoint of
 * the step just completed, and llmp_job_finish() asks to be requeued.
 *
 * Runs: the checkpoint root holds a small record of the current run
 * (doc/fault-tolerance.md): which restart it is, how it ended, and how many
 * runs in a row failed without committing a checkpoint. The next run reads
 * it to say why it restarted, and to stop a crash loop: after `restarts=N`
 * such failures llmp_job_finish() (or llmp_job_open(), for a run that died
 * without a word) returns LLMP_EXIT_NO_REQUEUE. `llmp job-end` reads the
 * record at the end of the batch script and requeues the job, or not.
 *
 * Events (signal, stop agreed, checkpoint started and committed, restart,
 * failure, exit) are logged on stderr, one line per rank and event:
 *     llmp: 2026-11-21T13:42:10.123 rank 3: stop agreed at step 42 (SIGUSR1 on rank 3)
 * (with LLMP_DEBUG set, "... rank 3 job info: stop agreed ..."; doc/llmp.3).
 *
 * Threads: like the context (llmp.h): one thread at a time per job. The
 * signal handlers are process-wide: one job per process.
 */
#ifndef LLMP_JOB_H
#define LLMP_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmp.h"
#include "llmp_ckpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes of llmp_job_finish(), for the batch script and RequeueExit=. */
#define LLMP_EXIT_DONE 0
#define LLMP_EXIT_REQUEUE 75    /* EX_TEMPFAIL: resume from the newest checkpoint */
#define LLMP_EXIT_NO_REQUEUE 76 /* failed for good (or gave up): do not requeue */

typedef struct llmp_job llmp_job;

typedef struct llmp_job_opts {
	/* --llm-checkpoint grammar (llmp_ckpt_spec.h). NULL: LLMP_CHECKPOINT. */
	const char *checkpoint;
	/* Signals that ask for a stop, 0-terminated. NULL: TERM, INT, USR1, USR2. */
	const int *stop_signals;
	/* HDF5 alignment and staging bound of the checkpoints; NULL: defaults. */
	const llmp_ckpt_opts *ckpt;
} llmp_job_opts;

/*
 * Collective over the world. Reads the checkpoint spec, opens the checkpoint
 * root, installs the stop-signal handlers, reads the record of the previous
 * run and writes this run's. LLMP_ERR_ARG without a checkpoint root;
 * LLMP_ERR_STATE when the crash-loop limit was already exceeded by runs that
 * died without a record (llmp_job_finish() then returns
 * LLMP_EXIT_NO_REQUEUE). On failure *job is still set when it could be
 * allocated, for llmp_job_errmsg() and llmp_job_finish().
 */
llmp_status llmp_job_open(llmp_ctx *ctx, const llmp_job_opts *opts, llmp_job **job);

/* The job's checkpoint handle: register the training state with it. */
llmp_ckpt *llmp_job_ckpt(llmp_job *job);

/*
 * Collective. Fill the registered tensors and meta from the newest complete
 * checkpoint and set *next_step to the step after it; with no checkpoint
 * yet, leave them and set *next_step to 0. The layout may differ from the
 * one that saved (another world size, dp=auto re-planned): slices are
 * resharded.
 */
llmp_status llmp_job_resume(llmp_job *job, uint64_t *next_step, void *meta, size_t metacap, size_t *metalen);

typedef enum llmp_job_action {
	LLMP_JOB_CONTINUE = 0,
	LLMP_JOB_STOP = 1, /* a stop was agreed and its checkpoint committed */
} llmp_job_action;

/*
 * Collective over the world, once per step, after step `step` is complete
 * (the registered tensors and meta hold the state after it). Agrees on stop
 * requests and periodic checkpoints; saves asynchronously when one is due;
 * on a stop, saves synchronously and sets LLMP_JOB_STOP.
 */
llmp_status llmp_job_step_end(llmp_job *job, uint64_t step, const void *meta, size_t metalen,
			      llmp_job_action *action);

/*
 * The most GPU memory this rank has held so far, in bytes, as its allocator
 * counts it (PyTorch's torch.cuda.max_memory_reserved(): llmp.job.Job
 * passes it at every step_end when CUDA is in use). The metrics file
 * (LLMP_METRICS, doc/metrics-json.md) carries the largest value given as
 * "peak_gib", which `llmp calibrate` fits the memory model to. 0 says
 * nothing. LLMP_ERR_ARG for a NULL job only.
 */
llmp_status llmp_job_note_memory(llmp_job *job, uint64_t peak_bytes);

/*
 * End the run, close the job and return the process's exit code:
 * LLMP_EXIT_DONE when status is LLMP_OK and no stop was agreed;
 * LLMP_EXIT_REQUEUE after a stop, or after a failure (a dead or hung peer,
 * an I/O error) while the crash-loop limit allows; LLMP_EXIT_NO_REQUEUE
 * otherwise. Records the outcome in the checkpoint root and logs it. After a
 * clean end or a stop the ranks leave together, so no rank is killed while
 * another still commits. job may be NULL (open failed): then status decides.
 */
int llmp_job_finish(llmp_job *job, llmp_status status);

/* Like llmp_job_finish() for a failure the program knows is permanent. */
int llmp_job_give_up(llmp_job *job, const char *why);

/* Why the last call on the job failed, naming the culprit. */
const char *llmp_job_errmsg(const llmp_job *job);

/* ------------------------------------------------------------ the record */

typedef enum llmp_run_outcome {
	LLMP_RUN_RUNNING = 0, /* not ended, or died without a word */
	LLMP_RUN_DONE,        /* finished */
	LLMP_RUN_STOPPED,     /* stopped on request, checkpoint committed */
	LLMP_RUN_FAILED,      /* a failure; requeue allowed */
	LLMP_RUN_GAVE_UP,     /* failed for good, or crash-loop limit reached */
} llmp_run_outcome;

#define LLMP_NO_STEP UINT64_MAX

typedef struct llmp_run_record {
	char job_id[32];  /* SLURM_JOB_ID, "" outside Slurm */
	uint64_t restart; /* SLURM_RESTART_COUNT of the run */
	llmp_run_outcome outcome;
	uint32_t failures;      /* failed runs in a row without a new checkpoint */
	uint64_t ckpt_at_start; /* newest committed step when the run began */
	uint64_t step;          /* last step completed (LLMP_NO_STEP: none) */
	char reason[LLMP_MSG_MAX];
} llmp_run_record;

const char *llmp_run_outcome_name(llmp_run_outcome outcome);

/*
 * Read the record of the newest run under a checkpoint root; no context
 * needed (`llmp job-end` uses it). LLMP_ERR_IO when there is none or it
 * cannot be read, with msg saying which.
 */
llmp_status llmp_run_record_read(const char *root, llmp_run_record *rec, char *msg, size_t msglen);

/*
 * An optional line of the same record, by key, into value ("" when the
 * record has none):
 *   "suspect"     the host a failed run's ranks blamed: the node of the
 *                 rank that died or stopped answering, as that rank named
 *                 it (Slurm's node name); `llmp job run` takes it out of
 *                 the next run first
 *   "slurm-step"  the Slurm step the run was (SLURM_STEP_ID): tells apart
 *                 runs of one allocation under one restart count
 * LLMP_ERR_ARG for another key; otherwise as llmp_run_record_read.
 */
llmp_status llmp_run_record_get(const char *root, const char *key, char *value, size_t len, char *msg,
				size_t msglen);

/* After llmp_job_open(): this run's restart count and why it (re)started. */
typedef struct llmp_job_info {
	uint64_t restart;           /* 0 for the first run */
	uint32_t failures;          /* failed runs in a row before this one */
	const char *restart_reason; /* "first run", "preempted: SIGTERM on rank 3 at step 42", ... */
	uint64_t resumed_step;      /* after llmp_job_resume(); LLMP_NO_STEP: none */
} llmp_job_info;
llmp_status llmp_job_get_info(const llmp_job *job, llmp_job_info *info);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_JOB_H */

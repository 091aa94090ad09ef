/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job.c - a run of a long training job: resume, stop on request, and end
 * with an exit code that says whether to requeue (llmp_job.h).
 *
 * Every decision that changes what ranks do next is taken together: the
 * stop and the periodic checkpoint by one allreduce per step, the start of
 * a run by rank 0 reading the record and broadcasting what it found. Only
 * the end of a failed run is local, since the communicators can no longer
 * be trusted; each survivor then records the failure itself.
 */
#include "job_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ckpt/ckpt_internal.h"
#include <llmp/llmp_env.h>

/* ------------------------------------------------------------------ open */

/* The checkpoint spec from opts, else from LLMP_CHECKPOINT, checked. */
static llmp_status read_spec(llmp_job *job, const char *text)
{
	const char *source = text ? "llmp_job_opts.checkpoint" : LLMP_ENV_CHECKPOINT;
	char why[LLMP_MSG_MAX];

	if (!text)
		text = getenv(LLMP_ENV_CHECKPOINT);
	if (!text || !*text)
		return rt_fail(job->ctx, LLMP_ERR_ARG,
			       "llmp_job_open: no checkpoint directory: submit with "
			       "--llm-checkpoint=DIR, or set LLMP_CHECKPOINT");
	if (llmp_ckpt_spec_parse_partial(text, &job->spec, why, sizeof why) != LLMP_OK ||
	    llmp_ckpt_spec_check(&job->spec, why, sizeof why) != LLMP_OK)
		return rt_fail(job->ctx, LLMP_ERR_SPEC, "%s: %s", source, why);
	return LLMP_OK;
}

/* LLMP_RESTART_COUNT (the plugin's), else Slurm's SLURM_RESTART_COUNT, else 0. */
static llmp_status read_restart_count(llmp_job *job, uint64_t *count)
{
	const char *name = LLMP_ENV_RESTART_COUNT, *text = getenv(name);
	if (!text) {
		name = "SLURM_RESTART_COUNT";
		text = getenv(name);
	}
	*count = 0;
	if (!text)
		return LLMP_OK;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || end == text || *end || *text == '-')
		return rt_fail(job->ctx, LLMP_ERR_ARG, "%s='%s' is not a restart count", name, text);
	*count = v;
	return LLMP_OK;
}

/* The newest complete checkpoint under the root; LLMP_NO_STEP for none. */
static llmp_status newest_step(llmp_job *job, uint64_t *step)
{
	uint64_t *steps;
	size_t n;
	llmp_status st = ck_list_steps(job->ctx, job->spec.dir, &steps, &n);
	*step = st == LLMP_OK && n ? steps[0] : LLMP_NO_STEP;
	free(steps);
	return st;
}

/* Did a run that started with newest checkpoint `before` commit a newer one? */
static bool made_progress(uint64_t before, uint64_t now)
{
	return now != LLMP_NO_STEP && (before == LLMP_NO_STEP || now > before);
}

/*
 * Rank 0: from the previous run's record, why this run started and how
 * many runs in a row failed before it (failures).
 */
static void judge_previous_run(llmp_job *job, const llmp_run_record *prev, bool have_prev, uint64_t newest)
{
	llmp_run_record *run = &job->run;
	char *why = job->restart_reason;
	size_t len = sizeof job->restart_reason;
	bool failed = true;

	if (!have_prev) {
		failed = run->restart > 0;
		if (failed)
			snprintf(why, len, "the %" PRIu64 " run%s before this one left no record in %.300s",
				 run->restart, run->restart == 1 ? "" : "s", job->spec.dir);
		else
			snprintf(why, len, "first run");
	} else if (prev->job_id[0] && run->job_id[0] && strcmp(prev->job_id, run->job_id) != 0) {
		failed = false;
		snprintf(why, len, "new job; the checkpoints are from job %s", prev->job_id);
	} else {
		switch (prev->outcome) {
		case LLMP_RUN_DONE:
			failed = false;
			snprintf(why, len, "the previous run had finished");
			break;
		case LLMP_RUN_STOPPED:
			failed = false;
			snprintf(why, len, "stopped: %.400s", prev->reason);
			break;
		case LLMP_RUN_FAILED:
		case LLMP_RUN_GAVE_UP: snprintf(why, len, "failed: %.400s", prev->reason); break;
		case LLMP_RUN_RUNNING:
			snprintf(why, len,
				 "the previous run (restart %" PRIu64 ") ended without a word: "
				 "node failure, kill or crash",
				 prev->restart);
			break;
		}
	}
	if (!failed)
		run->failures = 0;
	else if (!have_prev) /* every earlier run of the job, none of which opened it */
		run->failures = run->restart < UINT32_MAX ? (uint32_t)run->restart : UINT32_MAX;
	else if (made_progress(prev->ckpt_at_start, newest))
		run->failures = 1;
	else
		run->failures = prev->failures + 1;
	/*
	 * Runs of this job since the recorded one that never opened it (a batch
	 * script that exits 75 by itself where RequeueExit=75, a crash before
	 * llmp_job_open) committed nothing through it: each is a failed run
	 * without a new checkpoint, or a job could requeue itself past the limit.
	 */
	uint64_t missed = have_prev && job->run.job_id[0] && strcmp(prev->job_id, run->job_id) == 0 &&
					  run->restart > prev->restart + 1
				  ? run->restart - prev->restart - 1
				  : 0;
	if (missed) {
		run->failures += (uint32_t)(missed < UINT32_MAX - run->failures ? missed
										: UINT32_MAX - run->failures);
		size_t used = strlen(why);
		snprintf(why + used, len - used,
			 "; %" PRIu64 " run%s after restart %" PRIu64 " left no record (requeued without "
			 "reaching llmp_job_open: exit 75 from the script?)",
			 missed, missed == 1 ? "" : "s", prev->restart);
	}
	job->over_limit = run->failures > job->spec.max_restarts;
}

/* What rank 0 tells the others about the run that starts. */
struct run_start {
	uint32_t failures;
	uint8_t over_limit;
	uint64_t ckpt_at_start;
	char reason[LLMP_MSG_MAX];
};

static llmp_status start_run_on_rank0(llmp_job *job)
{
	llmp_run_record prev;
	char msg[LLMP_MSG_MAX];
	llmp_status st = ck_mkdirs(job->ctx, job->spec.dir);
	if (st == LLMP_OK)
		st = newest_step(job, &job->run.ckpt_at_start);
	if (st != LLMP_OK)
		return st;
	bool have_prev = llmp_run_record_read(job->spec.dir, &prev, msg, sizeof msg) == LLMP_OK;
	judge_previous_run(job, &prev, have_prev, job->run.ckpt_at_start);

	job->run.outcome = LLMP_RUN_RUNNING;
	if (job->over_limit) {
		job->run.outcome = LLMP_RUN_GAVE_UP;
		snprintf(job->run.reason, sizeof job->run.reason,
			 "%u failed runs in a row without a new checkpoint (restarts=%u)", job->run.failures,
			 job->spec.max_restarts);
	}
	struct job_record_run run = { 0 };
	snprintf(run.slurm_step, sizeof run.slurm_step, "%s", job->slurm_step);
	if (job_record_write(job->spec.dir, &job->run, &run, 0, msg, sizeof msg) != LLMP_OK)
		return rt_fail(job->ctx, LLMP_ERR_IO, "%s", msg);
	return LLMP_OK;
}

/* Collective: rank 0 reads the record and writes this run's; all learn the verdict. */
static llmp_status start_run(llmp_job *job)
{
	struct run_start start;
	llmp_status st = LLMP_OK;

	if (job->ctx->rank == 0)
		st = start_run_on_rank0(job);
	if ((st = rt_agree(job->ctx, "llmp_job_open", st)) != LLMP_OK)
		return st;
	memset(&start, 0, sizeof start);
	start.failures = job->run.failures;
	start.over_limit = job->over_limit;
	start.ckpt_at_start = job->run.ckpt_at_start;
	snprintf(start.reason, sizeof start.reason, "%s", job->restart_reason);
	st = llmp_broadcast(job->world, &start, &start, sizeof start, LLMP_UINT8, 0);
	if (st != LLMP_OK)
		return st;
	job->run.failures = start.failures;
	job->over_limit = start.over_limit;
	job->run.ckpt_at_start = start.ckpt_at_start;
	snprintf(job->restart_reason, sizeof job->restart_reason, "%.*s", (int)sizeof start.reason - 1,
		 start.reason);
	if (job->over_limit) {
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN,
		       "giving up: %u failed runs in a row without a new checkpoint "
		       "(restarts=%u); the last: %s",
		       job->run.failures, job->spec.max_restarts, job->restart_reason);
		return rt_fail(job->ctx, LLMP_ERR_STATE,
			       "llmp_job_open: crash loop: %u failed runs in a row without a new "
			       "checkpoint (restarts=%u); the last: %s",
			       job->run.failures, job->spec.max_restarts, job->restart_reason);
	}
	return LLMP_OK;
}

/*
 * LLMP_STEP_DEADLINE=F: once DEADLINE_STEPS steps are timed, every wait of
 * the runtime gives up after F times the slowest step seen (checkpoint
 * pauses included), at least DEADLINE_MIN_S, at most the timeout given
 * (LLMP_TIMEOUT, 300 s by default): a node that stops answering costs a few
 * steps, not the whole timeout. Off when unset.
 */
#define DEADLINE_STEPS 5
#define DEADLINE_MIN_S 5.0

static llmp_status read_deadline(llmp_job *job)
{
	const char *text = getenv(LLMP_ENV_STEP_DEADLINE);
	char *end;
	if (!text || !*text)
		return LLMP_OK;
	double f = strtod(text, &end);
	if (*end || !(f >= 2 && f <= 1000))
		return rt_fail(job->ctx, LLMP_ERR_ARG,
			       LLMP_ENV_STEP_DEADLINE
			       "='%.32s': expected a factor from 2 to 1000 (the deadline is "
			       "that many times the slowest step)",
			       text);
	job->deadline_factor = f;
	job->timeout_given = job->ctx->timeout_s;
	return LLMP_OK;
}

/* After each step_end: time the step, and set the deadline once enough steps are timed. */
static void step_deadline(llmp_job *job, double ended)
{
	if (!job->deadline_factor)
		return;
	if (job->last_step_end > 0) {
		double took = ended - job->last_step_end;
		if (took > job->slowest_step)
			job->slowest_step = took;
		job->steps_timed++;
	}
	job->last_step_end = ended;
	if (job->steps_timed < DEADLINE_STEPS)
		return;
	double t = job->deadline_factor * job->slowest_step;
	t = t < DEADLINE_MIN_S ? DEADLINE_MIN_S : t > job->timeout_given ? job->timeout_given : t;
	if (t > job->ctx->timeout_s + 0.5 || job->steps_timed == DEADLINE_STEPS) {
		if (t != job->ctx->timeout_s)
			rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO,
			       "step deadline %.1f s: %g x the slowest of %" PRIu64 " steps (%.3f s)", t,
			       job->deadline_factor, job->steps_timed, job->slowest_step);
		job->ctx->timeout_s = t;
	}
}

static llmp_status open_parts(llmp_job *job, const llmp_job_opts *opts)
{
	llmp_ckpt_opts ck = { 0 };
	llmp_status st;

	if ((st = read_spec(job, opts ? opts->checkpoint : NULL)) != LLMP_OK ||
	    (st = read_restart_count(job, &job->run.restart)) != LLMP_OK ||
	    (st = read_deadline(job)) != LLMP_OK)
		return st;
	const char *id = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
	snprintf(job->run.job_id, sizeof job->run.job_id, "%s", id ? id : "");
	snprintf(job->slurm_step, sizeof job->slurm_step, "%s", step ? step : "");
	if (opts && opts->ckpt)
		ck = *opts->ckpt;
	ck.root = job->spec.dir;
	ck.keep = job->spec.keep;
	ck.files = job->spec.node_files ? LLMP_CKPT_FILES_NODE : LLMP_CKPT_FILES_RANK;
	if (job->spec.given & LLMP_CKPT_GIVEN_STRIPE) { /* else the caller's opts->ckpt, if any */
		ck.stripe_count = job->spec.stripe_count;
		ck.stripe_size = job->spec.stripe_size;
		ck.stripe_pool = job->spec.stripe_pool;
	}
	if ((st = llmp_ckpt_open(job->ctx, &ck, &job->ckpt)) != LLMP_OK)
		return st;
	if ((st = job_signals_install(job, opts ? opts->stop_signals : NULL)) != LLMP_OK)
		return st;
	job->signals_installed = true;
	return job_metrics_start(job);
}

llmp_status llmp_job_open(llmp_ctx *ctx, const llmp_job_opts *opts, llmp_job **out)
{
	if (!out)
		return LLMP_ERR_ARG;
	*out = NULL;
	if (!ctx)
		return LLMP_ERR_ARG;
	llmp_job *job = calloc(1, sizeof *job);
	if (!job)
		return rt_fail(ctx, LLMP_ERR_NOMEM, "llmp_job_open");
	job->ctx = ctx;
	job->run.ckpt_at_start = job->run.step = LLMP_NO_STEP;
	job->resumed_step = job->pending_step = job->last_saved = LLMP_NO_STEP;
	job->last_save_time = rt_now();
	llmp_ckpt_spec_init(&job->spec);
	*out = job;

	llmp_status st = llmp_comm_world(ctx, &job->world);
	if (st == LLMP_OK)
		st = open_parts(job, opts);
	/* Every rank learns of a bad spec or signal on any rank, not just its own. */
	st = rt_agree(ctx, "llmp_job_open", st);
	if (st != LLMP_OK)
		return st;
	if (rt_log_on(ctx, RT_LOG_JOB, RT_LOG_DEBUG)) {
		char spec[LLMP_CKPT_SPEC_MAX_LEN + 1];
		if (llmp_ckpt_spec_format(&job->spec, spec, sizeof spec) < 0)
			snprintf(spec, sizeof spec, "dir=%s", job->spec.dir);
		rt_log(ctx, RT_LOG_JOB, RT_LOG_DEBUG, "llmp_job_open: checkpoint %s; Slurm step %s", spec,
		       job->slurm_step[0] ? job->slurm_step : "(none)");
	}
	return start_run(job);
}

llmp_ckpt *llmp_job_ckpt(llmp_job *job)
{
	return job ? job->ckpt : NULL;
}

/* ---------------------------------------------------------------- resume */

/*
 * Periodic checkpoints are saved asynchronously: their staging memory is
 * allocated now, before training, so that the first one pauses the
 * training no longer than the later ones (llmp_ckpt_prepare_async).
 */
static llmp_status prepare_periodic_saves(llmp_job *job)
{
	llmp_status st = job->spec.every ? llmp_ckpt_prepare_async(job->ckpt) : LLMP_OK;
	job_metrics_training_starts(job);
	return st;
}

llmp_status llmp_job_resume(llmp_job *job, uint64_t *next_step, void *meta, size_t metacap, size_t *metalen)
{
	if (!job || !next_step || (metacap && !meta))
		return job ? rt_fail(job->ctx, LLMP_ERR_ARG, "llmp_job_resume: NULL argument") : LLMP_ERR_ARG;
	*next_step = 0;
	if (metalen)
		*metalen = 0;
	if (job->over_limit)
		return rt_fail(job->ctx, LLMP_ERR_STATE, "llmp_job_resume: the run gave up at open");
	if (job->run.ckpt_at_start == LLMP_NO_STEP) {
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO,
		       "run %" PRIu64 " (%s): no checkpoint yet, starting at step 0", job->run.restart,
		       job->restart_reason);
		return prepare_periodic_saves(job);
	}
	double started = rt_now();
	uint64_t loaded;
	size_t len = 0;
	llmp_status st = llmp_ckpt_load(job->ckpt, LLMP_CKPT_NEWEST, &loaded, meta, metacap, &len);
	if (st != LLMP_OK)
		return st;
	if (metalen)
		*metalen = len;
	job->resumed_step = loaded;
	*next_step = loaded + 1;
	rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO,
	       "run %" PRIu64 " (%s): resuming at step %" PRIu64 " from checkpoint step-%" PRIu64
	       ", loaded in %.3f s",
	       job->run.restart, job->restart_reason, *next_step, loaded, rt_now() - started);
	return prepare_periodic_saves(job);
}

/* ----------------------------------------------------------------- steps */

/* "12.5 MiB": the bytes this rank registered, for the log. */
static const char *rank_size(const llmp_job *job, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	uint64_t bytes = 0;
	for (size_t i = 0; i < job->ckpt->ntensors; i++)
		bytes += ck_bytes(&job->ckpt->tensors[i].slice);
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}

/* Commit the pending async save, if any (collective). */
static llmp_status commit_pending(llmp_job *job)
{
	if (job->pending_step == LLMP_NO_STEP)
		return LLMP_OK;
	uint64_t step = job->pending_step;
	job->pending_step = LLMP_NO_STEP;
	llmp_status st = llmp_ckpt_wait(job->ckpt);
	if (st != LLMP_OK)
		return st;
	llmp_ckpt_stats stats = { .size = sizeof stats };
	char size[32];
	llmp_ckpt_get_stats(job->ckpt, &stats);
	rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO,
	       "checkpoint step %" PRIu64 " committed: %s on this rank, %.3f s (%.3f s stalled)", step,
	       rank_size(job, size, sizeof size), stats.total_seconds, stats.stall_seconds);
	return LLMP_OK;
}

static llmp_status save(llmp_job *job, uint64_t step, const void *meta, size_t metalen, bool async)
{
	llmp_status st = commit_pending(job);
	if (st != LLMP_OK)
		return st;
	rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO, "checkpoint step %" PRIu64 " started%s", step,
	       async ? " (async)" : "");
	double started = rt_now();
	job->last_saved = step;
	job->last_save_time = started;
	if (async) {
		st = llmp_ckpt_save_async(job->ckpt, step, meta, metalen);
		if (st == LLMP_OK)
			job->pending_step = step;
		return st;
	}
	char size[32];
	if ((st = llmp_ckpt_save(job->ckpt, step, meta, metalen)) == LLMP_OK)
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO,
		       "checkpoint step %" PRIu64 " committed: %s on this rank, %.3f s", step,
		       rank_size(job, size, sizeof size), rt_now() - started);
	return st;
}

static const char *signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);
	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

/* The agreed stop: the checkpoint of this step, then LLMP_JOB_STOP. */
static llmp_status stop(llmp_job *job, uint64_t step, const void *meta, size_t metalen, int64_t request,
			llmp_job_action *action)
{
	char name[32];
	signal_name((int)(request >> 32), name, sizeof name);
	uint32_t by = (uint32_t)(request & 0xffffffff) - 1;
	rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO, "stop agreed at step %" PRIu64 " (%s on rank %u)", step,
	       name, by);
	snprintf(job->run.reason, sizeof job->run.reason, "%s on rank %u at step %" PRIu64, name, by, step);
	llmp_status st = job->pending_step == step ? commit_pending(job)
						   : save(job, step, meta, metalen, false);
	if (st != LLMP_OK)
		return st;
	job->stopped = true;
	*action = LLMP_JOB_STOP;
	return LLMP_OK;
}

/* Whether a periodic checkpoint is due after this step (rank 0's clock for minutes). */
static bool checkpoint_due(const llmp_job *job, uint64_t step)
{
	const llmp_ckpt_spec *s = &job->spec;
	if (!s->every)
		return false;
	if (!s->every_minutes)
		return (step + 1) % s->every == 0;
	return job->ctx->rank == 0 && rt_now() - job->last_save_time >= s->every * 60.0;
}

static llmp_status step_end_agree(llmp_job *job, uint64_t step, const void *meta, size_t metalen,
				  llmp_job_action *action);

llmp_status llmp_job_step_end(llmp_job *job, uint64_t step, const void *meta, size_t metalen,
			      llmp_job_action *action)
{
	if (!job || !action || (metalen && !meta))
		return job ? rt_fail(job->ctx, LLMP_ERR_ARG, "llmp_job_step_end: NULL argument")
			   : LLMP_ERR_ARG;
	*action = LLMP_JOB_CONTINUE;
	if (job->over_limit || job->stopped)
		return rt_fail(job->ctx, LLMP_ERR_STATE, "llmp_job_step_end: the run %s",
			       job->stopped ? "was stopped" : "gave up at open");

	double ended = rt_now(); /* the step's end, for the metrics */
	step_deadline(job, ended);
	llmp_status st = step_end_agree(job, step, meta, metalen, action);
	job_metrics_step(job, step, ended, job->stalled);
	return st;
}

/* llmp_job_step_end once it is checked; job->stalled: how long checkpointing held the step. */
static llmp_status step_end_agree(llmp_job *job, uint64_t step, const void *meta, size_t metalen,
				  llmp_job_action *action)
{
	struct timespec when;
	char name[32], at[64];
	job->stalled = 0;
	int sig = job_signal_received(&when);
	if (sig && !job->signal_logged) {
		rt_log_time(&when, at, sizeof at);
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO, "signal %s received at %s",
		       signal_name(sig, name, sizeof name), at);
		job->signal_logged = true;
	}
	/* One agreement per step: who was asked to stop, whether a save is due, whether
	 * a pending save would still wait for this rank's writer. */
	int64_t vote[3] = {
		sig ? (int64_t)sig << 32 | (int64_t)(job->ctx->rank + 1) : 0,
		checkpoint_due(job, step),
		!ck_pending_written(job->ckpt),
	};
	llmp_status st = llmp_allreduce(job->world, vote, vote, 3, LLMP_INT64, LLMP_MAX);
	if (st != LLMP_OK)
		return st;
	job->run.step = step;
	double held = rt_now();
	if (vote[0])
		st = stop(job, step, meta, metalen, vote[0], action);
	else if (vote[1])
		st = save(job, step, meta, metalen, true);
	else if (!vote[2] && job->pending_step != LLMP_NO_STEP)
		st = commit_pending(job); /* every shard is written: committing costs no wait */
	else
		return LLMP_OK;
	job->stalled = rt_now() - held;
	return st;
}

/* ------------------------------------------------------------------- end */

static void close_job(llmp_job *job)
{
	job_metrics_stop(job);
	if (job->signals_installed)
		job_signals_restore();
	llmp_ckpt_close(job->ckpt); /* nothing pending by now: no collective */
	free(job);
}

/*
 * Is the record now there a later run's of this job and restart (a later
 * Slurm step: `llmp job run` relaunched while a rank of this run was still
 * ending)? Then it is not this rank's to overwrite.
 */
static bool later_run_owns_record(const llmp_job *job)
{
	llmp_run_record current;
	struct job_record_run run;
	char msg[LLMP_MSG_MAX];
	if (!job->slurm_step[0] ||
	    job_record_read(job->spec.dir, &current, &run, msg, sizeof msg) != LLMP_OK ||
	    !run.slurm_step[0] || current.restart != job->run.restart ||
	    strcmp(current.job_id, job->run.job_id) != 0)
		return false;
	return strtoull(run.slurm_step, NULL, 10) > strtoull(job->slurm_step, NULL, 10);
}

/* suspect: the host a failure was blamed on, or NULL. */
static void record(llmp_job *job, llmp_run_outcome outcome, const char *suspect)
{
	char msg[LLMP_MSG_MAX];
	struct job_record_run run = { 0 };
	job->run.outcome = outcome;
	if (later_run_owns_record(job)) {
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN,
		       "the run record is a later run's (a relaunch in this allocation): left as it is");
		return;
	}
	snprintf(run.slurm_step, sizeof run.slurm_step, "%s", job->slurm_step);
	snprintf(run.suspect, sizeof run.suspect, "%s", suspect ? suspect : "");
	if (job_record_write(job->spec.dir, &job->run, &run, job->ctx->rank, msg, sizeof msg) != LLMP_OK)
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN, "%s", msg);
}

/* Errors no restart can cure: the program or its input is wrong. */
static bool permanent(llmp_status status)
{
	switch (status) {
	case LLMP_ERR_SPEC:
	case LLMP_ERR_LAYOUT:
	case LLMP_ERR_RANGE:
	case LLMP_ERR_ARG:
	case LLMP_ERR_MISMATCH:
	case LLMP_ERR_UNSUPPORTED: return true;
	default: return false;
	}
}

/* A failed run: local only, the communicators are not to be trusted. */
static int end_failed(llmp_job *job, llmp_status status)
{
	llmp_run_record current;
	char msg[LLMP_MSG_MAX], after[48] = "";
	uint64_t newest;

	/* Taken first: the calls below may overwrite the context's message. */
	if (job->run.step != LLMP_NO_STEP)
		snprintf(after, sizeof after, " after step %" PRIu64, job->run.step);
	snprintf(job->run.reason, sizeof job->run.reason, "%s%s", llmp_errmsg(job->ctx), after);
	rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN, "failure%s: %s", after, llmp_errmsg(job->ctx));

	ck_abandon(job->ckpt);
	if (newest_step(job, &newest) != LLMP_OK)
		newest = LLMP_NO_STEP;
	uint32_t failures = (made_progress(job->run.ckpt_at_start, newest) ? 0 : job->run.failures) + 1;
	bool give_up = permanent(status) || failures > job->spec.max_restarts;

	/*
	 * A rank that gave up for good is not overruled by one that saw only the
	 * fallout; nor is the host another rank of this run blamed first
	 * forgotten or replaced (job_record_blame).
	 */
	char suspect[64];
	struct job_record_run current_run = { 0 };
	bool same_run = job_record_read(job->spec.dir, &current, &current_run, msg, sizeof msg) == LLMP_OK &&
			current.restart == job->run.restart && strcmp(current.job_id, job->run.job_id) == 0 &&
			strcmp(current_run.slurm_step, job->slurm_step) == 0;
	snprintf(suspect, sizeof suspect, "%s",
		 job_record_blame(job->ctx->failed_host, same_run && current.outcome == LLMP_RUN_FAILED,
				  current_run.suspect));
	if (same_run && current.outcome == LLMP_RUN_GAVE_UP)
		give_up = true;
	else
		record(job, give_up ? LLMP_RUN_GAVE_UP : LLMP_RUN_FAILED, give_up ? NULL : suspect);
	job_orphan(job, suspect, give_up);
	if (give_up) {
		if (permanent(status))
			rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN,
			       "exit: not requeueing, restarting cannot cure this (code %d)",
			       LLMP_EXIT_NO_REQUEUE);
		else
			rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN,
			       "exit: giving up after %u failed runs in a row without a new "
			       "checkpoint (restarts=%u) (code %d)",
			       failures, job->spec.max_restarts, LLMP_EXIT_NO_REQUEUE);
		return LLMP_EXIT_NO_REQUEUE;
	}
	rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO,
	       "exit: requeue; %u failed run%s in a row without a new checkpoint, "
	       "restarts=%u allowed (code %d)",
	       failures, failures == 1 ? "" : "s", job->spec.max_restarts, LLMP_EXIT_REQUEUE);
	return LLMP_EXIT_REQUEUE;
}

/* A run that finished or stopped: record it, then leave together. */
static int end_cleanly(llmp_job *job)
{
	llmp_status st = commit_pending(job);
	if (st != LLMP_OK)
		return end_failed(job, st);
	/* Record before the barrier: once one rank exits, srun may kill the rest. */
	if (job->ctx->rank == 0)
		record(job, job->stopped ? LLMP_RUN_STOPPED : LLMP_RUN_DONE, NULL);
	if ((st = llmp_barrier(job->world)) != LLMP_OK)
		return end_failed(job, st);
	if (job->stopped) {
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO, "exit: stopped (%s), requeue (code %d)",
		       job->run.reason, LLMP_EXIT_REQUEUE);
		return LLMP_EXIT_REQUEUE;
	}
	rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO, "exit: done (code %d)", LLMP_EXIT_DONE);
	return LLMP_EXIT_DONE;
}

int llmp_job_finish(llmp_job *job, llmp_status status)
{
	if (!job)
		return status == LLMP_OK ? LLMP_EXIT_DONE : LLMP_EXIT_NO_REQUEUE;
	int code;
	if (job->over_limit)
		code = LLMP_EXIT_NO_REQUEUE; /* open recorded it */
	else if (!job->world || !job->ckpt)
		code = LLMP_EXIT_NO_REQUEUE; /* open failed before anything was recorded */
	else if (status == LLMP_OK)
		code = end_cleanly(job);
	else
		code = end_failed(job, status);
	close_job(job);
	return code;
}

int llmp_job_give_up(llmp_job *job, const char *why)
{
	if (!job)
		return LLMP_EXIT_NO_REQUEUE;
	if (job->world && job->ckpt && !job->over_limit) {
		ck_abandon(job->ckpt);
		snprintf(job->run.reason, sizeof job->run.reason, "%s", why ? why : "the program gave up");
		record(job, LLMP_RUN_GAVE_UP, NULL);
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN, "exit: the program gave up: %s (code %d)",
		       job->run.reason, LLMP_EXIT_NO_REQUEUE);
	}
	close_job(job);
	return LLMP_EXIT_NO_REQUEUE;
}

/* ------------------------------------------------------------- queries */

llmp_status llmp_job_note_memory(llmp_job *job, uint64_t peak_bytes)
{
	if (!job)
		return LLMP_ERR_ARG;
	job_metrics_note_memory(job, peak_bytes);
	return LLMP_OK;
}

const char *llmp_job_errmsg(const llmp_job *job)
{
	return job ? llmp_errmsg(job->ctx) : "no job";
}

llmp_status llmp_job_get_info(const llmp_job *job, llmp_job_info *info)
{
	if (!job || !info)
		return LLMP_ERR_ARG;
	info->restart = job->run.restart;
	info->failures = job->run.failures;
	info->restart_reason = job->restart_reason;
	info->resumed_step = job->resumed_step;
	return LLMP_OK;
}

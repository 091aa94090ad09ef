/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_job_end.c - `llmp job-end [RC]`: the last line of a batch script.
 *
 * The ranks of a run decide together whether the job should come back (it
 * was asked to stop, or a peer failed and the crash-loop limit allows), and
 * write that into the run record under the checkpoint root. srun's exit
 * code cannot carry it: srun reports the largest code of any task, and a
 * task killed by a signal (the hung rank, the one that crashed) outranks
 * the survivors' verdict. So the batch script ends with
 *
 *     srun --kill-on-bad-exit=1 ./train; exec llmp job-end $?
 *
 * which reads the record of this run and exits 0 (done), 76 (do not
 * requeue) or 75 after asking Slurm to requeue the job: by exiting 75 where
 * slurm.conf has RequeueExit=75 (etc/slurm/llmp-requeue.conf), else with
 * `scontrol requeue`. A run that left no record (the program never reached
 * llmp_job_open) passes RC through untouched.
 *
 * `llmp job-end --finished`, the first line of the script, answers whether
 * an earlier run of this same job already finished the training: Slurm
 * 24.05 and later can requeue a job once more after it completed, when it
 * was preempted with a GraceTime (the requeue flag set at the grace signal
 * outlives the run that completed). Such a run should end at once; the
 * line said here is its one report.
 *
 * Before a requeue, the run's job steps must be gone: a slurmstepd that
 * never ends keeps its step listed, and the next run's `srun --mpi=pmix`
 * then fails on the node (it cannot bind the PMIx server's socket, which
 * the stuck step still holds). Slurm 24.11.6-7 and 25.05.0-3 deadlock
 * slurmstepd this way when PMIx gets an event during step termination, as
 * after a rank's abort under --kill-on-bad-exit (fixed in 25.05.4, Slurm's
 * CHANGELOG/slurm-25.05.md, and in 25.11; no 24.11 release has the fix).
 * job-end waits up to LLMP_STEP_WAIT seconds (default 30) for the steps
 * to leave, and if one stays it names it and its nodes and does not
 * requeue: a requeued run would only fail to launch there.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llmp/llmp_ckpt_spec.h>
#include "common/run_bounded.h"
#include "llmp_cli.h"
#include <llmp/llmp_env.h>
#include <llmp/llmp_job.h>

#define PROG "llmp job-end"
#define SCONTROL_TIMEOUT_S 30.0 /* slurmctld answers a requeue in well under a second */

enum requeue_how { REQUEUE_AUTO, REQUEUE_EXIT, REQUEUE_SCONTROL, REQUEUE_NONE };

struct job_end {
	const char *dir;
	enum requeue_how how;
	int rc; /* the step's exit code, passed through when there is no record */
	const char *job_id;
	uint64_t restart;
	bool finished_check; /* --finished */
};

static void usage(FILE *out)
{
	fputs("usage: llmp job-end [--checkpoint DIR] [--requeue auto|exit|scontrol|none] [RC]\n"
	      "       llmp job-end [--checkpoint DIR] --finished\n"
	      "Ends a batch script: reads the run record in the checkpoint root\n"
	      "(--checkpoint, else $LLMP_CHECKPOINT_DIR, else $LLMP_CHECKPOINT) and exits\n"
	      "0 when the run finished, 76 when it must not be requeued, and 75 after\n"
	      "asking Slurm to requeue the job when it stopped or failed:\n"
	      "  exit      exit 75 only (slurm.conf has RequeueExit=75)\n"
	      "  scontrol  run `scontrol requeue $SLURM_JOB_ID`, then exit 75\n"
	      "  auto      exit if slurm.conf's RequeueExit includes 75, else scontrol (default)\n"
	      "  none      exit 75 and requeue nothing\nThe default comes from $LLMP_REQUEUE when set.\n"
	      "RC (default 1) is returned when the run left no record of itself.\n"
	      "--finished, at the start of a batch script: exits 0, saying so in one line,\n"
	      "when an earlier run of this job finished (Slurm requeued a completed job),\n"
	      "else 1 and says nothing.\n",
	      out);
}

const char *cli_job_root(const char *prog, const char *given, llmp_ckpt_spec *spec)
{
	char why[LLMP_MSG_MAX];
	const char *text;

	if (given)
		return given;
	if ((text = getenv(LLMP_ENV_CHECKPOINT_DIR)) && *text)
		return text;
	if ((text = getenv(LLMP_ENV_CHECKPOINT)) && *text) {
		if (llmp_ckpt_spec_parse_partial(text, spec, why, sizeof why) != LLMP_OK ||
		    llmp_ckpt_spec_check(spec, why, sizeof why) != LLMP_OK) {
			fprintf(stderr, "%s: LLMP_CHECKPOINT: %s\n", prog, why);
			return NULL;
		}
		return spec->dir;
	}
	fprintf(stderr, "%s: no checkpoint root: give --checkpoint DIR, or submit with --llm-checkpoint\n",
		prog);
	return NULL;
}

/* Is code within a RequeueExit= list such as "75,80-90"? */
static bool in_exit_list(const char *list, int code)
{
	while (*list) {
		char *end;
		long lo = strtol(list, &end, 10), hi = lo;
		if (end == list)
			return false;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (code >= lo && code <= hi)
			return true;
		list = end + strspn(end, ", ");
	}
	return false;
}

/* Whether the controller's RequeueExit requeues an exit with LLMP_EXIT_REQUEUE. */
static bool site_requeues_on_exit(void)
{
	char line[1024];
	bool found = false;
	FILE *p = popen("scontrol show config 2>/dev/null", "r");
	if (!p)
		return false;
	while (fgets(line, sizeof line, p)) {
		const char *eq = strchr(line, '=');
		if (strncmp(line, "RequeueExit ", 12) != 0 || !eq)
			continue;
		found = in_exit_list(eq + 1 + strspn(eq + 1, " "), LLMP_EXIT_REQUEUE);
	}
	pclose(p);
	return found;
}

/*
 * A job step of this job other than the batch, extern and interactive ones,
 * "ID NODES" in out; false when none is listed or squeue cannot say.
 */
static bool listed_step(const char *job_id, char *out, size_t outlen)
{
	char cmd[128], line[512];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof cmd, "squeue -h -s -j '%s' -o '%%i %%N' 2>/dev/null", job_id);
	if (!(p = popen(cmd, "r")))
		return false;
	while (fgets(line, sizeof line, p)) {
		const char *dot = strchr(line, '.');
		line[strcspn(line, "\n")] = '\0';
		/* JOB.0, JOB.1, ...; not JOB.batch, JOB.extern, JOB.interactive */
		if (found || !dot || dot[1] < '0' || dot[1] > '9')
			continue;
		snprintf(out, outlen, "%s", line);
		found = true;
	}
	pclose(p);
	return found;
}

/* Waits for the run's steps to leave the queue; false (said) if one stays. */
static bool steps_gone(const struct job_end *e)
{
	char step[512];
	uint64_t wait_s = 30;
	const char *text = getenv(LLMP_ENV_STEP_WAIT);

	if (text && *text && cli_parse_count(PROG, LLMP_ENV_STEP_WAIT, text, 0, 3600, &wait_s) < 0)
		wait_s = 30;
	for (uint64_t half = 0;; half++) {
		if (!listed_step(e->job_id, step, sizeof step))
			return true;
		if (half >= wait_s * 2)
			break;
		usleep(500000);
	}
	char *nodes = strchr(step, ' ');
	if (nodes)
		*nodes++ = '\0';
	fprintf(stderr,
		PROG
		": step %s is still on %s %" PRIu64 " s after its srun returned: its slurmstepd did not end "
		"(Slurm 24.11.6-24.11.7 and 25.05.0-25.05.3 can deadlock there in PMIx finalize; fixed in "
		"25.05.4 and 25.11); not requeueing, since a new run could not start its step there: ask "
		"an administrator to end it\n",
		step, nodes && *nodes ? nodes : "its nodes", wait_s);
	return false;
}

static int requeue(const struct job_end *e)
{
	enum requeue_how how = e->how;
	if (!e->job_id[0]) {
		fputs(PROG ": not in a Slurm job: nothing to requeue\n", stderr);
		return LLMP_EXIT_REQUEUE;
	}
	if (!steps_gone(e))
		return LLMP_EXIT_NO_REQUEUE;
	if (how == REQUEUE_AUTO)
		how = site_requeues_on_exit() ? REQUEUE_EXIT : REQUEUE_SCONTROL;
	if (how != REQUEUE_SCONTROL)
		return LLMP_EXIT_REQUEUE;
	char *argv[] = { "scontrol", "requeue", (char *)e->job_id, NULL }, why[300];
	const struct llmp_run_how run = { .search_path = 1, .timeout_s = SCONTROL_TIMEOUT_S };
	fflush(NULL);
	if (llmp_run_bounded(argv, &run, why, sizeof why) < 0)
		fprintf(stderr, PROG ": `scontrol requeue %s`: %s; the job will not come back by itself\n",
			e->job_id, why);
	return LLMP_EXIT_REQUEUE;
}

/* Is the record about this run of this job? */
static bool is_this_run(const struct job_end *e, const llmp_run_record *rec)
{
	if (e->job_id[0] && rec->job_id[0] && strcmp(e->job_id, rec->job_id) != 0)
		return false;
	return rec->restart == e->restart;
}

static int decide(const struct job_end *e)
{
	llmp_run_record rec;
	char msg[LLMP_MSG_MAX];

	if (llmp_run_record_read(e->dir, &rec, msg, sizeof msg) != LLMP_OK || !is_this_run(e, &rec)) {
		fprintf(stderr,
			PROG ": no record of run %" PRIu64 " of job %s in %s (the program "
			     "did not reach llmp_job_open); exit code %d passed on\n",
			e->restart, e->job_id[0] ? e->job_id : "-", e->dir, e->rc);
		return e->rc;
	}
	const char *reason = rec.reason[0] ? rec.reason : "-";
	switch (rec.outcome) {
	case LLMP_RUN_DONE:
		fprintf(stderr, PROG ": run %" PRIu64 " finished\n", rec.restart);
		return LLMP_EXIT_DONE;
	case LLMP_RUN_GAVE_UP:
		fprintf(stderr, PROG ": run %" PRIu64 " gave up (%s): not requeueing\n", rec.restart, reason);
		return LLMP_EXIT_NO_REQUEUE;
	case LLMP_RUN_STOPPED:
	case LLMP_RUN_FAILED:
	case LLMP_RUN_RUNNING: break;
	}
	fprintf(stderr, PROG ": run %" PRIu64 " %s (%s): requeueing\n", rec.restart,
		rec.outcome == LLMP_RUN_RUNNING ? "ended without a word" : llmp_run_outcome_name(rec.outcome),
		rec.outcome == LLMP_RUN_RUNNING ? "a rank died or was killed" : reason);
	return requeue(e);
}

/*
 * --finished: 0 when the record says an earlier run of this job finished
 * (same SLURM_JOB_ID, a lower SLURM_RESTART_COUNT, outcome done), after
 * one line on stderr; else 1, silently: the run goes ahead.
 */
static int check_finished(const struct job_end *e)
{
	llmp_run_record rec;
	char msg[LLMP_MSG_MAX];

	if (!e->job_id[0] || llmp_run_record_read(e->dir, &rec, msg, sizeof msg) != LLMP_OK ||
	    strcmp(rec.job_id, e->job_id) != 0 || rec.restart >= e->restart || rec.outcome != LLMP_RUN_DONE)
		return 1;
	char step[32] = "-";
	if (rec.step != LLMP_NO_STEP)
		snprintf(step, sizeof step, "%" PRIu64, rec.step);
	fprintf(stderr,
		PROG ": job %s finished in run %" PRIu64 " at step %s; Slurm started it again "
		     "(run %" PRIu64 ", requeued after it completed): ending this run at once\n",
		e->job_id, rec.restart, step, e->restart);
	return 0;
}

static int parse_how(const char *text, enum requeue_how *how)
{
	static const char *const names[] = { "auto", "exit", "scontrol", "none" };
	for (int i = 0; i < 4; i++)
		if (strcmp(text, names[i]) == 0) {
			*how = (enum requeue_how)i;
			return 0;
		}
	fprintf(stderr, PROG ": --requeue '%s': expected auto, exit, scontrol or none\n",
		cli_printable(text));
	return -1;
}

int cli_job_end(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "checkpoint", required_argument, NULL, 'c' },
		{ "requeue", required_argument, NULL, 'r' },
		{ "finished", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct job_end e = { .how = REQUEUE_AUTO, .rc = 1 };
	const char *given = NULL;
	llmp_ckpt_spec spec;
	uint64_t n;
	int c;

	const char *how = getenv(LLMP_ENV_REQUEUE);
	if (how && *how && parse_how(how, &e.how) < 0)
		return CLI_EXIT_USAGE;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+c:r:fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': given = optarg; break;
		case 'f': e.finished_check = true; break;
		case 'r':
			if (parse_how(optarg, &e.how) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'h': usage(stdout); return CLI_EXIT_OK;
		default:
			fprintf(stderr, PROG ": bad option %s\n", cli_culprit(argv));
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (e.finished_check && optind < argc) {
		fprintf(stderr, PROG ": --finished takes no exit code, got '%s'\n",
			cli_printable(argv[optind]));
		return CLI_EXIT_USAGE;
	}
	if (argc - optind > 1) {
		fprintf(stderr, PROG ": one exit code at most, got '%s' too\n",
			cli_printable(argv[optind + 1]));
		return CLI_EXIT_USAGE;
	}
	if (optind < argc) {
		if (cli_parse_count(PROG, "RC", argv[optind], 0, 255, &n) < 0)
			return CLI_EXIT_USAGE;
		e.rc = (int)n;
	}
	llmp_ckpt_spec_init(&spec);
	if (!(e.dir = cli_job_root(PROG, given, &spec)))
		return CLI_EXIT_USAGE;
	const char *id = getenv("SLURM_JOB_ID");
	e.job_id = id ? id : "";
	const char *count = getenv("SLURM_RESTART_COUNT");
	if (count && cli_parse_count(PROG, "SLURM_RESTART_COUNT", count, 0, UINT32_MAX, &n) < 0)
		return CLI_EXIT_USAGE;
	e.restart = count ? n : 0;
	return e.finished_check ? check_finished(&e) : decide(&e);
}

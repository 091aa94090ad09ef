/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_job_run.c - `llmp job run [options] -- PROG ARGS`: the end of a batch
 * script that recovers from a lost node inside the allocation.
 *
 * In place of `srun ./train; exec llmp job-end $?` it launches the program
 * with srun on the job's healthy nodes minus the spares, and when a run
 * fails (the run record under the checkpoint root says failed, or a rank
 * died without a word) it does not give the allocation back: it reads
 * Slurm's current view of the job, takes out every node Slurm shows down or
 * draining, the node the ranks blamed (the run record's suspect: a rank
 * there died or stopped answering), and every node that fails a check under
 * a deadline (a step of one task on each node, srun --overlap), and
 * launches again, a spare in
 * the lost node's place, resuming from the newest checkpoint. A node taken
 * out is never used again by this job. The job must be submitted with
 * --no-kill, or Slurm ends it when it finds the node down.
 *
 * Everything else ends as `llmp job-end` decides (cmd_job_end.c): a run
 * that finished, one that was stopped (preemption, the time limit: never
 * restarted in place), one whose ranks gave up (restarts=), a run that left
 * no record of itself, a batch host that failed its check, or a run that
 * cannot be made on the nodes left (fewer nodes refused by a fixed layout):
 * the job then ends or is requeued as today. Every relaunch counts against
 * restarts= through the ranks' own rule (a run without a new checkpoint is
 * a failure in a row), and the driver stops after that many in any case.
 *
 * Slurm is asked by running scontrol, sinfo and srun with fork and exec,
 * never through a shell: the job id and node names are not quoted anywhere.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <llmp/llmp_ckpt_spec.h>
#include <llmp/llmp_env.h>
#include <llmp/llmp_job.h>
#include "common/hostlist.h"
#include "job_run_plan.h"
#include "llmp_cli.h"
#include "runtime/job/job_driver.h"

#define PROG "llmp job run"
#define NODES_MAX 65536
#define OUTPUT_MAX (1 << 20) /* of scontrol or sinfo */

struct job_run {
	unsigned spares;
	uint64_t tasks_per_node; /* 0: from Slurm's environment */
	double check_timeout;    /* seconds */
	const char *check;       /* the check each node runs; "true" */
	const char *mpi;         /* srun --mpi=; NULL: Slurm's default */
	const char *root;        /* checkpoint root */
	const char *requeue;     /* --requeue for llmp job-end; NULL: its default */
	char **prog;             /* PROG ARGS, NULL-terminated */
	const char *job_id;
	char batch_host[256];
	char **excluded; /* names out for good */
	size_t nexcluded;
};

static void usage(FILE *out)
{
	fputs("usage: llmp job run [--spares N] [--tasks-per-node N] [--check-timeout S] [--check PROG]\n"
	      "                    [--mpi TYPE] [--checkpoint DIR] [--requeue HOW] -- PROG [ARGS...]\n"
	      "The last line of a batch script submitted with --no-kill: runs PROG with srun on\n"
	      "the job's healthy nodes but N spares (the batch host always among them); when a\n"
	      "run fails, takes out the nodes Slurm shows down or draining and those that fail\n"
	      "PROG of --check (default: true) within the deadline (default 5 s), and runs again\n"
	      "in the same allocation, a spare in the lost node's place, from the newest\n"
	      "checkpoint. What cannot be recovered here ends as `llmp job-end` decides (done,\n"
	      "gave up, or requeued). --mpi (default pmix; none: Slurm's MpiDefault) and the\n"
	      "tasks per node (default: SLURM_NTASKS_PER_NODE) go to srun. --checkpoint and\n"
	      "--requeue are llmp job-end's. While it runs it writes a heartbeat, llmp-driver\n"
	      "under the checkpoint root: when the batch host itself is lost, the ranks find\n"
	      "it stopped and requeue the job (Slurm keeps a --no-kill job running without it).\n",
	      out);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One line of the driver's log, stamped like the ranks' (local time, ms): one timeline. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	va_list ap;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, PROG ": %s.%03ld: ", stamp, ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

/* ---------------------------------------------------------------- children */

/* Start argv with env (NULL: ours), stdout into *out_fd when not NULL. -1 on failure. */
static pid_t start(char *const *argv, char *const *env, int *out_fd)
{
	int fds[2] = { -1, -1 };
	if (out_fd && pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		if (out_fd)
			dup2(fds[1], STDOUT_FILENO);
		execvpe(argv[0], argv, env ? env : environ);
		fprintf(stderr, PROG ": cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (out_fd) {
		close(fds[1]);
		if (pid < 0)
			close(fds[0]);
		else
			*out_fd = fds[0];
	}
	return pid;
}

/* A child's exit code; 128 + N for signal N. */
static int reap(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Run argv and keep its output (NUL-terminated, at most OUTPUT_MAX); its exit code, -1 when it did not run. */
static int capture(char *const *argv, char **text)
{
	int fd;
	size_t used = 0, cap = 4096;
	*text = malloc(cap);
	pid_t pid = *text ? start(argv, NULL, &fd) : -1;
	if (pid < 0) {
		free(*text);
		*text = NULL;
		return -1;
	}
	for (;;) {
		if (used + 1 == cap && cap < OUTPUT_MAX) {
			char *more = realloc(*text, cap * 2);
			if (!more)
				break;
			*text = more;
			cap *= 2;
		}
		ssize_t got = used + 1 < cap ? read(fd, *text + used, cap - 1 - used) : 0;
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		used += (size_t)got;
	}
	(*text)[used] = '\0';
	close(fd);
	return reap(pid);
}

/* ---------------------------------------------------------------- Slurm's view */

/* names[idx[0..n)] as one Slurm host list (malloc'd), NULL when out of memory. */
static char *host_list(char *const *names, const size_t *idx, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	const char **picked = malloc((n ? n : 1) * sizeof *picked);
	FILE *f = picked ? open_memstream(&text, &len) : NULL;
	if (!f) {
		free(picked);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		picked[i] = names[idx[i]];
	int rc = hostlist_write(f, picked, n);
	free(picked);
	if (fclose(f) != 0 || rc != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The value of KEY= in scontrol's one-line record, into out; -1 when absent. */
static int record_value(const char *record, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);
	for (const char *p = record; (p = strstr(p, key)) != NULL; p += klen) {
		if ((p != record && p[-1] != ' ' && p[-1] != '\n') || p[klen] != '=')
			continue;
		const char *v = p + klen + 1;
		size_t n = strcspn(v, " \n");
		if (n >= len)
			return -1;
		memcpy(out, v, n);
		out[n] = '\0';
		return 0;
	}
	return -1;
}

/* The job's nodes now, as slurmctld has them (not the script's stale SLURM_JOB_NODELIST). */
static int job_nodes(const struct job_run *r, char ***names, size_t *n)
{
	char *argv[] = { "scontrol", "show", "job", "--oneliner", (char *)r->job_id, NULL };
	char *text, list[65536], msg[256];
	int rc = capture(argv, &text);
	if (rc != 0 || record_value(text, "NodeList", list, sizeof list) != 0) {
		say("cannot read the job's nodes from `scontrol show job %s` (exit %d)", r->job_id, rc);
		free(text);
		return -1;
	}
	free(text);
	if (hostlist_expand(list, NODES_MAX, names, n, msg, sizeof msg) != LLMP_OK) {
		say("the job's NodeList=%s: %s", cli_printable(list), msg);
		return -1;
	}
	return 0;
}

static bool is_excluded(const struct job_run *r, const char *name)
{
	for (size_t i = 0; i < r->nexcluded; i++)
		if (strcmp(r->excluded[i], name) == 0)
			return true;
	return false;
}

static void exclude(struct job_run *r, const char *name, const char *why)
{
	char **more;
	if (is_excluded(r, name) || !(more = realloc(r->excluded, (r->nexcluded + 1) * sizeof *more)))
		return;
	r->excluded = more;
	if ((r->excluded[r->nexcluded] = strdup(name)) != NULL)
		r->nexcluded++;
	say("%s is out for the rest of the job: %s", name, why);
}

/* Take out the nodes sinfo shows down, drained, draining, failing or not responding: one call for all. */
static void exclude_bad_states(struct job_run *r, char *const *names, size_t n)
{
	size_t *all = malloc((n ? n : 1) * sizeof *all);
	char *list = NULL, *text = NULL;
	for (size_t i = 0; all && i < n; i++)
		all[i] = i;
	if (all && (list = host_list(names, all, n)) != NULL) {
		char *argv[] = { "sinfo", "--noheader", "--Node", "--nodes", list, "--format=%N %T", NULL };
		if (capture(argv, &text) != 0) {
			free(text);
			text = NULL; /* the check decides */
		}
	}
	for (char *line = text, *next; line && *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		char name[256], state[64], why[96];
		if (sscanf(line, "%255s %63s", name, state) != 2 || !job_run_state_is_bad(state))
			continue;
		for (size_t i = 0; i < n; i++)
			if (strcmp(names[i], name) == 0 && !is_excluded(r, name)) {
				snprintf(why, sizeof why, "Slurm shows it %s", cli_printable(state));
				exclude(r, name, why);
			}
	}
	free(text);
	free(list);
	free(all);
}

/*
 * The host the failed run's ranks blamed (the run record's suspect): out
 * without a check, which on a frozen node would only wait for its
 * deadline. Never the batch host: this process runs there, so the node is
 * up, and the check decides.
 */
static void exclude_suspect(struct job_run *r, char *const *names, size_t n)
{
	char host[64], msg[LLMP_MSG_MAX], why[128];
	llmp_run_record rec;
	if (llmp_run_record_read(r->root, &rec, msg, sizeof msg) != LLMP_OK ||
	    rec.outcome != LLMP_RUN_FAILED ||
	    llmp_run_record_get(r->root, "suspect", host, sizeof host, msg, sizeof msg) != LLMP_OK ||
	    !host[0] || strcmp(host, r->batch_host) == 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], host) == 0 && !is_excluded(r, host)) {
			snprintf(why, sizeof why,
				 "the ranks blamed it (a rank there died or stopped answering)");
			exclude(r, host, why);
		}
}

/* ---------------------------------------------------------------- the node check */

/* Our environment without what turns llm_parallel on: the check is a step of one task, not the layout. */
static char **check_env(void)
{
	size_t n = 0, k = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 1, sizeof *env);
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *v = environ[i];
		if (strncmp(v, "LLMP_", 5) == 0 || strstr(v, "SPANK_OPTION_llm_parallel_"))
			continue;
		env[k++] = (char *)v;
	}
	return env;
}

/* Stop a check past its deadline: killed at once (a srun waiting on a dead node ignores gentler signals). */
static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* How many node checks run at once: enough for seconds on thousands of nodes, few for slurmctld. */
#define CHECKS_IN_FLIGHT 64

struct node_check {
	pid_t pid;
	double started;
};

/* The check of node i has ended (code, or -1: no answer in time): out when it failed. */
static void check_done(struct job_run *r, const char *name, int code)
{
	char why[128];
	if (code == 0)
		return;
	if (code < 0)
		snprintf(why, sizeof why, "no answer to its check within %.1f s", r->check_timeout);
	else
		snprintf(why, sizeof why, "its check (%s) failed with code %d", cli_printable(r->check),
			 code);
	exclude(r, name, why);
}

/*
 * Every node not yet out runs the check as a step of one task (srun
 * --overlap: a step of the failed run may still hold its CPUs while
 * slurmctld waits on a lost node), CHECKS_IN_FLIGHT at a time, each under
 * the deadline; a node whose check fails or outlives it is taken out.
 * --llm-node-check has the plugin fail the step on a node whose GPUs still
 * hold the failed run's processes or memory, or ask for a reset, naming
 * what it found, before PROG runs.
 */
static int check_nodes(struct job_run *r, char *const *names, size_t n)
{
	struct node_check *c = calloc(n ? n : 1, sizeof *c);
	char **env = check_env();
	char timeout[32];
	if (!c || !env) {
		free(c);
		free(env);
		return -1;
	}
	snprintf(timeout, sizeof timeout, "--time=%u", 1 + (unsigned)(r->check_timeout / 60));
	size_t next = 0, running = 0;
	for (;;) {
		while (running < CHECKS_IN_FLIGHT && next < n) {
			size_t i = next++;
			if (is_excluded(r, names[i]))
				continue;
			char *argv[] = { "srun",  "--overlap",           "--quiet",          "-N1",
					 "-n1",   "--ntasks-per-node=1", "--nodelist",       names[i],
					 timeout, "--mpi=none",          "--llm-node-check", (char *)r->check,
					 NULL };
			c[i].pid = start(argv, env, NULL);
			c[i].started = now();
			if (c[i].pid < 0)
				check_done(r, names[i], 127);
			else
				running++;
		}
		if (!running && next == n)
			break;
		for (size_t i = 0; i < next; i++) {
			int status;
			if (c[i].pid <= 0)
				continue;
			pid_t got = waitpid(c[i].pid, &status, WNOHANG);
			if (got == 0 && now() - c[i].started <= r->check_timeout)
				continue;
			if (got == 0) {
				stop(c[i].pid);
				check_done(r, names[i], -1);
			} else
				check_done(r, names[i],
					   got < 0             ? 127
					   : WIFEXITED(status) ? WEXITSTATUS(status)
							       : 128 + WTERMSIG(status));
			c[i].pid = 0;
			running--;
		}
		usleep(20000);
	}
	free(c);
	free(env);
	return 0;
}

/* ---------------------------------------------------------------- one run */

/*
 * The record as it was before a run; whether a run wrote a new one is told
 * by comparing, and by its Slurm step: a rank of the run before may still
 * be ending (waiting out its timeout) when the next run starts, and what it
 * writes then is not the new run's verdict.
 */
struct record_seen {
	bool have;
	llmp_run_record rec;
	char slurm_step[24]; /* "" in a record without one */
};

static void read_record(const struct job_run *r, struct record_seen *s)
{
	char msg[LLMP_MSG_MAX];
	memset(s, 0, sizeof *s);
	s->have = llmp_run_record_read(r->root, &s->rec, msg, sizeof msg) == LLMP_OK &&
		  llmp_run_record_get(r->root, "slurm-step", s->slurm_step, sizeof s->slurm_step, msg,
				      sizeof msg) == LLMP_OK;
}

/* Is after a record of a run other than before's? */
static bool another_run(const struct record_seen *before, const struct record_seen *after)
{
	if (!after->have)
		return false;
	if (!before->have)
		return true;
	if (before->slurm_step[0] && strcmp(before->slurm_step, after->slurm_step) == 0)
		return false; /* the run before, still ending */
	return memcmp(&before->rec, &after->rec, sizeof after->rec) != 0;
}

/* Has the run written its verdict (a record of its own, no longer running)? */
static bool verdict_written(const struct job_run *r, const struct record_seen *before)
{
	struct record_seen now_seen;
	read_record(r, &now_seen);
	return another_run(before, &now_seen) && now_seen.rec.outcome != LLMP_RUN_RUNNING;
}

/*
 * Wait for srun, watching the run record: when a node is lost, srun waits
 * on it to end the step until slurmctld declares it down (SlurmdTimeout,
 * 300 s by default), long after the surviving ranks wrote their verdict and
 * exited. So once the verdict is there, srun has VERDICT_GRACE_S to end by
 * itself (it takes milliseconds once every task has ended), and is then
 * killed (slurmctld ends the step with the lost node).
 * Rank 0 writes the verdict: a run whose rank 0 was on the lost node is
 * seen only when srun ends.
 */
#define VERDICT_GRACE_S 1.0
static int wait_run(const struct job_run *r, pid_t pid, const struct record_seen *before)
{
	double seen = 0;
	int status;
	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (got < 0 && errno != EINTR)
			return 127;
		if (!seen && verdict_written(r, before))
			seen = now();
		if (seen && now() - seen > VERDICT_GRACE_S) {
			say("the ranks' verdict is written, srun still waits %.0f s later (a lost node): srun killed",
			    VERDICT_GRACE_S);
			kill(pid, SIGKILL);
			return reap(pid);
		}
		usleep(100000);
	}
}

/* srun of the program on the chosen nodes; srun's exit code. */
static int launch(const struct job_run *r, const char *list, size_t nodes, const struct record_seen *before)
{
	char mpi[64], n[32], ntasks[32], per_node[48];
	char *argv[16 + 1024];
	size_t k = 0, p = 0;
	argv[k++] = "srun";
	if (r->mpi) {
		snprintf(mpi, sizeof mpi, "--mpi=%s", r->mpi);
		argv[k++] = mpi;
	}
	snprintf(n, sizeof n, "--nodes=%zu", nodes);
	snprintf(ntasks, sizeof ntasks, "--ntasks=%" PRIu64, (uint64_t)nodes * r->tasks_per_node);
	snprintf(per_node, sizeof per_node, "--ntasks-per-node=%" PRIu64, r->tasks_per_node);
	argv[k++] = "--kill-on-bad-exit=1";
	argv[k++] =
		"--overlap"; /* a step of the failed run may hold CPUs until its lost node is declared down */
	argv[k++] = n;
	argv[k++] = ntasks;
	argv[k++] = per_node;
	argv[k++] = "--nodelist";
	argv[k++] = (char *)list;
	while (r->prog[p] && k < sizeof argv / sizeof argv[0] - 1)
		argv[k++] = r->prog[p++];
	argv[k] = NULL;
	pid_t pid = start(argv, NULL, NULL);
	return pid < 0 ? 127 : wait_run(r, pid, before);
}

/* Did the run write a record of its own that says it failed (a rank's word, or none: a lost node)? */
static bool run_failed(const struct record_seen *before, const struct record_seen *after)
{
	if (!another_run(before, after))
		return false; /* no record of this run: job-end passes its code on */
	return after->rec.outcome == LLMP_RUN_FAILED || after->rec.outcome == LLMP_RUN_RUNNING;
}

/* ---------------------------------------------------------------- the loop */

/* The end: `llmp job-end` decides from the newest record, with the last run's code. */
static int job_end(const struct job_run *r, int rc)
{
	char code[16];
	char *argv[8];
	int k = 0;
	snprintf(code, sizeof code, "%d", rc > 255 ? 255 : rc);
	argv[k++] = "job-end";
	argv[k++] = "--checkpoint";
	argv[k++] = (char *)r->root;
	if (r->requeue) {
		argv[k++] = "--requeue";
		argv[k++] = (char *)r->requeue;
	}
	argv[k++] = code;
	argv[k] = NULL;
	optind = 0; /* getopt_long starts afresh */
	return cli_job_end(k, argv);
}

/*
 * After a failed run: Slurm's current nodes, minus those it shows bad and
 * those failing the check. 0 to run again, -1 to end (the batch host is out,
 * Slurm cannot be read).
 */
static int recover(struct job_run *r, unsigned recovery, double ended, char ***names, size_t *n)
{
	hostlist_free(*names, *n);
	*names = NULL;
	*n = 0;
	size_t before = r->nexcluded;
	if (job_nodes(r, names, n) < 0)
		return -1;
	exclude_bad_states(r, *names, *n);
	exclude_suspect(r, *names, *n);
	double checked = now();
	if (check_nodes(r, *names, *n) < 0)
		return -1;
	double done = now();
	char lost[512] = "";
	for (size_t i = before, used = 0; i < r->nexcluded && used < sizeof lost; i++)
		used += (size_t)snprintf(lost + used, sizeof lost - used, "%s%s", used ? "," : "",
					 r->excluded[i]);
	say("recovery %u: %s; Slurm's view %.1f s, check %.1f s", recovery,
	    lost[0] ? lost : "no node lost (the program failed: relaunched on the same nodes)",
	    checked - ended, done - checked);
	if (is_excluded(r, r->batch_host)) {
		say("the batch host %s is out: the job cannot go on here", r->batch_host);
		return -1;
	}
	return 0;
}

static int run_loop(struct job_run *r, unsigned max_recoveries)
{
	char **names = NULL, msg[LLMP_MSG_MAX];
	size_t n = 0;
	int rc = 1;
	if (job_nodes(r, &names, &n) < 0)
		return job_end(r, rc);
	if (r->spares >= n) {
		say("--spares %u leaves none of the job's %zu node%s to run on", r->spares, n,
		    n == 1 ? "" : "s");
		hostlist_free(names, n);
		return CLI_EXIT_USAGE;
	}
	size_t want = n - r->spares;
	exclude_bad_states(r, names, n);
	for (unsigned recovery = 0;; recovery++) {
		bool *out = calloc(n ? n : 1, sizeof *out);
		struct job_run_choice c;
		char *list = NULL;
		for (size_t i = 0; out && i < n; i++)
			out[i] = is_excluded(r, names[i]);
		if (!out || job_run_choose((const char *const *)names, n, out, r->batch_host, want, &c, msg,
					   sizeof msg) < 0) {
			say("%s", out ? msg : "out of memory");
			free(out);
			break;
		}
		free(out);
		char *spares = host_list(names, c.spares, c.nspares);
		if (!(list = host_list(names, c.active, c.nactive)) || !spares) {
			free(spares);
			free(list);
			job_run_choice_free(&c);
			break;
		}
		say("run %u on %s (%zu node%s%s); spares: %s", recovery, list, c.nactive,
		    c.nactive == 1 ? "" : "s",
		    c.smaller ? ", fewer than the first run: the layout must allow it" : "",
		    c.nspares ? spares : "none");
		struct record_seen before, after;
		read_record(r, &before);
		double started = now();
		rc = launch(r, list, c.nactive, &before);
		double ended = now();
		free(spares);
		free(list);
		job_run_choice_free(&c);
		read_record(r, &after);
		say("run %u ended after %.1f s, srun's code %d", recovery, ended - started, rc);
		if (!run_failed(&before, &after))
			break;
		if (recovery >= max_recoveries) {
			say("%u recoveries in this allocation, as many as restarts= allows", recovery);
			break;
		}
		if (recover(r, recovery + 1, ended, &names, &n) < 0)
			break;
	}
	hostlist_free(names, n);
	return job_end(r, rc);
}

/* ---------------------------------------------------------------- the heartbeat */

/*
 * While the driver runs, a thread rewrites ROOT/llmp-driver every
 * JOB_DRIVER_PERIOD_S (job_driver.h): the ranks of a run that failed on
 * the batch host read it to learn whether anyone is left to recover the
 * job, and requeue it themselves when not (runtime/job/job_orphan.c).
 */
struct heartbeat {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop, started;
	const char *root;
	struct job_driver_beat beat;
};

static void *beat_loop(void *arg)
{
	struct heartbeat *h = arg;
	char msg[LLMP_MSG_MAX];
	bool said = false;
	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		h->beat.ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		/* The ranks make the checkpoint root (its owner and mode are theirs to check): beat once it is there. */
		bool root_there = access(h->root, F_OK) == 0;
		if (root_there && job_driver_write(h->root, &h->beat, msg, sizeof msg) != LLMP_OK && !said) {
			say("no heartbeat (%s): a lost batch host leaves this job to its time limit", msg);
			said = true;
		}
		long long ns = ts.tv_nsec + (long long)(JOB_DRIVER_PERIOD_S * 1e9);
		ts.tv_sec += (time_t)(ns / 1000000000);
		ts.tv_nsec = (long)(ns % 1000000000);
		pthread_cond_timedwait(&h->wake, &h->lock, &ts);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

static void heartbeat_start(struct heartbeat *h, const struct job_run *r)
{
	memset(h, 0, sizeof *h);
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->wake, NULL);
	h->root = r->root;
	snprintf(h->beat.job_id, sizeof h->beat.job_id, "%s", r->job_id);
	snprintf(h->beat.host, sizeof h->beat.host, "%.63s", r->batch_host);
	snprintf(h->beat.how, sizeof h->beat.how, "%s", r->requeue ? r->requeue : "auto");
	h->started = pthread_create(&h->thread, NULL, beat_loop, h) == 0;
	if (!h->started)
		say("no heartbeat (cannot start its thread): a lost batch host leaves this job to its time limit");
}

static void heartbeat_stop(struct heartbeat *h)
{
	if (h->started) {
		pthread_mutex_lock(&h->lock);
		h->stop = true;
		pthread_cond_signal(&h->wake);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->thread, NULL);
	}
	job_driver_remove(h->root, h->beat.job_id);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->wake);
}

/* ---------------------------------------------------------------- arguments */

/* Tasks per node from Slurm's environment: --ntasks-per-node, else a uniform SLURM_TASKS_PER_NODE ("4(x3)"). */
static int tasks_per_node(struct job_run *r)
{
	const char *text = getenv("SLURM_NTASKS_PER_NODE");
	if (r->tasks_per_node)
		return 0;
	if (text && *text)
		return cli_parse_count(PROG, "SLURM_NTASKS_PER_NODE", text, 1, 65536, &r->tasks_per_node);
	text = getenv("SLURM_TASKS_PER_NODE");
	if (text && *text) {
		char *end;
		unsigned long v = strtoul(text, &end, 10);
		if (v >= 1 && v <= 65536 && (*end == '\0' || (*end == '(' && strchr(end, ',') == NULL))) {
			r->tasks_per_node = v;
			return 0;
		}
	}
	fprintf(stderr,
		PROG ": the tasks per node are not the same on every node (SLURM_TASKS_PER_NODE=%s): "
		     "give --tasks-per-node, or submit with --ntasks-per-node\n",
		text ? cli_printable(text) : "unset");
	return -1;
}

int cli_job_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "spares", required_argument, NULL, 's' },
		{ "tasks-per-node", required_argument, NULL, 't' },
		{ "check-timeout", required_argument, NULL, 'T' },
		{ "check", required_argument, NULL, 'k' },
		{ "mpi", required_argument, NULL, 'm' },
		{ "checkpoint", required_argument, NULL, 'c' },
		{ "requeue", required_argument, NULL, 'r' },
		{ "max-recoveries", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct job_run r = { .check_timeout = 5, .check = "true", .mpi = "pmix" };
	const char *given = NULL;
	uint64_t v, max_recoveries = UINT32_MAX;
	llmp_ckpt_spec spec;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_parse_count(PROG, "--spares", optarg, 0, NODES_MAX, &v) < 0)
				return CLI_EXIT_USAGE;
			r.spares = (unsigned)v;
			break;
		case 't':
			if (cli_parse_count(PROG, "--tasks-per-node", optarg, 1, 65536, &r.tasks_per_node) <
			    0)
				return CLI_EXIT_USAGE;
			break;
		case 'T':
			if (cli_parse_count(PROG, "--check-timeout", optarg, 1, 3600, &v) < 0)
				return CLI_EXIT_USAGE;
			r.check_timeout = (double)v;
			break;
		case 'k': r.check = optarg; break;
		case 'm': r.mpi = strcmp(optarg, "none") == 0 ? NULL : optarg; break;
		case 'c': given = optarg; break;
		case 'r': r.requeue = optarg; break;
		case 'M':
			if (cli_parse_count(PROG, "--max-recoveries", optarg, 0, UINT32_MAX,
					    &max_recoveries) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'h': usage(stdout); return CLI_EXIT_OK;
		default:
			fprintf(stderr, PROG ": bad option %s\n", cli_culprit(argv));
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc) {
		fputs(PROG ": no program to run (llmp job run [options] -- PROG [ARGS...])\n", stderr);
		return CLI_EXIT_USAGE;
	}
	r.prog = argv + optind;
	const char *id = getenv("SLURM_JOB_ID");
	if (!id || !*id || strspn(id, "0123456789_") != strlen(id)) {
		fputs(PROG ": not in a Slurm batch job (SLURM_JOB_ID unset or not a job id)\n", stderr);
		return CLI_EXIT_USAGE;
	}
	r.job_id = id;
	llmp_ckpt_spec_init(&spec);
	if (!(r.root = cli_job_root(PROG, given, &spec)) || tasks_per_node(&r) < 0)
		return CLI_EXIT_USAGE;
	const char *host = getenv("SLURMD_NODENAME");
	if (host && *host)
		snprintf(r.batch_host, sizeof r.batch_host, "%s", host);
	else if (gethostname(r.batch_host, sizeof r.batch_host - 1) != 0)
		r.batch_host[0] = '\0';
	struct heartbeat beat;
	heartbeat_start(&beat, &r);
	int rc = run_loop(&r, max_recoveries > UINT32_MAX ? UINT32_MAX : (unsigned)max_recoveries);
	heartbeat_stop(&beat);
	for (size_t i = 0; i < r.nexcluded; i++)
		free(r.excluded[i]);
	free(r.excluded);
	return rc;
}

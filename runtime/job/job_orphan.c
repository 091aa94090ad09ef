/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_orphan.c - a failed run whose driver is gone: the job is requeued by
 * a rank, since nothing else is left to do it.
 *
 * Under `llmp job run` a rank that fails leaves the job to the driver,
 * which relaunches the run or ends the job. When the run failed because
 * the driver's own host (the batch host) was lost or froze, the driver is
 * gone with it, and a --no-kill job would hold its other nodes until the
 * time limit (job_driver.h). So a rank that blames the driver's host reads
 * the driver's heartbeat: a beat that moves says the driver lives (a rank
 * there crashed, the host is fine) and the rank ends as always; a beat
 * that has not moved for JOB_DRIVER_STALE_S, by this host's clock and by
 * watching it that long, says it does not. The first rank to claim the
 * requeue (ROOT/llmp-orphan.JOB.RESTART, created exclusively) runs
 * `scontrol requeue JOB` (`scancel JOB` when the ranks gave up: the driver
 * would have ended the job), bounded; the others say who did. Slurm
 * finishes the requeue once it has declared the lost node down
 * (SlurmdTimeout), and the job resumes from its newest checkpoint as after
 * any requeue. The driver's --requeue none is kept: nothing is done.
 */

#include "job_internal.h"
#include "job_driver.h"
#include "common/run_bounded.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLURM_CMD_TIMEOUT_S 15.0

static double wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Whether the driver of beat b is gone: its beat older than the stale time
 * by this clock, and not moving while watched that long (clocks of two
 * nodes may differ). How old the last beat was goes to *age_s.
 */
static bool driver_gone(const char *root, const struct job_driver_beat *b, double *age_s)
{
	struct job_driver_beat now;
	char msg[256];
	double watch_from = mono_s();
	for (;;) {
		if (job_driver_read(root, &now, msg, sizeof msg) != LLMP_OK ||
		    strcmp(now.job_id, b->job_id) != 0)
			return false; /* removed or replaced: a driver that ended, or a new one */
		if (now.ms != b->ms)
			return false;
		*age_s = (wall_ms() - (double)b->ms) / 1e3;
		if (*age_s > JOB_DRIVER_STALE_S && mono_s() - watch_from > JOB_DRIVER_STALE_S)
			return true;
		usleep((useconds_t)(JOB_DRIVER_PERIOD_S * 1e6));
	}
}

void job_orphan(llmp_job *job, const char *suspect, bool give_up)
{
	struct job_driver_beat b;
	char msg[LLMP_MSG_MAX], claim[4096], why[256];
	double age = 0;
	const char *root = job->spec.dir;

	if (!suspect || !suspect[0] || !job->run.job_id[0] ||
	    job_driver_read(root, &b, msg, sizeof msg) != LLMP_OK || strcmp(b.job_id, job->run.job_id) != 0 ||
	    strcmp(b.host, suspect) != 0)
		return; /* no driver, or not its host that failed: the driver decides */
	if (!driver_gone(root, &b, &age))
		return;
	if (strcmp(b.how, "none") == 0) {
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO,
		       "the job's driver on %s is gone (its beat %.1f s old); --requeue none: the job is left "
		       "as it is",
		       b.host, age);
		return;
	}
	snprintf(claim, sizeof claim, "%s/llmp-orphan.%s.%" PRIu64, root, job->run.job_id, job->run.restart);
	int fd = open(claim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		if (errno == EEXIST)
			rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO,
			       "the job's driver on %s is gone; another rank %s the job", b.host,
			       give_up ? "cancels" : "requeues");
		else
			rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN,
			       "the job's driver on %s is gone; cannot claim its end (%s: %s)", b.host, claim,
			       strerror(errno));
		return;
	}
	dprintf(fd, "rank %u\n", job->ctx->rank);
	close(fd);
	char *requeue[] = { "scontrol", "requeue", job->run.job_id, NULL };
	char *cancel[] = { "scancel", job->run.job_id, NULL };
	/* from PATH, as the job's user */
	const struct llmp_run_how how = { .search_path = 1, .timeout_s = SLURM_CMD_TIMEOUT_S };
	if (llmp_run_bounded(give_up ? cancel : requeue, &how, why, sizeof why) < 0)
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN,
		       "the job's driver on %s is gone (its beat %.1f s old) and the job could not be %s: %s",
		       b.host, age, give_up ? "cancelled" : "requeued", why);
	else
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_INFO,
		       "the job's driver on %s is gone (its beat %.1f s old): job %s %s (%s)", b.host, age,
		       job->run.job_id, give_up ? "cancelled" : "requeued",
		       give_up ? "scancel" : "scontrol requeue");
}

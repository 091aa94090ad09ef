/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_signal.c - a stop request is a signal that only sets a flag.
 *
 * Slurm asks a job to stop with a signal: SIGTERM on preemption, at the time
 * limit and on scancel; the one chosen with --signal ahead of the limit
 * (often SIGUSR1). Nothing useful can be done inside a handler, so it only
 * records the first signal and when it came; the step boundary
 * (llmp_job_step_end) turns it into an agreed stop. Handlers are process
 * state, so this is the one place with static mutable state: a process has
 * one job.
 */
#include "job_internal.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define MAX_STOP_SIGNALS 16

static volatile sig_atomic_t received;
static struct timespec received_at;
static int installed[MAX_STOP_SIGNALS];
static struct sigaction previous[MAX_STOP_SIGNALS];
static size_t ninstalled;

static void on_stop_signal(int sig)
{
	if (received)
		return;                              /* a second SIGTERM is no news: the stop is under way */
	clock_gettime(CLOCK_REALTIME, &received_at); /* async-signal-safe */
	received = sig;
}

static const int default_signals[] = { SIGTERM, SIGINT, SIGUSR1, SIGUSR2, 0 };

llmp_status job_signals_install(llmp_job *job, const int *signals)
{
	if (!signals)
		signals = default_signals;
	size_t n = 0;
	while (signals[n])
		n++;
	if (n > MAX_STOP_SIGNALS)
		return rt_fail(job->ctx, LLMP_ERR_ARG, "llmp_job_open: more than %d stop signals",
			       MAX_STOP_SIGNALS);
	for (size_t i = 0; i < n; i++)
		if (signals[i] == SIGKILL || signals[i] == SIGSTOP || signals[i] <= 0 || signals[i] >= NSIG)
			return rt_fail(job->ctx, LLMP_ERR_ARG,
				       "llmp_job_open: stop signal %d cannot be caught", signals[i]);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART; /* system calls of the program carry on */
	received = 0;
	ninstalled = 0;
	for (size_t i = 0; i < n; i++) {
		if (sigaction(signals[i], &sa, &previous[i]) != 0) {
			job_signals_restore();
			return rt_fail(job->ctx, LLMP_ERR_ARG, "llmp_job_open: sigaction(%s) failed",
				       strsignal(signals[i]));
		}
		installed[i] = signals[i];
		ninstalled = i + 1;
	}
	return LLMP_OK;
}

void job_signals_restore(void)
{
	for (size_t i = 0; i < ninstalled; i++)
		sigaction(installed[i], &previous[i], NULL);
	ninstalled = 0;
}

int job_signal_received(struct timespec *when)
{
	int sig = received;
	if (sig && when)
		*when = received_at; /* written before `received`, which is read first */
	return sig;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * idle.h - how a waiting rank lets its core go once the wait is long.
 *
 * A wait spins first (the others are usually microseconds behind), then
 * yields the core between polls. A yield keeps a waiter runnable: with
 * more ranks than cores (a test cluster, a node whose cores also serve a
 * FUSE client or a data loader), ranks stuck for long took as much CPU as
 * the ones still working, a quarter of the machine in a checkpoint load
 * measured on the test cluster's GlusterFS volume. So a wait stuck for
 * RT_IDLE_SLEEP_AFTER_S sleeps between polls instead, for a sixteenth of
 * how long it has been stuck, at most RT_IDLE_SLEEP_MAX_S: it ends at most
 * that fraction (plus the kernel's timer slack, 50 us by default) after
 * what it waited for arrived, and never sleeps on a short wait.
 */
#ifndef LLMP_RT_IDLE_H
#define LLMP_RT_IDLE_H

#include <sched.h>
#include <time.h>

#define RT_IDLE_SLEEP_AFTER_S 2e-3
#define RT_IDLE_SLEEP_MAX_S 5e-4
#define RT_IDLE_SLEEP_FRACTION 16

/* How long a wait stuck for stuck_s sleeps before its next poll, in nanoseconds; 0: it yields. */
static inline long rt_idle_sleep_ns(double stuck_s)
{
	if (!(stuck_s >= RT_IDLE_SLEEP_AFTER_S))
		return 0;
	double s = stuck_s / RT_IDLE_SLEEP_FRACTION;
	return (long)((s < RT_IDLE_SLEEP_MAX_S ? s : RT_IDLE_SLEEP_MAX_S) * 1e9);
}

/* Between two polls of a wait stuck for stuck_s: yield the core, or sleep. */
static inline void rt_idle(double stuck_s)
{
	long ns = rt_idle_sleep_ns(stuck_s);
	if (ns == 0) {
		sched_yield();
		return;
	}
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ns };
	nanosleep(&ts, NULL);
}

#endif

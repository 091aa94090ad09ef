/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.h - what a communicator counts about its own calls: operations,
 * bytes, time inside them, and the waits for the last member.
 *
 * Counting must cost next to nothing against an 8-byte allreduce (about
 * 0.2 us on the development VM), so the fast path adds two clock reads per
 * call and a few additions, and transport.c reads the clock in a wait only
 * once the wait is stuck (RT_METRICS_SPIN idle polls), where it used to
 * read it twice on entry (doc/benchmarks.md has the figures).
 *
 * Arrival skew is measured where the algorithms wait: a wait that is still
 * stuck after RT_METRICS_SPIN polls is timed from then until it ends, and
 * blamed on the member whose message (UCX) or posted counter (shared
 * memory) completed it last. A call's wait is the sum of its timed waits;
 * its last member the one blamed for the longest of them. On the shared
 * memory path this is the member that posted last; over UCX, the direct
 * peer, which is the slow member itself or a member waiting for it
 * (`llmp top` adds the blame over all ranks, doc/metrics-json.md).
 */
#ifndef LLMP_METRICS_H
#define LLMP_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Idle polls before a wait counts as one (and its clock is read). */
#define RT_METRICS_SPIN 64

struct rt_metrics {
	uint64_t ops; /* calls: collectives, barriers, sends and receives */
	uint64_t bytes_sent, bytes_recvd;
	double seconds; /* inside those calls (host calls: the calling thread's clock) */
	/*
	 * GPU time of device operations (runtime/device/inflight.c), in ns: added
	 * by the device watchdog's thread, so read and added atomically.
	 */
	uint64_t device_ns;
	double wait_seconds; /* of which in timed waits */
	uint64_t waits;      /* calls with a timed wait */
	/* Per member (comm rank): calls whose longest wait was for it, and their waits. */
	uint64_t *last_times;
	double *last_seconds;
	/* The call under way. */
	double call_start;
	double call_wait, call_wait_max;
	uint32_t call_last;
};

double rt_now(void); /* rt.h */

/* The per-member tables of a communicator of size members (metrics.c); false: out of memory. */
bool rt_metrics_init(struct rt_metrics *m, uint32_t size);
void rt_metrics_free(struct rt_metrics *m);

/* Time in calls: the host calls' and the device operations' the GPU finished so far. */
static inline double rt_metrics_seconds(const struct rt_metrics *m)
{
	return m->seconds + 1e-9 * (double)__atomic_load_n(&m->device_ns, __ATOMIC_RELAXED);
}

/* A device operation's GPU time, from any thread. */
static inline void rt_metrics_device_time(struct rt_metrics *m, uint64_t ns)
{
	__atomic_fetch_add(&m->device_ns, ns, __ATOMIC_RELAXED);
}

/* A wait for member that was stuck for seconds (timed once past RT_METRICS_SPIN polls). */
static inline void rt_metrics_waited(struct rt_metrics *m, uint32_t member, double seconds)
{
	m->call_wait += seconds;
	if (seconds > m->call_wait_max) {
		m->call_wait_max = seconds;
		m->call_last = member;
	}
}

#ifdef LLMP_BENCH_NO_COUNTING
/*
 * Only for the A/B of scripts/bench-metrics-ab.sh, which builds llmp-bench
 * a second time with this defined: calls neither read the clock nor count,
 * so the two builds' 8-byte allreduce differ by the counting alone. Never
 * defined in a build of llmp itself (the counters would stay at zero).
 */
static inline void rt_metrics_begin(struct rt_metrics *m)
{
	(void)m;
}
static inline void rt_metrics_end(struct rt_metrics *m)
{
	(void)m;
}
#else
/* A call begins: one clock read. */
static inline void rt_metrics_begin(struct rt_metrics *m)
{
	m->call_wait = m->call_wait_max = 0;
	m->call_last = UINT32_MAX;
	m->call_start = rt_now();
}

/* Book a call that waited on its last member. */
static inline void rt_metrics_blame(struct rt_metrics *m)
{
	m->wait_seconds += m->call_wait;
	m->waits++;
	if (m->last_times && m->call_last != UINT32_MAX) {
		m->last_times[m->call_last]++;
		m->last_seconds[m->call_last] += m->call_wait;
	}
}

/* A call ends: one clock read, and the blame only if it waited. */
static inline void rt_metrics_end(struct rt_metrics *m)
{
	m->seconds += rt_now() - m->call_start;
	m->ops++;
	if (m->call_wait > 0)
		rt_metrics_blame(m);
}
#endif /* LLMP_BENCH_NO_COUNTING */

#endif /* LLMP_METRICS_H */

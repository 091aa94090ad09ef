/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_metrics.c - what a communicator's counting (runtime/comm/metrics.h)
 * costs a call, in nanoseconds: a small call (a random 1 in
 * RT_METRICS_SAMPLE timed), a large one (always timed: two clock reads),
 * and one clock read, in a loop, best of several repetitions, so that the
 * cost can be set beside an 8-byte allreduce's latency (doc/benchmarks.md);
 * scripts/bench-metrics-ab.sh measures it end to end, which a 2-vCPU VM's
 * noise resolves only to a few percent.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "runtime/comm/metrics.h"

#define CALLS 10000000
#define REPEATS 7

/* As runtime/comm/rt.c has it (rt_now). */
double rt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile double sink;

/* ns per call of: nothing (0), counting a call of `count` elements (1), one clock read (2). */
static double time_loop(struct rt_metrics *m, int which, size_t count)
{
	double t0 = rt_now();
	for (uint64_t i = 0; i < CALLS; i++) {
		if (which == 1) {
			/* (the bytes are added where they move, with or without -DLLMP_BENCH_NO_COUNTING) */
			rt_metrics_begin(m, count);
			__asm__ __volatile__("" ::: "memory");
			rt_metrics_end(m);
		} else if (which == 2) {
			sink = rt_now();
		} else {
			__asm__ __volatile__("" ::: "memory");
		}
	}
	return (rt_now() - t0) / CALLS * 1e9;
}

int main(void)
{
	static uint64_t times[2];
	static double seconds[2];
	struct rt_metrics m = { .last_times = times, .last_seconds = seconds };
	rt_metrics_seed(&m, (uint64_t)(rt_now() * 1e9));
	double best[4] = { 1e9, 1e9, 1e9, 1e9 };
	for (int r = 0; r < REPEATS; r++)
		for (int w = 0; w < 4; w++) {
			double ns = w == 3 ? time_loop(&m, 1, RT_METRICS_TIMED_COUNT) : time_loop(&m, w, 1);
			if (ns < best[w])
				best[w] = ns;
		}
	printf("# bench_metrics: ns per call, best of %d x %d calls\n", REPEATS, CALLS);
	printf("empty loop                                        %6.1f ns\n", best[0]);
	printf("one clock read (rt_now)                           %6.1f ns\n", best[2] - best[0]);
	printf("counting a small call (1 in %2u timed)             %6.1f ns\n", RT_METRICS_SAMPLE,
	       best[1] - best[0]);
	printf("counting a call of %5u elements (always timed)   %6.1f ns\n", RT_METRICS_TIMED_COUNT,
	       best[3] - best[0]);
	return sink > 0 ? 0 : 1;
}

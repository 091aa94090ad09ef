/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.h - what a communicator counts about its own calls: operations,
 * bytes, time inside them, and the waits for the last member.
 *
 * Counting must cost under 1% of an 8-byte allreduce (about 0.4 us on
 * the development VM), and two clock reads a call cost 10% there
 * (doc/benchmarks.md). So the time inside calls is measured exactly for
 * calls of RT_METRICS_TIMED_COUNT elements or more, and for smaller ones
 * on a random sample: each small call is timed with probability
 * 1/RT_METRICS_SAMPLE, independently of the others, and counts for
 * RT_METRICS_SAMPLE calls. Random, not every Nth call: a training step
 * repeats a fixed pattern of calls, which a period would alias with. The
 * estimate is unbiased; a small call that waited for a member (below) is
 * counted exactly instead, by its wait when it was not sampled, so the
 * time in calls is never less than the time in waits. Operations and
 * bytes are always counted exactly. transport.c reads the clock in a wait
 * only once the wait is stuck (RT_METRICS_SPIN idle polls).
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

/* Calls of at least this many elements are always timed: a clock read costs under 0.1% of them. */
#define RT_METRICS_TIMED_COUNT 16384

/* A smaller call is timed with probability 1 / RT_METRICS_SAMPLE (a power of two). */
#define RT_METRICS_SAMPLE_BITS 6
#define RT_METRICS_SAMPLE (1u << RT_METRICS_SAMPLE_BITS)

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
	/* The sampling of small calls: small calls left untimed before the next timed one, and the generator. */
	uint32_t untimed_left;
	uint64_t random;
	/* The call under way; call_weight: 0 untimed, 1 timed, RT_METRICS_SAMPLE sampled. */
	double call_start;
	double call_wait, call_wait_max;
	uint32_t call_last, call_weight;
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

/* xorshift64: the sampling needs no more than uncorrelated bits. */
static inline uint64_t rt_metrics_random(struct rt_metrics *m)
{
	uint64_t x = m->random;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return m->random = x;
}

/*
 * How many small calls go untimed before the next timed one: a geometric
 * draw, so that each call is timed with probability 1 / RT_METRICS_SAMPLE
 * independently of the others. Each field of RT_METRICS_SAMPLE_BITS
 * random bits is one call's draw, all zero for a timed one; the first
 * zero field of a word is found at once (the lowest high bit that
 * `(x - lows) & ~x & highs` sets is exact: no borrow reaches it).
 */
static inline uint32_t rt_metrics_gap(struct rt_metrics *m)
{
	enum { FIELDS = 64 / RT_METRICS_SAMPLE_BITS, BITS = FIELDS * RT_METRICS_SAMPLE_BITS };
	const uint64_t all = (UINT64_C(1) << BITS) - 1;
	const uint64_t lows = all / (RT_METRICS_SAMPLE - 1); /* 1 in every field */
	const uint64_t highs = lows << (RT_METRICS_SAMPLE_BITS - 1);
	uint32_t gap = 0;
	for (;;) {
		uint64_t x = rt_metrics_random(m) & all;
		uint64_t zero = (x - lows) & ~x & highs;
		if (zero)
			return gap + (uint32_t)__builtin_ctzll(zero) / RT_METRICS_SAMPLE_BITS;
		gap += FIELDS;
	}
}

/* The sampling seeded (metrics.c seeds it from the clock and the communicator). */
static inline void rt_metrics_seed(struct rt_metrics *m, uint64_t seed)
{
	/* splitmix64's finaliser: any seed, zero included, gives a good nonzero state */
	seed += UINT64_C(0x9e3779b97f4a7c15);
	seed = (seed ^ (seed >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	seed = (seed ^ (seed >> 27)) * UINT64_C(0x94d049bb133111eb);
	m->random = (seed ^ (seed >> 31)) | 1;
	m->untimed_left = rt_metrics_gap(m);
}

/*
 * Whether a call of count elements is timed, and for how many calls its
 * time counts: 1 for a large call, RT_METRICS_SAMPLE for a small one drawn,
 * 0 for one left untimed. The host calls' begin (below) and the device
 * operations' events (runtime/device/inflight.c, LLMP_DEVICE_TIMING=sampled)
 * draw from the same sampler: each call is timed with probability
 * 1 / RT_METRICS_SAMPLE whichever path it takes.
 */
static inline uint32_t rt_metrics_draw(struct rt_metrics *m, size_t count)
{
	if (count >= RT_METRICS_TIMED_COUNT)
		return 1;
	if (m->untimed_left > 0) {
		m->untimed_left--;
		return 0;
	}
	m->untimed_left = rt_metrics_gap(m);
	return RT_METRICS_SAMPLE;
}

#ifdef LLMP_BENCH_NO_COUNTING
/*
 * Only for the A/B of scripts/bench-metrics-ab.sh, which builds llmp-bench
 * a second time with this defined: calls neither read the clock nor count,
 * so the two builds' 8-byte allreduce differ by the counting alone. Never
 * defined in a build of llmp itself (the counters would stay at zero).
 */
static inline void rt_metrics_begin(struct rt_metrics *m, size_t count)
{
	(void)m;
	(void)count;
}
static inline void rt_metrics_end(struct rt_metrics *m)
{
	(void)m;
}
#else
/* A call of count elements begins: one clock read if it is timed. */
static inline void rt_metrics_begin(struct rt_metrics *m, size_t count)
{
	m->call_wait = m->call_wait_max = 0;
	m->call_last = UINT32_MAX;
	m->call_weight = rt_metrics_draw(m, count);
	if (m->call_weight)
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

/*
 * A call ends: its time if it was timed (a sampled one's for
 * RT_METRICS_SAMPLE calls), and the blame if it waited. A call that
 * waited is counted for itself alone: by its time if it was timed, else
 * by its wait, which is most of it (the wait is timed from its first
 * RT_METRICS_SPIN idle polls on).
 */
static inline void rt_metrics_end(struct rt_metrics *m)
{
	m->ops++;
	if (m->call_wait > 0) {
		m->seconds += m->call_weight ? rt_now() - m->call_start : m->call_wait;
		rt_metrics_blame(m);
	} else if (m->call_weight) {
		m->seconds += m->call_weight * (rt_now() - m->call_start);
	}
}
#endif /* LLMP_BENCH_NO_COUNTING */

#endif /* LLMP_METRICS_H */

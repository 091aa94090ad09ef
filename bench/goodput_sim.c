/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * goodput_sim.c - the training job under node failures (goodput_sim.h), one
 * event at a time: the next failure, the allocation's time limit or the
 * window's end, whichever comes first. Between two events the job trains
 * in whole periods from its last checkpoint, so the work kept is counted in
 * closed form and a 54-day run is a few hundred events.
 *
 * The failure times come from a PRNG of this file (xoshiro256**, seeded by
 * splitmix64), so a seed gives the same run on every machine, up to the
 * last bits of libm's log1p. They are drawn on the running-time clock,
 * which every restart policy shares: for one seed, requeue-only and
 * in-allocation restart meet the same failures after the same training,
 * and their difference is not drowned in the noise of two samples.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "goodput_sim.h"

/* More events than this in one window is a mistyped rate, not a job. */
#define MAX_EVENTS 1e8

struct prng {
	uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void prng_seed(struct prng *g, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		g->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna). */
static uint64_t prng_next(struct prng *g)
{
	uint64_t *s = g->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* An exponential wait of the given rate: -ln(1 - u) / rate, u uniform in [0, 1). */
static double prng_exponential(struct prng *g, double rate)
{
	if (rate <= 0)
		return INFINITY;
	double u = (double)(prng_next(g) >> 11) * 0x1.0p-53;
	return -log1p(-u) / rate;
}

/* Where the next failure comes from: the PRNG or a test's script. */
struct failure_clock {
	struct prng prng;
	double rate; /* per second of running time */
	const double *scripted;
	size_t n_scripted, next_scripted;
	double last; /* the previous failure, on the running clock */
};

static double next_failure(struct failure_clock *f)
{
	if (f->scripted)
		f->last = f->next_scripted < f->n_scripted ? f->scripted[f->next_scripted++] : INFINITY;
	else
		f->last += prng_exponential(&f->prng, f->rate);
	return f->last;
}

static int finite_nonnegative(double x)
{
	return isfinite(x) && x >= 0;
}

const char *goodput_invalid(const struct goodput_params *p)
{
	if (p->restart != GOODPUT_REQUEUE_ONLY && p->restart != GOODPUT_IN_ALLOCATION &&
	    p->restart != GOODPUT_FREE_SPARES)
		return "restart: not a restart policy";
	if (p->nodes == 0)
		return "nodes: must be at least 1";
	if (p->spares > 0 && p->restart != GOODPUT_IN_ALLOCATION)
		return "spares: only in-allocation restart holds spares";
	if (!finite_nonnegative(p->node_rate))
		return "node_rate: must be a finite rate, 0 or more";
	if (!isfinite(p->interval) || p->interval <= 0)
		return "interval: must be a finite time above 0";
	if (!finite_nonnegative(p->stall) || p->stall >= p->interval)
		return "stall: must be 0 or more and below interval";
	if (!finite_nonnegative(p->recovery))
		return "recovery: must be a finite time, 0 or more";
	if (!finite_nonnegative(p->detect))
		return "detect: must be a finite time, 0 or more";
	if (!finite_nonnegative(p->requeue))
		return "requeue: must be a finite time, 0 or more";
	if (!finite_nonnegative(p->startup))
		return "startup: must be a finite time, 0 or more";
	if (!finite_nonnegative(p->queue_wait))
		return "queue_wait: must be a finite time, 0 or more";
	if (!finite_nonnegative(p->alloc_limit) ||
	    (p->alloc_limit > 0 && p->alloc_limit <= p->startup + p->stall))
		return "alloc_limit: must be 0 (none) or above startup + stall";
	if (!isfinite(p->horizon) || p->horizon <= 0)
		return "horizon: must be a finite time above 0";
	if (!p->scripted && p->n_scripted > 0)
		return "scripted: NULL with n_scripted > 0";
	for (size_t i = 0; p->scripted && i < p->n_scripted; i++)
		if (!finite_nonnegative(p->scripted[i]) || (i > 0 && p->scripted[i] < p->scripted[i - 1]))
			return "scripted: failure times must be finite, 0 or more, ascending";
	if ((double)p->nodes * p->node_rate * p->horizon > MAX_EVENTS)
		return "node_rate: over 1e8 failures expected in the horizon";
	if (p->alloc_limit > 0 && p->horizon / (p->alloc_limit - p->startup - p->stall) > MAX_EVENTS)
		return "alloc_limit: over 1e8 allocations in the horizon";
	return NULL;
}

unsigned goodput_nodes_held(const struct goodput_params *p)
{
	return p->nodes + (p->restart == GOODPUT_IN_ALLOCATION ? p->spares : 0);
}

double goodput_failure_cost(const struct goodput_params *p)
{
	if (p->restart == GOODPUT_REQUEUE_ONLY)
		return p->detect + p->requeue + p->queue_wait + p->startup;
	return p->recovery;
}

double goodput_mtbf(const struct goodput_params *p)
{
	double rate = (double)p->nodes * p->node_rate;
	return rate > 0 ? 1 / rate : INFINITY;
}

static double idle_share(const struct goodput_params *p)
{
	return (double)p->nodes / goodput_nodes_held(p);
}

double goodput_first_order(const struct goodput_params *p)
{
	double m = goodput_mtbf(p);
	double w = p->stall / p->interval + (p->interval / 2 + goodput_failure_cost(p)) / m;
	return (1 - w) * idle_share(p);
}

/*
 * A period attempted from a checkpoint ends well when the next failure is
 * at least tau away (probability e^(-tau/M)); otherwise it costs the time to
 * the failure plus C, and is tried again. The expected wall time per period
 * kept is then (M + C)(e^(tau/M) - 1), for tau - delta of training.
 */
double goodput_renewal(const struct goodput_params *p)
{
	double m = goodput_mtbf(p);
	double keep = p->interval - p->stall;
	if (isinf(m))
		return keep / p->interval * idle_share(p);
	return keep / ((m + goodput_failure_cost(p)) * expm1(p->interval / m)) * idle_share(p);
}

/* The job between two events. */
struct job {
	const struct goodput_params *p;
	struct goodput_result *r;
	struct failure_clock failures;
	double wall;        /* now */
	double alloc_start; /* when this allocation began (its start-up included) */
	unsigned spares_left;
	double next_failure; /* on the running clock */
};

/* Train for `length` seconds from a checkpoint. Counted: the whole periods,
 * and with `keep_partial`, the compute of the period in progress. */
static void train(struct job *j, double length, int keep_partial)
{
	const struct goodput_params *p = j->p;
	double periods = floor(length / p->interval);
	double rest = length - periods * p->interval;
	double compute = p->interval - p->stall;

	j->r->productive += periods * compute;
	if (keep_partial && rest > 0)
		j->r->productive += rest < compute ? rest : compute;
	j->r->running += length;
	j->wall += length;
}

/* Leave the allocation: `pause` seconds until the next one's start-up ends. */
static void new_allocation(struct job *j, double pause)
{
	j->wall += pause;
	j->alloc_start = j->wall - j->p->startup;
	j->spares_left = j->p->spares;
}

static void on_failure(struct job *j, double at)
{
	const struct goodput_params *p = j->p;
	train(j, at, 0);
	j->r->failures++;
	j->next_failure = next_failure(&j->failures);
	int spare = p->restart == GOODPUT_FREE_SPARES ||
		    (p->restart == GOODPUT_IN_ALLOCATION && j->spares_left > 0);
	if (spare) {
		if (p->restart == GOODPUT_IN_ALLOCATION)
			j->spares_left--;
		j->r->restarts++;
		j->wall += p->recovery;
		return;
	}
	j->r->requeues++;
	if (p->restart == GOODPUT_IN_ALLOCATION)
		j->r->fallbacks++;
	new_allocation(j, p->detect + p->requeue + p->queue_wait + p->startup);
}

/* The time limit: a stop checkpoint keeps the work, then the next allocation. */
static void on_time_limit(struct job *j, double at)
{
	const struct goodput_params *p = j->p;
	train(j, at, 1);
	j->r->alloc_stops++;
	new_allocation(j, p->stall + p->requeue + p->queue_wait + p->startup);
}

int goodput_simulate(const struct goodput_params *p, struct goodput_result *r)
{
	if (goodput_invalid(p))
		return -1;
	*r = (struct goodput_result){ 0 };
	struct job j = {
		.p = p,
		.r = r,
		.failures = { .rate = p->nodes * p->node_rate,
			      .scripted = p->scripted,
			      .n_scripted = p->n_scripted },
		.spares_left = p->spares,
	};
	prng_seed(&j.failures.prng, p->seed);
	j.next_failure = next_failure(&j.failures);

	while (j.wall < p->horizon) {
		double to_end = p->horizon - j.wall;
		double to_failure = j.next_failure - r->running;
		double to_limit = INFINITY;
		if (p->alloc_limit > 0) {
			/* the stop checkpoint ends as the limit comes; after a late restart, at once */
			to_limit = j.alloc_start + p->alloc_limit - p->stall - j.wall;
			if (to_limit < 0)
				to_limit = 0;
		}
		if (to_end <= to_failure && to_end <= to_limit) {
			train(&j, to_end, 1);
			break;
		}
		if (to_failure < to_limit)
			on_failure(&j, to_failure);
		else
			on_time_limit(&j, to_limit);
	}
	r->ettr = r->productive / p->horizon * idle_share(p);
	return 0;
}

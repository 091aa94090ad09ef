/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * goodput_sim.h - a long training job under node failures, simulated: how
 * much of the nodes' time trains (the effective training time ratio, ETTR),
 * when every failure requeues the job, and when a failure restarts it inside
 * its allocation on a hot spare. bench/bench_goodput.c prints the figures;
 * doc/benchmarks.md says what is modelled and where the parameters come from.
 *
 * The model, in seconds of wall time:
 * - N nodes train, and in-allocation restart holds k hot spares besides,
 *   idle all the time: ETTR = (training kept x N) / (wall x (N + k)).
 * - Training runs in periods of `interval` (tau): tau - delta of compute,
 *   then a checkpoint stall of `stall` (delta); the checkpoint is safe at
 *   the period's end. A failure loses the whole period it hits.
 * - Failures are a Poisson process of rate N x node_rate on the job's running
 *   time (training and checkpoint stalls); recoveries, requeues and stop
 *   checkpoints see none (a first-order model's assumption too), and idle
 *   spares do not fail (at 1.6e-4 per node-hour a spare fails in 0.4% of
 *   24 h allocations).
 * - A failure either restarts in the allocation on a spare (`recovery`, R)
 *   or requeues the job: `detect` (D) + `requeue` (R_q) + `queue_wait` (Q) +
 *   `startup` (S), into a new allocation with k fresh spares. Failed nodes
 *   never come back to an allocation (Slurm cannot grow one).
 * - An allocation ends at `alloc_limit` (0: never): the job takes a stop
 *   checkpoint (delta, no work lost) and the next allocation costs
 *   R_q + Q + S, spares renewed. The window opens as the first allocation
 *   starts training; its end is no failure: the work in progress counts.
 * Training always resumes from the last checkpoint at the start of a period.
 */
#ifndef LLMP_BENCH_GOODPUT_SIM_H
#define LLMP_BENCH_GOODPUT_SIM_H

#include <stddef.h>
#include <stdint.h>

/* What a node failure does to the job. */
enum goodput_restart {
	GOODPUT_REQUEUE_ONLY,  /* every failure requeues the job (Slurm's requeue) */
	GOODPUT_IN_ALLOCATION, /* a spare takes over while one is left; then requeue */
	GOODPUT_FREE_SPARES,   /* in allocation, a spare always there and never counted: a bound */
};

struct goodput_params {
	enum goodput_restart restart;
	unsigned nodes;     /* N: nodes that train */
	unsigned spares;    /* k: hot spares per allocation (GOODPUT_IN_ALLOCATION only) */
	double node_rate;   /* lambda: failures per node and second of running time */
	double interval;    /* tau, s: from one checkpoint's end to the next's, stall included */
	double stall;       /* delta, s: a checkpoint's stall */
	double recovery;    /* R, s: restart inside the allocation */
	double detect;      /* D, s: Slurm noticing the failed node (requeue path) */
	double requeue;     /* R_q, s: the requeued job pending */
	double startup;     /* S, s: start-up and checkpoint load after a requeue */
	double queue_wait;  /* Q, s: extra queue wait per requeue */
	double alloc_limit; /* s: an allocation's time limit; 0: none */
	double horizon;     /* s: the simulated wall time */
	uint64_t seed;      /* of the failure times */
	/* Failure instants on the running-time clock, ascending, in place of the
	 * random ones (a test's known failures); NULL: random. */
	const double *scripted;
	size_t n_scripted;
};

struct goodput_result {
	double ettr;               /* productive / (horizon x nodes allocated / N) */
	double productive;         /* s of training kept */
	double running;            /* s the job ran (training and stalls) */
	unsigned long failures;    /* node failures that hit the job */
	unsigned long restarts;    /* of them, restarted inside the allocation */
	unsigned long requeues;    /* of them, requeued */
	unsigned long fallbacks;   /* requeues of GOODPUT_IN_ALLOCATION: no spare left */
	unsigned long alloc_stops; /* allocations ended by their time limit */
};

/* NULL when p is a model this file simulates, else what is wrong with it,
 * naming the field (e.g. "stall: must be below interval"). */
const char *goodput_invalid(const struct goodput_params *p);

/* Simulate; 0, or -1 when goodput_invalid(p) says why not. */
int goodput_simulate(const struct goodput_params *p, struct goodput_result *r);

/* The nodes the job holds: N, plus k for GOODPUT_IN_ALLOCATION. */
unsigned goodput_nodes_held(const struct goodput_params *p);

/* What one failure costs besides the lost work: R in the allocation,
 * D + R_q + Q + S on requeue. */
double goodput_failure_cost(const struct goodput_params *p);

/* The job's mean time between failures M = 1 / (N lambda), s (infinite at
 * lambda = 0). */
double goodput_mtbf(const struct goodput_params *p);

/* First-order ETTR: (1 - W) N / held, W = delta/tau + (tau/2 + C)/M, C the
 * failure cost; spares never run out, no allocation limit. */
double goodput_first_order(const struct goodput_params *p);

/* The same model solved exactly (a renewal argument, one period at a time):
 * (tau - delta) / ((M + C)(e^(tau/M) - 1)) N / held. What the simulator
 * converges to without allocation limit and with spares that never run out. */
double goodput_renewal(const struct goodput_params *p);

#endif

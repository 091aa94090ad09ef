/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_goodput.c - the goodput simulator of bench/bench_goodput
 * (bench/goodput_sim.h). Expected values come from hand-worked timelines
 * or from the closed forms written out here, never from a second run:
 * - failures rare against the checkpoint interval (tau/M = 0.01), no
 *   time limit or a spare always there: the simulated ETTR within 1% of the
 *   first-order form W = delta/tau + (tau/2 + C)/M, and within 0.1% of the
 *   model solved exactly, (tau - delta) / ((M + C)(e^(tau/M) - 1));
 * - no failures: (1 - delta/tau) N / (N + k), to the last bits;
 * - known failures at known times: the training kept, counted by hand;
 * - more spares never bring more requeues for want of a spare.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bench/goodput_sim.h"

/* A job of 1,000 nodes failing once per 100 checkpoint intervals. */
#define FAIR_NODES 1000
#define FAIR_TAU 600.0
#define FAIR_DELTA 6.0
#define FAIR_MTBF (100 * FAIR_TAU)

static struct goodput_params fair_params(enum goodput_restart restart, unsigned spares, uint64_t seed)
{
	return (struct goodput_params){
		.restart = restart,
		.nodes = FAIR_NODES,
		.spares = spares,
		.node_rate = 1 / (FAIR_MTBF * FAIR_NODES),
		.interval = FAIR_TAU,
		.stall = FAIR_DELTA,
		.recovery = 60,
		.detect = 150,
		.requeue = 100,
		.startup = 50,
		.horizon = 20000 * FAIR_MTBF, /* about 20,000 failures */
		.seed = seed,
	};
}

static double first_order(double cost, unsigned spares)
{
	double w = FAIR_DELTA / FAIR_TAU + (FAIR_TAU / 2 + cost) / FAIR_MTBF;
	return (1 - w) * FAIR_NODES / (FAIR_NODES + spares);
}

static double renewal(double cost, unsigned spares)
{
	return (FAIR_TAU - FAIR_DELTA) / ((FAIR_MTBF + cost) * expm1(FAIR_TAU / FAIR_MTBF)) * FAIR_NODES /
	       (FAIR_NODES + spares);
}

static void assert_relative(double got, double want, double tolerance)
{
	if (fabs(got - want) > tolerance * fabs(want))
		fail_msg("%.6f is not within %g%% of %.6f", got, 100 * tolerance, want);
}

/* cmocka's float comparison is in float: too coarse for these. */
static void assert_near(double got, double want, double tolerance)
{
	if (!(fabs(got - want) <= tolerance))
		fail_msg("%.15g is not within %g of %.15g", got, tolerance, want);
}

/* The failures counted are those of a Poisson process of rate N lambda over the running time. */
static void assert_failure_count(const struct goodput_result *r)
{
	double expected = r->running / FAIR_MTBF;
	assert_true(fabs((double)r->failures - expected) < 4 * sqrt(expected));
}

static void requeue_only_matches_closed_form(void **state)
{
	(void)state;
	double cost = 150 + 100 + 50; /* D + R_q + S */
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct goodput_params p = fair_params(GOODPUT_REQUEUE_ONLY, 0, seed);
		struct goodput_result r;
		assert_int_equal(goodput_simulate(&p, &r), 0);
		assert_relative(r.ettr, first_order(cost, 0), 0.01);
		assert_relative(r.ettr, renewal(cost, 0), 0.001);
		assert_int_equal(r.requeues, r.failures);
		assert_int_equal(r.restarts, 0);
		assert_failure_count(&r);
	}
	/* the forms bench_goodput prints beside the simulation */
	struct goodput_params p = fair_params(GOODPUT_REQUEUE_ONLY, 0, 1);
	assert_near(goodput_first_order(&p), first_order(cost, 0), 1e-12);
	assert_near(goodput_renewal(&p), renewal(cost, 0), 1e-12);
	p = fair_params(GOODPUT_IN_ALLOCATION, 50, 1);
	assert_near(goodput_first_order(&p), first_order(60, 50), 1e-12);
	assert_near(goodput_renewal(&p), renewal(60, 50), 1e-12);
}

static void free_spare_matches_closed_form(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct goodput_params p = fair_params(GOODPUT_FREE_SPARES, 0, seed);
		struct goodput_result r;
		assert_int_equal(goodput_simulate(&p, &r), 0);
		assert_relative(r.ettr, first_order(60, 0), 0.01);
		assert_relative(r.ettr, renewal(60, 0), 0.001);
		assert_int_equal(r.restarts, r.failures);
		assert_failure_count(&r);
	}
}

/* 50 spares for allocations of 20 MTBFs: running out takes 51 failures
 * where 20 are expected (about 1e-8 per allocation); a time limit costs
 * 156 s per 1.2e6 s. Both out of the closed form's sight, both far below 0.1%. */
static void spares_match_closed_form(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct goodput_params p = fair_params(GOODPUT_IN_ALLOCATION, 50, seed);
		p.alloc_limit = 20 * FAIR_MTBF;
		struct goodput_result r;
		assert_int_equal(goodput_simulate(&p, &r), 0);
		assert_relative(r.ettr, first_order(60, 50), 0.01);
		assert_relative(r.ettr, renewal(60, 50), 0.001);
		assert_int_equal(r.fallbacks, 0);
		assert_true(r.alloc_stops >= 900 && r.alloc_stops <= 1000); /* 20,000 MTBFs / 20 */
	}
}

static void no_failures_cost_only_stalls_and_spares(void **state)
{
	(void)state;
	struct goodput_params p = {
		.restart = GOODPUT_IN_ALLOCATION,
		.nodes = 64,
		.spares = 7,
		.interval = 480,
		.stall = 10,
		.recovery = 90,
		.detect = 300,
		.requeue = 131,
		.startup = 60,
		.horizon = 10 * 86400.0, /* 1,800 intervals */
		.seed = 42,
	};
	struct goodput_result r;
	assert_int_equal(goodput_simulate(&p, &r), 0);
	assert_near(r.ettr, (1 - 10.0 / 480) * 64 / 71, 1e-12);
	assert_near(r.productive, 1800 * 470.0, 1e-6);
	assert_int_equal(r.failures, 0);

	p.restart = GOODPUT_REQUEUE_ONLY;
	p.spares = 0;
	assert_int_equal(goodput_simulate(&p, &r), 0);
	assert_near(r.ettr, 1 - 10.0 / 480, 1e-12);

	/* a window ending 5 s into a stall: the last period's 470 s of compute count, the stall not */
	p.horizon += 475;
	assert_int_equal(goodput_simulate(&p, &r), 0);
	assert_near(r.productive, 1801 * 470.0, 1e-6);
}

/*
 * Allocations of 500 s, tau 100, delta 10, R_q 40, S 25, window 1,650 s:
 * the first trains 0-490 (4 periods and a last 90 s of compute: 450 kept),
 * takes its stop checkpoint to 500, pends to 540; the second starts up
 * 540-565 and trains to 1,030 (500 s after its start, less the stop's
 * 10 s): 465 s, 4 periods and 65 s (425 kept); stop to 1,040, pending to
 * 1,080; the third starts up to 1,105 and trains to 1,570: again 425 kept;
 * stop to 1,580, pending to 1,620, start-up to 1,645, 5 s of training.
 * 1305 / 1650 x 4 / 5.
 */
static void time_limit_by_hand(void **state)
{
	(void)state;
	struct goodput_params p = {
		.restart = GOODPUT_IN_ALLOCATION,
		.nodes = 4,
		.spares = 1,
		.interval = 100,
		.stall = 10,
		.requeue = 40,
		.startup = 25,
		.alloc_limit = 500,
		.horizon = 1650,
	};
	struct goodput_result r;
	assert_int_equal(goodput_simulate(&p, &r), 0);
	assert_near(r.productive, 1305, 1e-9);
	assert_near(r.ettr, 1305.0 / 1650 * 4 / 5, 1e-12);
	assert_int_equal(r.alloc_stops, 3);
	assert_near(r.running, 490 + 465 + 465 + 5, 1e-9);
}

/*
 * One failure at 250 s, tau 100, delta 10, R 30, window 1,000 s: periods
 * end at 100 and 200 (180 kept), the 50 s since are lost, the restart takes
 * 250-280, then 720 s: 7 periods and 20 s of compute (650 kept).
 * 830 / 1000 x 10 / 12. Requeue-only instead pays D 40 + R_q 50 + Q 5 +
 * S 20 = 115 s: 250-365, then 635 s: 6 periods and 35 s (575 kept).
 */
static void one_failure_by_hand(void **state)
{
	(void)state;
	static const double at[] = { 250 };
	struct goodput_params p = {
		.restart = GOODPUT_IN_ALLOCATION,
		.nodes = 10,
		.spares = 2,
		.interval = 100,
		.stall = 10,
		.recovery = 30,
		.detect = 40,
		.requeue = 50,
		.queue_wait = 5,
		.startup = 20,
		.horizon = 1000,
		.scripted = at,
		.n_scripted = 1,
	};
	struct goodput_result r;
	assert_int_equal(goodput_simulate(&p, &r), 0);
	assert_near(r.productive, 830, 1e-9);
	assert_near(r.ettr, 0.83 * 10 / 12, 1e-12);
	assert_int_equal(r.failures, 1);
	assert_int_equal(r.restarts, 1);
	assert_int_equal(r.requeues, 0);

	p.restart = GOODPUT_REQUEUE_ONLY;
	p.spares = 0;
	assert_int_equal(goodput_simulate(&p, &r), 0);
	assert_near(r.productive, 755, 1e-9);
	assert_near(r.ettr, 0.755, 1e-12);
	assert_int_equal(r.requeues, 1);
	assert_int_equal(r.fallbacks, 0);
}

/*
 * One spare, failures at running times 250, 600, 900 (R 30, requeue 115 s,
 * window 2,000 s): 250 on the spare (180 kept, back at 280); 600 at wall
 * 630, no spare: 3 periods kept (270), lost 50, requeue to 745 with a new
 * spare; 900 at wall 1045: 3 periods (270), restart to 1075; then 925 s:
 * 9 periods and 25 s (835). 1555 / 2000 x 10 / 11.
 */
static void spares_run_out_by_hand(void **state)
{
	(void)state;
	static const double at[] = { 250, 600, 900 };
	struct goodput_params p = {
		.restart = GOODPUT_IN_ALLOCATION,
		.nodes = 10,
		.spares = 1,
		.interval = 100,
		.stall = 10,
		.recovery = 30,
		.detect = 40,
		.requeue = 50,
		.queue_wait = 5,
		.startup = 20,
		.horizon = 2000,
		.scripted = at,
		.n_scripted = 3,
	};
	struct goodput_result r;
	assert_int_equal(goodput_simulate(&p, &r), 0);
	assert_near(r.productive, 1555, 1e-9);
	assert_near(r.ettr, 1555.0 / 2000 * 10 / 11, 1e-12);
	assert_near(r.running, 250 + 350 + 300 + 925, 1e-9);
	assert_int_equal(r.failures, 3);
	assert_int_equal(r.restarts, 2);
	assert_int_equal(r.requeues, 1);
	assert_int_equal(r.fallbacks, 1);
}

/* Llama 3's rate on 2,048 nodes, 54 days: 419 / (1,296 h x 2,048) per node-hour. */
static struct goodput_params llama_params(unsigned spares, double alloc_limit, uint64_t seed)
{
	return (struct goodput_params){
		.restart = GOODPUT_IN_ALLOCATION,
		.nodes = 2048,
		.spares = spares,
		.node_rate = 419.0 / (1296 * 3600.0 * 2048),
		.interval = 472,
		.stall = 10,
		.recovery = 90,
		.detect = 300,
		.requeue = 131,
		.startup = 60,
		.alloc_limit = alloc_limit,
		.horizon = 54 * 86400.0,
		.seed = seed,
	};
}

/* Without a time limit an allocation ends only when its spares are spent:
 * every (k+1)-th failure requeues, whatever the seed. */
static void without_time_limit_every_k_plus_first_failure_requeues(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 4; seed++)
		for (unsigned k = 0; k <= 30; k += 3) {
			struct goodput_params p = llama_params(k, 0, seed);
			struct goodput_result r;
			assert_int_equal(goodput_simulate(&p, &r), 0);
			assert_true(r.failures > 300);
			assert_int_equal(r.fallbacks, r.failures / (k + 1));
			assert_int_equal(r.restarts + r.requeues, r.failures);
		}
}

/* With 24 h allocations too: one spare more never means more requeues for want of one. */
static void more_spares_never_more_fallbacks(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 8; seed++) {
		unsigned long previous = (unsigned long)-1;
		for (unsigned k = 0; k <= 41; k++) {
			struct goodput_params p = llama_params(k, 24 * 3600.0, seed);
			struct goodput_result r;
			assert_int_equal(goodput_simulate(&p, &r), 0);
			if (r.fallbacks > previous)
				fail_msg("seed %lu: %u spares, %lu fallbacks; one fewer, %lu",
					 (unsigned long)seed, k, r.fallbacks, previous);
			previous = r.fallbacks;
		}
		assert_int_equal(previous, 0); /* 41 spares in 24 h, where 8 failures are expected */
	}
}

/* A million failures with nothing else to do: their count is the running
 * time over M, to 0.5% (5 standard deviations of a Poisson count). */
static void failures_come_at_n_lambda(void **state)
{
	(void)state;
	struct goodput_params p = {
		.restart = GOODPUT_REQUEUE_ONLY,
		.nodes = 500,
		.node_rate = 1 / (1000.0 * 500),
		.interval = 100,
		.horizon = 1e9,
		.seed = 7,
	};
	struct goodput_result r, again;
	assert_int_equal(goodput_simulate(&p, &r), 0);
	assert_near(r.running, 1e9, 1e-3);
	assert_near((double)r.failures, 1e6, 5e3);
	/* with failures costing nothing, half an interval of compute is lost per failure */
	assert_relative(r.ettr, 1 - 50.0 / 1000, 0.002);

	assert_int_equal(goodput_simulate(&p, &again), 0);
	assert_int_equal(again.failures, r.failures);
	p.seed = 8;
	assert_int_equal(goodput_simulate(&p, &again), 0);
	assert_int_not_equal(again.failures, r.failures);
}

static void bad_models_are_refused(void **state)
{
	(void)state;
	struct goodput_params good = llama_params(10, 0, 1), p;
	struct goodput_result r;
	assert_null(goodput_invalid(&good));

	p = good;
	p.stall = p.interval;
	assert_string_equal(goodput_invalid(&p), "stall: must be 0 or more and below interval");
	assert_int_equal(goodput_simulate(&p, &r), -1);
	p = good;
	p.nodes = 0;
	assert_non_null(strstr(goodput_invalid(&p), "nodes:"));
	p = good;
	p.restart = GOODPUT_REQUEUE_ONLY;
	assert_non_null(strstr(goodput_invalid(&p), "spares:"));
	p = good;
	p.node_rate = -1;
	assert_non_null(strstr(goodput_invalid(&p), "node_rate:"));
	p = good;
	p.alloc_limit = p.startup; /* no time left to train */
	assert_non_null(strstr(goodput_invalid(&p), "alloc_limit:"));
	p = good;
	p.recovery = NAN;
	assert_non_null(strstr(goodput_invalid(&p), "recovery:"));
	static const double backwards[] = { 20, 10 };
	p = good;
	p.scripted = backwards;
	p.n_scripted = 2;
	assert_non_null(strstr(goodput_invalid(&p), "scripted:"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(requeue_only_matches_closed_form),
		cmocka_unit_test(free_spare_matches_closed_form),
		cmocka_unit_test(spares_match_closed_form),
		cmocka_unit_test(no_failures_cost_only_stalls_and_spares),
		cmocka_unit_test(time_limit_by_hand),
		cmocka_unit_test(one_failure_by_hand),
		cmocka_unit_test(spares_run_out_by_hand),
		cmocka_unit_test(without_time_limit_every_k_plus_first_failure_requeues),
		cmocka_unit_test(more_spares_never_more_fallbacks),
		cmocka_unit_test(failures_come_at_n_lambda),
		cmocka_unit_test(bad_models_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

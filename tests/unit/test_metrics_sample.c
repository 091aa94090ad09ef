/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_metrics_sample.c - the time a communicator counts inside its calls
 * (runtime/comm/metrics.h) on a clock this test moves by hand: calls of
 * RT_METRICS_TIMED_COUNT elements or more timed exactly; smaller ones
 * sampled, each with probability 1/RT_METRICS_SAMPLE independently, so
 * that the estimate is unbiased even for a pattern that repeats with the
 * sampling's mean period (which every-Nth sampling would alias with); a
 * call that waited counted for itself, so time in calls >= time in waits.
 *
 * The bounds are six standard deviations of the estimators, worked out
 * here from the binomial and from the calls' durations, for several seeds.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "runtime/comm/metrics.h"

/* The clock metrics.h reads: moved by the calls below. */
static double fake_now;

double rt_now(void)
{
	return fake_now;
}

static const uint64_t seeds[] = { 0, 1, 42, 0xdeadbeef, UINT64_MAX };
#define NSEEDS (sizeof seeds / sizeof seeds[0])

static struct rt_metrics fresh(uint64_t seed)
{
	struct rt_metrics m = { 0 };
	rt_metrics_seed(&m, seed);
	return m;
}

/* One call of count elements lasting `seconds`, of which `wait` waiting for member 1. */
static void call(struct rt_metrics *m, size_t count, double seconds, double wait)
{
	rt_metrics_begin(m, count);
	fake_now += seconds;
	if (wait > 0)
		rt_metrics_waited(m, 1, wait);
	rt_metrics_end(m);
}

static void test_large_calls_exact(void **state)
{
	(void)state;
	struct rt_metrics m = fresh(7);
	double want = 0;
	for (int i = 0; i < 1000; i++) {
		double d = 1e-6 * (1 + i % 7); /* on exact binary steps: 1-7 us */
		call(&m, RT_METRICS_TIMED_COUNT + (size_t)i, d, 0);
		want += d;
	}
	assert_int_equal(m.ops, 1000);
	assert_true(fabs(m.seconds - want) < 1e-12);
}

/* The fraction of small calls timed is binomial(calls, 1/N); each counts for N. */
static void test_small_calls_sampled(void **state)
{
	(void)state;
	const double p = 1.0 / RT_METRICS_SAMPLE, d = 1e-6;
	const unsigned calls = 320000;
	double sd = sqrt(calls * p * (1 - p)); /* of the number timed */
	for (size_t s = 0; s < NSEEDS; s++) {
		struct rt_metrics m = fresh(seeds[s]);
		for (unsigned i = 0; i < calls; i++)
			call(&m, 2, d, 0);
		double timed = m.seconds / (RT_METRICS_SAMPLE * d);
		print_message("seed %zu: %.0f of %u small calls timed (expected %.0f +- %.0f)\n", s, timed,
			      calls, calls * p, sd);
		assert_int_equal(m.ops, calls);
		assert_true(fabs(timed - calls * p) < 6 * sd);
		assert_true(fabs(timed - round(timed)) < 1e-6); /* whole calls, each for N */
	}
}

/*
 * Per period of RT_METRICS_SAMPLE calls, the first lasts 100 us and the
 * others 1 us. Sampling every Nth call would count N x 100 or N x 1 us per
 * period; the random sample is unbiased, with variance
 * N (1 - 1/N) sum(t_i^2) per period.
 */
static void test_no_aliasing(void **state)
{
	(void)state;
	const unsigned period = RT_METRICS_SAMPLE, periods = 100000;
	const double slow = 100e-6, fast = 1e-6, n = RT_METRICS_SAMPLE;
	double truth = periods * (slow + (period - 1) * fast);
	double sd = sqrt(periods * n * (1 - 1 / n) * (slow * slow + (period - 1) * fast * fast));
	for (size_t s = 0; s < NSEEDS; s++) {
		struct rt_metrics m = fresh(seeds[s]);
		for (unsigned k = 0; k < periods; k++)
			for (unsigned i = 0; i < period; i++)
				call(&m, 1, i == 0 ? slow : fast, 0);
		print_message("seed %zu: %.4f s counted, %.4f s spent (sd %.4f)\n", s, m.seconds, truth, sd);
		assert_true(fabs(m.seconds - truth) < 6 * sd);
		assert_true(fabs(m.seconds - truth) < 0.1 * truth);
	}
}

/*
 * A small call that waited is counted once, exactly: by its whole time
 * when it was sampled, by its wait otherwise; the calls that did not wait
 * are sampled as before. Here half the calls wait 5 us of 6.
 */
static void test_waits_counted_exactly(void **state)
{
	(void)state;
	const unsigned calls = 200000;
	const double d = 6e-6, w = 5e-6, p = 1.0 / RT_METRICS_SAMPLE;
	for (size_t s = 0; s < NSEEDS; s++) {
		struct rt_metrics m = fresh(seeds[s]);
		m.last_times = (uint64_t[2]){ 0, 0 };
		m.last_seconds = (double[2]){ 0, 0 };
		for (unsigned i = 0; i < calls; i++)
			call(&m, 8, d, i % 2 ? w : 0);
		assert_int_equal(m.waits, calls / 2);
		assert_int_equal(m.last_times[1], calls / 2);
		assert_true(fabs(m.wait_seconds - calls / 2 * w) < 1e-9);
		assert_true(m.seconds >= m.wait_seconds);
		/* waited: between all waits and all their time; the rest sampled */
		double rest_sd = RT_METRICS_SAMPLE * d * sqrt(calls / 2 * p * (1 - p));
		double lo = calls / 2 * w + calls / 2 * d - 6 * rest_sd;
		double hi = calls / 2 * d + calls / 2 * d + 6 * rest_sd;
		print_message("seed %zu: %.4f s counted, in [%.4f, %.4f]\n", s, m.seconds, lo, hi);
		assert_true(m.seconds > lo && m.seconds < hi);
		m.last_times = NULL;
		m.last_seconds = NULL;
	}
}

/* The gaps between timed small calls: geometric, mean N - 1, no gap more likely than the one before. */
static void test_gaps_geometric(void **state)
{
	(void)state;
	enum { DRAWS = 100000, BINS = 8 };
	const double p = 1.0 / RT_METRICS_SAMPLE;
	struct rt_metrics m = fresh(3);
	unsigned bins[BINS] = { 0 };
	double sum = 0;
	for (int i = 0; i < DRAWS; i++) {
		uint32_t g = rt_metrics_gap(&m);
		sum += g;
		if (g < BINS)
			bins[g]++;
	}
	double mean = sum / DRAWS, sd_mean = sqrt((1 - p) / (p * p) / DRAWS);
	print_message("mean gap %.3f (expected %.3f +- %.3f)\n", mean, 1 / p - 1, sd_mean);
	assert_true(fabs(mean - (1 / p - 1)) < 6 * sd_mean);
	for (int g = 0; g < BINS; g++) {
		double want = DRAWS * p * pow(1 - p, g), sd = sqrt(want * (1 - p * pow(1 - p, g)));
		assert_true(fabs(bins[g] - want) < 6 * sd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_large_calls_exact), cmocka_unit_test(test_small_calls_sampled),
		cmocka_unit_test(test_no_aliasing),       cmocka_unit_test(test_waits_counted_exactly),
		cmocka_unit_test(test_gaps_geometric),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

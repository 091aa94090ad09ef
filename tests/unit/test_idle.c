/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_idle.c - how a waiting rank lets its core go (runtime/comm/idle.h):
 * a wait stuck for less than 2 ms only yields; from 2 ms it sleeps a
 * sixteenth of how long it has been stuck, at most 0.5 ms. The expected
 * sleeps are worked out by hand from that rule.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, clock_gettime */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "runtime/comm/idle.h"

static void short_waits_only_yield(void **state)
{
	(void)state;
	assert_int_equal(rt_idle_sleep_ns(0), 0);
	assert_int_equal(rt_idle_sleep_ns(1e-6), 0);
	assert_int_equal(rt_idle_sleep_ns(1.999e-3), 0);
	assert_int_equal(rt_idle_sleep_ns(-1.0), 0); /* a clock read before the wait began */
	assert_int_equal(rt_idle_sleep_ns(NAN), 0);
}

static void long_waits_sleep_a_sixteenth(void **state)
{
	(void)state;
	/* 2 ms / 16 = 125 us; 4 ms / 16 = 250 us; 6.4 ms / 16 = 400 us */
	assert_int_equal(rt_idle_sleep_ns(2e-3), 125000);
	assert_int_equal(rt_idle_sleep_ns(4e-3), 250000);
	assert_int_equal(rt_idle_sleep_ns(6.4e-3), 400000);
}

static void sleeps_are_capped(void **state)
{
	(void)state;
	/* 8 ms / 16 = 500 us, the cap; beyond it, the cap */
	assert_int_equal(rt_idle_sleep_ns(8e-3), 500000);
	assert_int_equal(rt_idle_sleep_ns(1.0), 500000);
	assert_int_equal(rt_idle_sleep_ns(3600.0), 500000);
	assert_int_equal(rt_idle_sleep_ns(INFINITY), 500000);
}

/* A wait ends at most a sixteenth late (before the kernel's timer slack), and never sleeps less as it ages. */
static void lateness_is_bounded(void **state)
{
	(void)state;
	long last = 0;
	for (double s = 1e-4; s < 10.0; s *= 1.01) {
		long ns = rt_idle_sleep_ns(s);
		assert_true(ns >= last);
		assert_true((double)ns <= s * 1e9 / 16 + 1);
		last = ns;
	}
}

/* rt_idle sleeps for at least what it says (nanosleep's promise), and only yields on a short wait. */
static void rt_idle_sleeps(void **state)
{
	(void)state;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	rt_idle(1.0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double slept = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
	assert_true(slept >= 500e-6);
	rt_idle(0); /* a yield: returns */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(short_waits_only_yield), cmocka_unit_test(long_waits_sleep_a_sixteenth),
		cmocka_unit_test(sleeps_are_capped),      cmocka_unit_test(lateness_is_bounded),
		cmocka_unit_test(rt_idle_sleeps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_plan.c - how fast the planner answers, at the scale of a large job.
 *
 * Figures, not a test: world 131072 with tp=8,pp=16,cp=4,ep=8. Goals (issue
 * 2, on a 2-core machine): one rank's groups in under 50 us, the whole table
 * in under 2 s. Each figure is the best of several repetitions, so a noisy
 * neighbour inflates it less.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <llmp/llmp_json.h>

#define WORLD 131072u
#define SPEC "tp=8,pp=16,cp=4,ep=8"
#define REPEATS 5

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint64_t sink; /* keeps the compiler from dropping the work */

/* All 16 kinds of group for `count` ranks spread over the world; seconds per rank. */
static double one_rank(const llmp_plan *plan, uint32_t count)
{
	uint32_t *m = malloc(WORLD * sizeof *m), n;
	uint64_t sum = 0;
	double t = now();

	for (uint32_t i = 0; i < count; i++) {
		uint32_t rank = (uint32_t)(((uint64_t)i * 2654435761u) % WORLD);
		for (int g = 0; g < LLMP_NGROUPS; g++) {
			llmp_plan_group_of(plan, (enum llmp_group)g, rank, m, WORLD, &n, NULL);
			sum += n ? m[n - 1] : 0;
		}
	}
	t = (now() - t) / count;
	sink += sum;
	free(m);
	return t;
}

/* Every group of every kind, members into a buffer; returns members seen. */
static uint64_t whole_table(const llmp_plan *plan, double *seconds)
{
	uint32_t *m = malloc(WORLD * sizeof *m), n;
	uint64_t members = 0, sum = 0;
	double t = now();

	for (int g = 0; g < LLMP_NGROUPS; g++) {
		uint32_t count = llmp_plan_group_count(plan, (enum llmp_group)g);
		for (uint32_t i = 0; i < count; i++) {
			llmp_plan_group(plan, (enum llmp_group)g, i, m, WORLD, &n);
			members += n;
			sum += m[0];
		}
	}
	*seconds = now() - t;
	sink += sum;
	free(m);
	return members;
}

/* Seconds to write the JSON table to /dev/null (its size: see json_bytes). */
static double json_table(const llmp_plan *plan)
{
	FILE *devnull = fopen("/dev/null", "w");
	double t = now();

	llmp_plan_write_json(plan, LLMP_JSON_ALL_RANKS, devnull);
	t = now() - t;
	fclose(devnull);
	return t;
}

static long json_bytes(const llmp_plan *plan)
{
	FILE *f = tmpfile();
	long bytes;

	llmp_plan_write_json(plan, LLMP_JSON_ALL_RANKS, f);
	bytes = ftell(f);
	fclose(f);
	return bytes;
}

static double best(double a, double b)
{
	return a < b ? a : b;
}

int main(void)
{
	char msg[LLMP_MSG_MAX];
	llmp_spec spec;
	llmp_plan *plan = NULL;
	double create = 1e9, rank = 1e9, table = 1e9, json = 1e9, s;
	uint64_t members = 0;

	if (llmp_spec_parse(SPEC, &spec, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, "bench: %s\n", msg);
		return 1;
	}
	for (int r = 0; r < REPEATS; r++) {
		double t = now();
		llmp_plan_destroy(plan);
		if (llmp_plan_create(&spec, WORLD, 8, &plan, msg, sizeof msg) != LLMP_OK) {
			fprintf(stderr, "bench: %s\n", msg);
			return 1;
		}
		create = best(create, now() - t);
		rank = best(rank, one_rank(plan, 100000));
		members = whole_table(plan, &s);
		table = best(table, s);
		json = best(json, json_table(plan));
	}

	printf("planner benchmark: world %u, %s (dp=%u, expert-dp=%u), best of %d\n", WORLD, SPEC,
	       llmp_plan_size(plan, LLMP_AXIS_DP), llmp_plan_size(plan, LLMP_AXIS_EDP), REPEATS);
	printf("  %-44s %12.3f us\n", "plan creation (with locality check)", create * 1e6);
	printf("  %-44s %12.3f us   (goal < 50 us)\n", "one rank's groups, all 16 kinds", rank * 1e6);
	printf("  %-44s %12.3f ms   (goal < 2000 ms; %llu members)\n",
	       "whole table, every group of every kind", table * 1e3, (unsigned long long)members);
	printf("  %-44s %12.3f ms   (%.1f MB)\n", "whole table as JSON to /dev/null", json * 1e3,
	       (double)json_bytes(plan) / 1e6);
	llmp_plan_destroy(plan);
	return 0;
}

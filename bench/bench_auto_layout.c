/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_auto_layout.c - how fast `--parallel auto` answers (the goal: under
 * 1 s for 16,384 GPUs; doc/benchmarks.md). Figures, not a test: every
 * layout of each preset model enumerated and scored on 16,384 (and 1,024)
 * H100s, the best of REPEATS runs each, with how many layouts were valid
 * and how many fit.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <time.h>

#include "planner/auto_layout.h"

#define REPEATS 5

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
	static const char *const models[] = { "llama3-8b",      "llama3-70b",   "llama3-405b", "gpt3-175b",
					      "nemotron4-340b", "mixtral-8x7b", "deepseek-v3" };
	static const unsigned worlds[] = { 1024, 16384 };
	char msg[LLMP_MSG_MAX], chosen[160];
	struct gpu_desc g;
	if (gpu_desc_parse("h100", &g, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, "bench_auto_layout: %s\n", msg);
		return 1;
	}
	printf("--parallel auto on H100s: best of %d runs\n", REPEATS);
	printf("%-16s %7s %9s %8s %10s  %s\n", "model", "GPUs", "valid", "fit", "seconds", "chosen");
	double worst = 0;
	for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
		struct model_desc m;
		if (model_desc_parse(models[i], &m, msg, sizeof msg) != LLMP_OK) {
			fprintf(stderr, "bench_auto_layout: %s\n", msg);
			return 1;
		}
		for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
			double best = 1e30;
			struct chooser_result r = { 0 };
			for (int k = 0; k < REPEATS; k++) {
				chooser_result_free(&r);
				double t = now();
				if (chooser_run(&m, &g, worlds[w], &r, msg, sizeof msg) != LLMP_OK) {
					fprintf(stderr, "bench_auto_layout: %s on %u: %s\n", models[i],
						worlds[w], msg);
					return 1;
				}
				t = now() - t;
				if (t < best)
					best = t;
			}
			step_layout_format(&r.all[0].layout, chosen, sizeof chosen);
			printf("%-16s %7u %9zu %8zu %10.4f  %s%s\n", models[i], worlds[w], r.n, r.fitting,
			       best, chosen, r.fitting ? "" : " (does not fit)");
			if (worlds[w] == 16384 && best > worst)
				worst = best;
			chooser_result_free(&r);
		}
	}
	printf("slowest at 16,384 GPUs: %.4f s (goal: under 1 s)\n", worst);
	return 0;
}

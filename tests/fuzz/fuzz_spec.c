/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_spec.c - libFuzzer target for the layout grammar and the planner.
 *
 * For any bytes: parsing must not crash, leak or hit undefined behaviour;
 * an accepted spec must print and re-parse to itself; a plan built from it
 * must put every queried rank inside its own groups, in increasing order.
 * The same bytes go through the --llm-checkpoint grammar too: a checked
 * checkpoint spec must print within its bound and re-parse to itself.
 * Built with clang -fsanitize=fuzzer by `make fuzz`, and replayed over the
 * stored corpus by tests/fuzz/fuzz_replay in `make check`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp_ckpt_spec.h>
#include <llmp/llmp_plan.h>
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const llmp_spec *spec)
{
	char text[LLMP_SPEC_MAX_LEN * 2];
	char msg[LLMP_MSG_MAX];
	llmp_spec again;

	size_t n = llmp_spec_format(spec, text, sizeof text);
	CHECK(n < sizeof text);
	CHECK(llmp_spec_parse_partial(text, &again, msg, sizeof msg) == LLMP_OK);
	CHECK(llmp_spec_equal(spec, &again));
}

/* Query a few ranks' groups and check each holds its rank, ascending. */
static void check_plan(const llmp_spec *spec, uint32_t world, uint32_t per_node)
{
	char msg[LLMP_MSG_MAX];
	llmp_plan *plan;

	if (llmp_plan_create(spec, world, per_node, &plan, msg, sizeof msg) != LLMP_OK)
		return;
	uint32_t *m = malloc(world * sizeof *m);
	CHECK(m != NULL);
	for (uint32_t r = 0; r < world; r += 1 + world / 7) {
		for (int g = 0; g < LLMP_NGROUPS; g++) {
			uint32_t n, index, seen = 0;
			CHECK(llmp_plan_group_of(plan, (enum llmp_group)g, r, m, world, &n, &index) ==
			      LLMP_OK);
			for (uint32_t i = 0; i < n; i++) {
				CHECK(m[i] < world);
				CHECK(i == 0 || m[i] > m[i - 1]);
				seen += m[i] == r;
			}
			CHECK(n == 0 || seen == 1);
			CHECK(n == 0 || index < llmp_plan_group_count(plan, (enum llmp_group)g));
		}
	}
	free(m);
	llmp_plan_destroy(plan);
}

static void check_ckpt(const char *text)
{
	char msg[LLMP_MSG_MAX], out[LLMP_CKPT_SPEC_MAX_LEN + 1];
	llmp_ckpt_spec spec, again;

	if (llmp_ckpt_spec_parse_partial(text, &spec, msg, sizeof msg) != LLMP_OK || spec.help ||
	    llmp_ckpt_spec_check(&spec, msg, sizeof msg) != LLMP_OK)
		return;
	int n = llmp_ckpt_spec_format(&spec, out, sizeof out);
	CHECK(n > 0 && (size_t)n < sizeof out);
	CHECK(llmp_ckpt_spec_parse_partial(out, &again, msg, sizeof msg) == LLMP_OK);
	CHECK(llmp_ckpt_spec_check(&again, msg, sizeof msg) == LLMP_OK);
	CHECK(strcmp(again.dir, spec.dir) == 0 && again.every == spec.every &&
	      again.every_minutes == spec.every_minutes && again.keep == spec.keep &&
	      again.max_restarts == spec.max_restarts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[LLMP_MSG_MAX];
	llmp_spec spec;

	if (size > 1024)
		return 0;
	char *text = malloc(size + 1);
	CHECK(text != NULL);
	memcpy(text, data, size);
	text[size] = '\0';

	if (llmp_spec_parse_partial(text, &spec, msg, sizeof msg) == LLMP_OK) {
		check_round_trip(&spec);
		if (llmp_spec_check(&spec, msg, sizeof msg) == LLMP_OK && !spec.help) {
			/* A world the layout can fit: its product times a small dp. */
			uint64_t world = (uint64_t)spec.size[LLMP_DIM_TP] * spec.size[LLMP_DIM_PP] *
					 spec.size[LLMP_DIM_CP] *
					 (spec.size[LLMP_DIM_DP] ? spec.size[LLMP_DIM_DP] : 1 + size % 3);
			if (world <= 4096) {
				check_plan(&spec, (uint32_t)world, 0);
				check_plan(&spec, (uint32_t)world, 1 + (uint32_t)(size % 8));
			}
		}
	}
	check_ckpt(text);
	free(text);
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plan.c - fitting a layout to a world: derived sizes, every rejection
 * with its numbers, locality warnings, coordinates and the API's edges.
 * Megatron compatibility of the groups themselves is test_plan_megatron.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <llmp/llmp_plan.h>

/* Parse and fit, expecting success. */
static llmp_plan *plan_of(const char *text, uint32_t world, uint32_t per_node)
{
	char msg[LLMP_MSG_MAX] = "";
	llmp_spec spec;
	llmp_plan *plan = NULL;

	if (llmp_spec_parse(text, &spec, msg, sizeof msg) != LLMP_OK ||
	    llmp_plan_create(&spec, world, per_node, &plan, msg, sizeof msg) != LLMP_OK)
		fail_msg("'%s' on %u: %s", text, world, msg);
	return plan;
}

/* Parse and fit, expecting the fit to fail with status; returns the message. */
static const char *rejection(const char *text, uint32_t world, llmp_status status)
{
	static char msg[LLMP_MSG_MAX];
	llmp_spec spec;
	llmp_plan *plan = (llmp_plan *)&spec; /* must be reset to NULL */

	msg[0] = '\0';
	assert_int_equal(llmp_spec_parse(text, &spec, msg, sizeof msg), LLMP_OK);
	assert_int_equal(llmp_plan_create(&spec, world, 0, &plan, msg, sizeof msg), status);
	assert_null(plan);
	return msg;
}

static void derives_dp_and_expert_dp(void **state)
{
	(void)state;
	llmp_plan *p = plan_of("tp=8,pp=4,cp=2", 64, 0);
	assert_int_equal(llmp_plan_size(p, LLMP_AXIS_DP), 1);
	assert_int_equal(llmp_plan_size(p, LLMP_AXIS_ETP), 8); /* defaults to tp */
	assert_int_equal(llmp_plan_size(p, LLMP_AXIS_EDP), 2); /* 64 / (8*1*4) */
	llmp_plan_destroy(p);

	p = plan_of("tp=2,pp=2,ep=4,etp=1", 64, 0);
	assert_int_equal(llmp_plan_size(p, LLMP_AXIS_DP), 16);
	assert_int_equal(llmp_plan_size(p, LLMP_AXIS_EP), 4);
	assert_int_equal(llmp_plan_size(p, LLMP_AXIS_EDP), 8); /* 64 / (1*4*2) */
	assert_int_equal(llmp_plan_world(p), 64);
	llmp_plan_destroy(p);

	p = plan_of("dp=4,tp=2", 8, 0);
	assert_int_equal(llmp_plan_size(p, LLMP_AXIS_DP), 4);
	llmp_plan_destroy(p);
}

static void keeps_order_and_vpp(void **state)
{
	(void)state;
	llmp_plan *p = plan_of("tp=2,pp=2,vpp=3", 8, 0);
	assert_string_equal(llmp_plan_order(p), "tp-cp-ep-dp-pp");
	assert_int_equal(llmp_plan_vpp(p), 3);
	llmp_plan_destroy(p);

	p = plan_of("tp=2,pp=2,order=tp-pp-dp", 8, 0);
	/* cp and ep, both 1, are appended in Megatron's sequence. */
	assert_string_equal(llmp_plan_order(p), "tp-pp-dp-ep-cp");
	assert_int_equal(llmp_plan_vpp(p), 0);
	llmp_plan_destroy(p);
}

static void rejects_model_not_dividing_world(void **state)
{
	(void)state;
	assert_string_equal(rejection("tp=8,pp=3", 64, LLMP_ERR_LAYOUT),
			    "tp*pp*cp = 8*3*1 = 24 does not divide 64 tasks");
	/* Larger than the world is the same failure. */
	assert_string_equal(rejection("tp=8,pp=4,cp=4", 64, LLMP_ERR_LAYOUT),
			    "tp*pp*cp = 8*4*4 = 128 does not divide 64 tasks");
}

static void rejects_explicit_dp_mismatch(void **state)
{
	(void)state;
	const char *msg = rejection("tp=2,dp=2", 16, LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "tp*pp*cp*dp = 2*1*1*2 = 4"));
	assert_non_null(strstr(msg, "16 tasks"));
	assert_non_null(strstr(msg, "dp=8")); /* what auto would give */
}

static void rejects_expert_grid_not_dividing(void **state)
{
	(void)state;
	/* dense fits (dp=12), expert grid etp*ep*pp = 2*8*1 = 16 does not divide 24 */
	assert_string_equal(rejection("tp=2,ep=8", 24, LLMP_ERR_LAYOUT),
			    "expert grid: etp*ep*pp = 2*8*1 = 16 does not divide 24 tasks");
}

static void rejects_order_omitting_derived_dp(void **state)
{
	(void)state;
	const char *msg = rejection("tp=2,order=tp-cp-ep-pp", 8, LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "leaves out dp"));
	assert_non_null(strstr(msg, "dp is 4 on 8 tasks"));
	/* Dense dp = 1 but expert-dp = 2: still needs dp in the order. */
	msg = rejection("tp=2,etp=1,order=tp-cp-ep-pp", 2, LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "expert-dp is 2"));
}

static void rejects_unequal_dp_unless_pp_last(void **state)
{
	(void)state;
	/* dp = 16/(2*2) = 4, expert-dp = 16/(2*4*2) = 1, pp not last. */
	const char *msg = rejection("tp=2,ep=4,pp=2,order=tp-cp-ep-pp-dp", 16, LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "order tp-cp-ep-pp-dp"));
	assert_non_null(strstr(msg, "dp (4) and expert-dp (1)"));
	/* The same sizes are fine with pp last, as given by the user. */
	llmp_plan_destroy(plan_of("tp=2,ep=4,pp=2,order=tp-cp-ep-dp-pp", 16, 0));
	llmp_plan_destroy(plan_of("tp=2,ep=4,pp=2,order=tp-ep-dp-pp", 16, 0));
}

static void rejects_pipeline_groups_differing_between_grids(void **state)
{
	(void)state;
	/* dp = expert-dp = 2, but pp's stride is tp = 2 densely, etp = 4 for experts. */
	const char *msg = rejection("tp=2,cp=2,pp=2,etp=4,order=tp-pp-cp-ep-dp", 16, LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "order tp-pp-cp-ep-dp"));
	assert_non_null(strstr(msg, "ranks 4 apart"));
	assert_non_null(strstr(msg, "ranks 2 apart"));
	/* Equal strides (tp*cp = etp*ep = 4) are accepted. */
	llmp_plan_destroy(plan_of("tp=2,cp=2,ep=2,pp=2,order=tp-cp-ep-pp-dp", 16, 0));
}

static void rejects_bad_world_and_arguments(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	llmp_spec spec;
	llmp_plan *plan;

	llmp_spec_init(&spec);
	assert_int_equal(llmp_plan_create(&spec, 0, 0, &plan, msg, sizeof msg), LLMP_ERR_RANGE);
	assert_non_null(strstr(msg, "world size 0"));
	assert_int_equal(llmp_plan_create(&spec, LLMP_WORLD_MAX + 1, 0, &plan, msg, sizeof msg),
			 LLMP_ERR_RANGE);
	assert_int_equal(llmp_plan_create(NULL, 4, 0, &plan, msg, sizeof msg), LLMP_ERR_ARG);
	assert_int_equal(llmp_plan_create(&spec, 4, 0, NULL, msg, sizeof msg), LLMP_ERR_ARG);
	spec.help = true;
	assert_int_equal(llmp_plan_create(&spec, 4, 0, &plan, msg, sizeof msg), LLMP_ERR_SPEC);
	/* A spec assembled by hand still gets the cross-key checks. */
	llmp_spec_init(&spec);
	spec.vpp = 2;
	assert_int_equal(llmp_plan_create(&spec, 4, 0, &plan, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_non_null(strstr(msg, "vpp=2"));
	/* A NULL message buffer is allowed. */
	llmp_spec_init(&spec);
	assert_int_equal(llmp_plan_create(&spec, 0, 0, &plan, NULL, 0), LLMP_ERR_RANGE);
}

static void warns_when_groups_span_nodes(void **state)
{
	(void)state;
	llmp_plan *p = plan_of("tp=8", 16, 4);
	assert_int_equal(llmp_plan_warning_count(p), 1);
	assert_string_equal(llmp_plan_warning(p, 0), "tp groups of 8 ranks span nodes of 4 tasks (e.g. ranks "
						     "0..7 on 2 nodes): tensor-parallel traffic will cross "
						     "the network");
	assert_null(llmp_plan_warning(p, 1));
	llmp_plan_destroy(p);

	/* tp=4 fits a node of 4; cp groups {0,4}, {1,5}... span two nodes. */
	p = plan_of("tp=4,cp=2", 16, 4);
	assert_int_equal(llmp_plan_warning_count(p), 1);
	assert_non_null(strstr(llmp_plan_warning(p, 0), "cp groups of 2 ranks"));
	llmp_plan_destroy(p);

	/* Experts: etp=1, ep=8 on nodes of 4. */
	p = plan_of("ep=8,etp=1", 16, 4);
	assert_int_equal(llmp_plan_warning_count(p), 1);
	assert_non_null(strstr(llmp_plan_warning(p, 0), "expert-parallel"));
	llmp_plan_destroy(p);

	/* Nodes of 6 ranks with tp=4: group [4..7] spans nodes 0 and 1 even
	 * though group [0..3] does not; the check must look past group 0. */
	p = plan_of("tp=4", 24, 6);
	assert_int_equal(llmp_plan_warning_count(p), 1);
	assert_non_null(strstr(llmp_plan_warning(p, 0), "ranks 4..7"));
	llmp_plan_destroy(p);

	/* Unknown tasks per node: no locality advice. */
	p = plan_of("tp=8", 16, 0);
	assert_int_equal(llmp_plan_warning_count(p), 0);
	llmp_plan_destroy(p);

	/* Everything node-local: no warning. */
	p = plan_of("tp=4,cp=2,pp=2", 16, 8);
	assert_int_equal(llmp_plan_warning_count(p), 0);
	llmp_plan_destroy(p);
}

/* Coordinates against the mixed-radix formula, computed here by hand. */
static void coords_follow_the_order(void **state)
{
	(void)state;
	const uint32_t tp = 2, cp = 3, dp = 2, pp = 2, ep = 3, etp = 1;
	const uint32_t world = tp * cp * dp * pp;     /* 24 */
	const uint32_t edp = world / (etp * ep * pp); /* 4 */
	llmp_plan *p = plan_of("tp=2,cp=3,pp=2,ep=3,etp=1", world, 0);
	uint32_t c[LLMP_NAXES];

	for (uint32_t r = 0; r < world; r++) {
		assert_int_equal(llmp_plan_coords(p, r, c), LLMP_OK);
		/* dense: r = tp + 2*(cp + 3*(dp + 2*pp)) */
		assert_int_equal(c[LLMP_AXIS_TP], r % tp);
		assert_int_equal(c[LLMP_AXIS_CP], r / tp % cp);
		assert_int_equal(c[LLMP_AXIS_DP], r / (tp * cp) % dp);
		assert_int_equal(c[LLMP_AXIS_PP], r / (tp * cp * dp));
		/* expert: r = etp + 1*(ep + 3*(edp + 4*pp)) */
		assert_int_equal(c[LLMP_AXIS_ETP], 0);
		assert_int_equal(c[LLMP_AXIS_EP], r % ep);
		assert_int_equal(c[LLMP_AXIS_EDP], r / ep % edp);
	}
	assert_int_equal(llmp_plan_coords(p, world, c), LLMP_ERR_RANGE);
	assert_int_equal(llmp_plan_coords(p, 0, NULL), LLMP_ERR_ARG);
	llmp_plan_destroy(p);

	/* pp first in the order: pp varies fastest. */
	p = plan_of("tp=2,pp=4,order=pp-tp-cp-ep-dp", 16, 0);
	assert_int_equal(llmp_plan_coords(p, 7, c), LLMP_OK);
	assert_int_equal(c[LLMP_AXIS_PP], 7 % 4);
	assert_int_equal(c[LLMP_AXIS_TP], 7 / 4 % 2);
	assert_int_equal(c[LLMP_AXIS_DP], 7 / 8);
	llmp_plan_destroy(p);
}

static void embeddings_hold_first_and_last_stage(void **state)
{
	(void)state;
	llmp_plan *p = plan_of("pp=4", 8, 0); /* dp=2: pp groups {r, r+2, r+4, r+6} */
	uint32_t m[4], n, index;

	assert_int_equal(llmp_plan_group_size(p, LLMP_GROUP_EMBEDDING), 2);
	assert_int_equal(llmp_plan_group_of(p, LLMP_GROUP_EMBEDDING, 6, m, 4, &n, &index), LLMP_OK);
	assert_int_equal(n, 2);
	assert_int_equal(m[0], 0);
	assert_int_equal(m[1], 6);
	assert_int_equal(index, 0);
	/* A middle stage holds no embedding. */
	assert_int_equal(llmp_plan_group_of(p, LLMP_GROUP_EMBEDDING, 3, m, 4, &n, &index), LLMP_OK);
	assert_int_equal(n, 0);
	assert_int_equal(index, LLMP_NO_GROUP);
	assert_int_equal(llmp_plan_group_of(p, LLMP_GROUP_POSITION_EMBEDDING, 6, m, 4, &n, NULL), LLMP_OK);
	assert_int_equal(n, 0);
	assert_int_equal(llmp_plan_group_of(p, LLMP_GROUP_POSITION_EMBEDDING, 1, m, 4, &n, &index), LLMP_OK);
	assert_int_equal(n, 1);
	assert_int_equal(m[0], 1);
	assert_int_equal(index, 1);
	llmp_plan_destroy(p);

	/* Without pipeline parallelism every rank is its own embedding group. */
	p = plan_of("tp=2", 4, 0);
	assert_int_equal(llmp_plan_group_size(p, LLMP_GROUP_EMBEDDING), 1);
	assert_int_equal(llmp_plan_group_of(p, LLMP_GROUP_EMBEDDING, 3, m, 4, &n, NULL), LLMP_OK);
	assert_int_equal(n, 1);
	assert_int_equal(m[0], 3);
	llmp_plan_destroy(p);
}

static void group_calls_check_their_arguments(void **state)
{
	(void)state;
	llmp_plan *p = plan_of("tp=4", 8, 0);
	uint32_t m[4], n = 99, index = 0;

	assert_int_equal(llmp_plan_group_count(p, LLMP_GROUP_TP), 2);
	assert_int_equal(llmp_plan_group(p, LLMP_GROUP_TP, 2, m, 4, &n), LLMP_ERR_RANGE);
	assert_int_equal(n, 0);
	assert_int_equal(llmp_plan_group(p, LLMP_GROUP_TP, 0, m, 3, &n), LLMP_ERR_ARG);
	assert_int_equal(llmp_plan_group(p, LLMP_NGROUPS, 0, m, 4, &n), LLMP_ERR_ARG);
	assert_int_equal(llmp_plan_group_of(p, LLMP_GROUP_TP, 8, m, 4, &n, &index), LLMP_ERR_RANGE);
	assert_int_equal(index, LLMP_NO_GROUP);
	assert_int_equal(llmp_plan_group_of(NULL, LLMP_GROUP_TP, 0, m, 4, &n, NULL), LLMP_ERR_ARG);
	assert_int_equal(llmp_plan_group_count(NULL, LLMP_GROUP_TP), 0);
	assert_int_equal(llmp_plan_group_size(p, LLMP_NGROUPS), 0);
	llmp_plan_destroy(p);
	llmp_plan_destroy(NULL);
}

static void names_round_trip(void **state)
{
	(void)state;
	static const char *const expected[LLMP_NGROUPS] = {
		"tp",    "pp",       "cp",        "dp",
		"ep",    "dp-cp",    "tp-cp",     "tp-pp",
		"tp-dp", "tp-dp-cp", "expert-tp", "expert-dp",
		"tp-ep", "tp-ep-pp", "embedding", "position-embedding",
	};
	for (int g = 0; g < LLMP_NGROUPS; g++) {
		assert_string_equal(llmp_group_name((enum llmp_group)g), expected[g]);
		assert_int_equal(llmp_group_from_name(expected[g]), g);
	}
	assert_int_equal(llmp_group_from_name("mp"), -1);
	assert_int_equal(llmp_group_from_name(NULL), -1);
	assert_string_equal(llmp_axis_name(LLMP_AXIS_EDP), "expert-dp");
	assert_string_equal(llmp_strerror(LLMP_ERR_LAYOUT), "layout does not fit the job");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(derives_dp_and_expert_dp),
		cmocka_unit_test(keeps_order_and_vpp),
		cmocka_unit_test(rejects_model_not_dividing_world),
		cmocka_unit_test(rejects_explicit_dp_mismatch),
		cmocka_unit_test(rejects_expert_grid_not_dividing),
		cmocka_unit_test(rejects_order_omitting_derived_dp),
		cmocka_unit_test(rejects_unequal_dp_unless_pp_last),
		cmocka_unit_test(rejects_pipeline_groups_differing_between_grids),
		cmocka_unit_test(rejects_bad_world_and_arguments),
		cmocka_unit_test(warns_when_groups_span_nodes),
		cmocka_unit_test(coords_follow_the_order),
		cmocka_unit_test(embeddings_hold_first_and_last_stage),
		cmocka_unit_test(group_calls_check_their_arguments),
		cmocka_unit_test(names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

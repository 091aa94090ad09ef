/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_plan.c - fit a parsed layout to a world: derive dp and expert-dp,
 * check divisibility and Megatron's constraints, lay out both grids.
 *
 * Every rejection carries the numbers that fail, because the user reading it
 * chose them in a job script and has to change one of them.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "plan_internal.h"

static const char *const axis_names[LLMP_NAXES] = {
	"tp", "cp", "ep", "dp", "pp", "expert-tp", "expert-dp",
};

const char *llmp_axis_name(enum llmp_axis axis)
{
	return (unsigned)axis < LLMP_NAXES ? axis_names[axis] : "?";
}

/* Sizes of one grid by order position, and the strides they imply. */
static void grid_layout(struct llmp_grid *grid, const enum llmp_dim order[LLMP_NDIMS],
			const uint32_t by_dim[LLMP_NDIMS])
{
	uint32_t stride = 1;

	for (unsigned p = 0; p < LLMP_NDIMS; p++) {
		grid->size[p] = by_dim[order[p]];
		grid->stride[p] = stride;
		stride *= grid->size[p];
	}
}

/* Divisibility of the world by the dense and expert products; derives dp, expert-dp. */
static llmp_status fit_sizes(llmp_plan *plan, char *msg, size_t msglen)
{
	const llmp_spec *s = &plan->spec;
	uint64_t tp = s->size[LLMP_DIM_TP], pp = s->size[LLMP_DIM_PP];
	uint64_t cp = s->size[LLMP_DIM_CP], ep = s->size[LLMP_DIM_EP];
	uint64_t etp = s->etp ? s->etp : tp;
	uint64_t world = plan->world;
	uint64_t model = tp * pp * cp, expert = etp * ep * pp;

	if (world % model)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, msglen,
				 "tp*pp*cp = %llu*%llu*%llu = %llu does not divide %llu tasks",
				 (unsigned long long)tp, (unsigned long long)pp, (unsigned long long)cp,
				 (unsigned long long)model, (unsigned long long)world);
	uint64_t dp_fill = world / model; /* what dp=auto gives */
	if (s->size[LLMP_DIM_DP] != PLAN_DP_FILL && s->size[LLMP_DIM_DP] != dp_fill)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, msglen,
				 "tp*pp*cp*dp = %llu*%llu*%llu*%u = %llu, but the job has "
				 "%llu tasks (dp=auto would give dp=%llu)",
				 (unsigned long long)tp, (unsigned long long)pp, (unsigned long long)cp,
				 s->size[LLMP_DIM_DP], (unsigned long long)(model * s->size[LLMP_DIM_DP]),
				 (unsigned long long)world, (unsigned long long)dp_fill);
	if (world % expert)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, msglen,
				 "expert grid: etp*ep*pp = %llu*%llu*%llu = %llu does not divide %llu tasks",
				 (unsigned long long)etp, (unsigned long long)ep, (unsigned long long)pp,
				 (unsigned long long)expert, (unsigned long long)world);

	plan->size[LLMP_AXIS_TP] = (uint32_t)tp;
	plan->size[LLMP_AXIS_CP] = (uint32_t)cp;
	plan->size[LLMP_AXIS_EP] = (uint32_t)ep;
	plan->size[LLMP_AXIS_DP] = (uint32_t)dp_fill;
	plan->size[LLMP_AXIS_PP] = (uint32_t)pp;
	plan->size[LLMP_AXIS_ETP] = (uint32_t)etp;
	plan->size[LLMP_AXIS_EDP] = (uint32_t)(world / expert);
	return LLMP_OK;
}

/* Lay out both grids by the order, and check what only the world reveals. */
static llmp_status fit_order(llmp_plan *plan, char *msg, size_t msglen)
{
	const llmp_spec *s = &plan->spec;
	const uint32_t *z = plan->size;
	size_t off = 0;

	memcpy(plan->order, s->order, sizeof plan->order);
	for (unsigned p = 0; p < LLMP_NDIMS; p++) {
		plan->pos[plan->order[p]] = p;
		off += (size_t)snprintf(plan->order_text + off, sizeof plan->order_text - off, "%s%s",
					p ? "-" : "", llmp_dim_name(plan->order[p]));
	}

	/* dp is only known now; an order that leaves it out needs it to be 1. */
	if (s->order_len && plan->pos[LLMP_DIM_DP] >= s->order_len &&
	    (z[LLMP_AXIS_DP] > 1 || z[LLMP_AXIS_EDP] > 1))
		return llmp_fail(LLMP_ERR_LAYOUT, msg, msglen,
				 "the order leaves out dp, but %s is %u on %u tasks",
				 z[LLMP_AXIS_DP] > 1 ? "dp" : "expert-dp",
				 z[LLMP_AXIS_DP] > 1 ? z[LLMP_AXIS_DP] : z[LLMP_AXIS_EDP], plan->world);

	const uint32_t dense[LLMP_NDIMS] = {
		[LLMP_DIM_TP] = z[LLMP_AXIS_TP], [LLMP_DIM_CP] = z[LLMP_AXIS_CP], [LLMP_DIM_EP] = 1,
		[LLMP_DIM_DP] = z[LLMP_AXIS_DP], [LLMP_DIM_PP] = z[LLMP_AXIS_PP],
	};
	const uint32_t expert[LLMP_NDIMS] = {
		[LLMP_DIM_TP] = z[LLMP_AXIS_ETP], [LLMP_DIM_CP] = 1,
		[LLMP_DIM_EP] = z[LLMP_AXIS_EP],  [LLMP_DIM_DP] = z[LLMP_AXIS_EDP],
		[LLMP_DIM_PP] = z[LLMP_AXIS_PP],
	};
	grid_layout(&plan->dense, plan->order, dense);
	grid_layout(&plan->expert, plan->order, expert);

	/* Megatron asserts that unless the order as given ends with pp,
	 * attention and experts have the same data-parallel size. */
	bool pp_last = s->order_len == 0 || s->order[s->order_len - 1] == LLMP_DIM_PP;
	if (z[LLMP_AXIS_PP] > 1 && !pp_last && z[LLMP_AXIS_DP] != z[LLMP_AXIS_EDP])
		return llmp_fail(LLMP_ERR_LAYOUT, msg, msglen,
				 "order %s: with pp not last, dp (%u) and expert-dp (%u) "
				 "must be equal; put pp last in the order, or choose etp*ep = tp*cp",
				 plan->order_text, z[LLMP_AXIS_DP], z[LLMP_AXIS_EDP]);

	/* Both grids must agree on the pipeline groups (Megatron asserts it):
	 * they do exactly when pp has the same stride in both. */
	unsigned pp = plan->pos[LLMP_DIM_PP];
	if (z[LLMP_AXIS_PP] > 1 && plan->dense.stride[pp] != plan->expert.stride[pp])
		return llmp_fail(LLMP_ERR_LAYOUT, msg, msglen,
				 "order %s: the pipeline groups of the expert grid (ranks %u "
				 "apart) differ from those of the dense grid (ranks %u apart); "
				 "put pp last in the order, or choose sizes whose product "
				 "before pp is the same in both grids",
				 plan->order_text, plan->expert.stride[pp], plan->dense.stride[pp]);
	return LLMP_OK;
}

static void warn(llmp_plan *plan, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(llmp_plan *plan, const char *fmt, ...)
{
	if (plan->nwarnings == LLMP_PLAN_MAX_WARNINGS)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(plan->warnings[plan->nwarnings++], LLMP_MSG_MAX, fmt, ap);
	va_end(ap);
}

/*
 * Nodes hold consecutive ranks, so a group sits on one node exactly when its
 * smallest and largest members do. Stops at the first group that spans nodes:
 * O(number of groups) at worst, done once per plan.
 */
static void warn_if_spanning(llmp_plan *plan, enum llmp_group group, uint32_t tasks_per_node,
			     const char *traffic)
{
	struct llmp_group_shape shape;

	plan_group_shape_of(plan, group, &shape);
	if (shape.size < 2)
		return;
	for (uint32_t i = 0; i < shape.count; i++) {
		uint32_t lo = plan_group_shape_base(&shape, i), hi = lo + shape.extent;
		if (lo / tasks_per_node == hi / tasks_per_node)
			continue;
		warn(plan,
		     "%s groups of %u ranks span nodes of %u tasks (e.g. ranks %u..%u "
		     "on %u nodes): %s traffic will cross the network",
		     llmp_group_name(group), shape.size, tasks_per_node, lo, hi,
		     hi / tasks_per_node - lo / tasks_per_node + 1, traffic);
		return;
	}
}

llmp_status llmp_plan_create(const llmp_spec *spec, uint32_t world, uint32_t tasks_per_node, llmp_plan **out,
			     char *msg, size_t msglen)
{
	if (!out)
		return llmp_fail(LLMP_ERR_ARG, msg, msglen, "nowhere to return the plan");
	*out = NULL;
	if (!spec)
		return llmp_fail(LLMP_ERR_ARG, msg, msglen, "no layout given");
	if (spec->help)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "'help' is not a layout");
	llmp_status st = llmp_spec_check(spec, msg, msglen);
	if (st != LLMP_OK)
		return st;
	if (world == 0 || world > LLMP_WORLD_MAX)
		return llmp_fail(LLMP_ERR_RANGE, msg, msglen, "world size %u is outside 1..%u", world,
				 LLMP_WORLD_MAX);

	llmp_plan *plan = calloc(1, sizeof *plan);
	if (!plan)
		return llmp_fail(LLMP_ERR_NOMEM, msg, msglen, "out of memory for a plan");
	plan->spec = *spec;
	plan->world = world;
	st = fit_sizes(plan, msg, msglen);
	if (st == LLMP_OK)
		st = fit_order(plan, msg, msglen);
	if (st != LLMP_OK) {
		free(plan);
		return st;
	}
	if (tasks_per_node) {
		warn_if_spanning(plan, LLMP_GROUP_TP, tasks_per_node, "tensor-parallel");
		warn_if_spanning(plan, LLMP_GROUP_CP, tasks_per_node, "context-parallel");
		warn_if_spanning(plan, LLMP_GROUP_EP, tasks_per_node, "expert-parallel");
	}
	*out = plan;
	return LLMP_OK;
}

void llmp_plan_destroy(llmp_plan *plan)
{
	free(plan);
}

uint32_t llmp_plan_world(const llmp_plan *plan)
{
	return plan ? plan->world : 0;
}

uint32_t llmp_plan_size(const llmp_plan *plan, enum llmp_axis axis)
{
	return plan && (unsigned)axis < LLMP_NAXES ? plan->size[axis] : 0;
}

uint32_t llmp_plan_vpp(const llmp_plan *plan)
{
	return plan ? plan->spec.vpp : 0;
}

const char *llmp_plan_order(const llmp_plan *plan)
{
	return plan ? plan->order_text : "";
}

const llmp_spec *llmp_plan_spec(const llmp_plan *plan)
{
	return plan ? &plan->spec : NULL;
}

size_t llmp_plan_warning_count(const llmp_plan *plan)
{
	return plan ? plan->nwarnings : 0;
}

const char *llmp_plan_warning(const llmp_plan *plan, size_t i)
{
	return plan && i < plan->nwarnings ? plan->warnings[i] : NULL;
}

static uint32_t coord(const struct llmp_grid *grid, unsigned pos, uint32_t rank)
{
	return (rank / grid->stride[pos]) % grid->size[pos];
}

llmp_status llmp_plan_coords(const llmp_plan *plan, uint32_t rank, uint32_t coords[LLMP_NAXES])
{
	if (!plan || !coords)
		return LLMP_ERR_ARG;
	if (rank >= plan->world)
		return LLMP_ERR_RANGE;
	const unsigned *pos = plan->pos;
	coords[LLMP_AXIS_TP] = coord(&plan->dense, pos[LLMP_DIM_TP], rank);
	coords[LLMP_AXIS_CP] = coord(&plan->dense, pos[LLMP_DIM_CP], rank);
	coords[LLMP_AXIS_DP] = coord(&plan->dense, pos[LLMP_DIM_DP], rank);
	coords[LLMP_AXIS_PP] = coord(&plan->dense, pos[LLMP_DIM_PP], rank);
	coords[LLMP_AXIS_EP] = coord(&plan->expert, pos[LLMP_DIM_EP], rank);
	coords[LLMP_AXIS_ETP] = coord(&plan->expert, pos[LLMP_DIM_TP], rank);
	coords[LLMP_AXIS_EDP] = coord(&plan->expert, pos[LLMP_DIM_DP], rank);
	return LLMP_OK;
}

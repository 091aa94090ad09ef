/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_internal.h - the inside of an llmp_plan, shared by llmp_plan.c (fitting
 * a spec to a world) and llmp_groups.c (answering groups). Not installed.
 */
#ifndef LLMP_PLAN_INTERNAL_H
#define LLMP_PLAN_INTERNAL_H

#include <llmp/llmp_plan.h>

/*
 * One of Megatron's two rank generators, laid out by the order: position p
 * of the order has size[p] and stride[p] = product of the sizes before it
 * (the leftmost dimension varies fastest).
 */
struct llmp_grid {
	uint32_t size[LLMP_NDIMS];
	uint32_t stride[LLMP_NDIMS];
};

#define LLMP_PLAN_MAX_WARNINGS 4

/*
 * dp=auto, as a spec holds it (spec.size[LLMP_DIM_DP], llmp_spec.h): data
 * parallel fills the world, dp = world / (tp*pp*cp) (fit_sizes). Not the
 * chooser's whole layout (--parallel auto, auto_layout.h) nor zero=auto.
 */
#define PLAN_DP_FILL 0u

struct llmp_plan {
	llmp_spec spec;
	uint32_t world;
	uint32_t size[LLMP_NAXES];
	enum llmp_dim order[LLMP_NDIMS]; /* complete order */
	unsigned pos[LLMP_NDIMS];        /* position of each dimension in order */
	char order_text[32];
	struct llmp_grid dense;  /* tp x cp x (ep=1) x dp x pp */
	struct llmp_grid expert; /* etp x (cp=1) x ep x edp x pp */
	size_t nwarnings;
	char warnings[LLMP_PLAN_MAX_WARNINGS][LLMP_MSG_MAX];
};

/*
 * A group kind seen as a mask over the order positions of a grid: members of
 * a group differ only along masked positions.
 */
struct llmp_group_shape {
	const struct llmp_grid *grid;
	unsigned mask;   /* bit p set: order position p varies inside a group */
	uint32_t size;   /* members of one group */
	uint32_t count;  /* groups of this shape */
	uint32_t extent; /* largest member minus smallest, within a group */
};

/* The shape of a group kind; embedding kinds answer the shape of pp. */
void plan_group_shape_of(const llmp_plan *plan, enum llmp_group group, struct llmp_group_shape *shape);

/* Smallest member (the first one) of group number index of a shape. */
uint32_t plan_group_shape_base(const struct llmp_group_shape *shape, uint32_t index);

#endif /* LLMP_PLAN_INTERNAL_H */

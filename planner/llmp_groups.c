/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_groups.c - members of each group, by number or by rank.
 *
 * Megatron-Core's generate_masked_orthogonal_rank_groups() numbers the groups
 * of a kind by the unmasked dimensions and the members inside a group by the
 * masked ones, both leftmost-fastest. Both numberings are plain mixed-radix
 * arithmetic, so a single group is computed directly from its number or from
 * one of its ranks, in O(members), without listing the others.
 */
#include <string.h>

#include "plan_internal.h"

enum grid_kind { DENSE, EXPERT };
enum group_form { PLAIN, EMBEDDING, POSITION_EMBEDDING };

#define BIT(d) (1u << (d))

/* Each kind: its name, the grid it lives in and the dimensions it spans. */
static const struct {
	const char *name;
	enum grid_kind grid;
	unsigned dims;
	enum group_form form;
} kinds[LLMP_NGROUPS] = {
	[LLMP_GROUP_TP] = { "tp", DENSE, BIT(LLMP_DIM_TP), PLAIN },
	[LLMP_GROUP_PP] = { "pp", DENSE, BIT(LLMP_DIM_PP), PLAIN },
	[LLMP_GROUP_CP] = { "cp", DENSE, BIT(LLMP_DIM_CP), PLAIN },
	[LLMP_GROUP_DP] = { "dp", DENSE, BIT(LLMP_DIM_DP), PLAIN },
	[LLMP_GROUP_EP] = { "ep", EXPERT, BIT(LLMP_DIM_EP), PLAIN },
	[LLMP_GROUP_DP_CP] = { "dp-cp", DENSE, BIT(LLMP_DIM_DP) | BIT(LLMP_DIM_CP), PLAIN },
	[LLMP_GROUP_TP_CP] = { "tp-cp", DENSE, BIT(LLMP_DIM_TP) | BIT(LLMP_DIM_CP), PLAIN },
	[LLMP_GROUP_TP_PP] = { "tp-pp", DENSE, BIT(LLMP_DIM_TP) | BIT(LLMP_DIM_PP), PLAIN },
	[LLMP_GROUP_TP_DP] = { "tp-dp", DENSE, BIT(LLMP_DIM_TP) | BIT(LLMP_DIM_DP), PLAIN },
	[LLMP_GROUP_TP_DP_CP] = { "tp-dp-cp", DENSE, BIT(LLMP_DIM_TP) | BIT(LLMP_DIM_DP) | BIT(LLMP_DIM_CP),
				  PLAIN },
	[LLMP_GROUP_EXPERT_TP] = { "expert-tp", EXPERT, BIT(LLMP_DIM_TP), PLAIN },
	[LLMP_GROUP_EXPERT_DP] = { "expert-dp", EXPERT, BIT(LLMP_DIM_DP), PLAIN },
	[LLMP_GROUP_TP_EP] = { "tp-ep", EXPERT, BIT(LLMP_DIM_TP) | BIT(LLMP_DIM_EP), PLAIN },
	[LLMP_GROUP_TP_EP_PP] = { "tp-ep-pp", EXPERT, BIT(LLMP_DIM_TP) | BIT(LLMP_DIM_EP) | BIT(LLMP_DIM_PP),
				  PLAIN },
	[LLMP_GROUP_EMBEDDING] = { "embedding", DENSE, BIT(LLMP_DIM_PP), EMBEDDING },
	[LLMP_GROUP_POSITION_EMBEDDING] = { "position-embedding", DENSE, BIT(LLMP_DIM_PP),
					    POSITION_EMBEDDING },
};

const char *llmp_group_name(enum llmp_group group)
{
	return (unsigned)group < LLMP_NGROUPS ? kinds[group].name : "?";
}

int llmp_group_from_name(const char *name)
{
	for (int g = 0; name && g < LLMP_NGROUPS; g++)
		if (strcmp(kinds[g].name, name) == 0)
			return g;
	return -1;
}

void plan_group_shape_of(const llmp_plan *plan, enum llmp_group group, struct llmp_group_shape *shape)
{
	const struct llmp_grid *grid = kinds[group].grid == DENSE ? &plan->dense : &plan->expert;

	shape->grid = grid;
	shape->mask = 0;
	shape->size = 1;
	shape->extent = 0;
	for (int d = 0; d < LLMP_NDIMS; d++) {
		if (!(kinds[group].dims & BIT(d)))
			continue;
		unsigned p = plan->pos[d];
		shape->mask |= BIT(p);
		shape->size *= grid->size[p];
		shape->extent += (grid->size[p] - 1) * grid->stride[p];
	}
	shape->count = plan->world / shape->size;
}

uint32_t plan_group_shape_base(const struct llmp_group_shape *shape, uint32_t index)
{
	uint32_t base = 0;

	for (unsigned p = 0; p < LLMP_NDIMS; p++) {
		if (shape->mask & BIT(p))
			continue;
		base += (index % shape->grid->size[p]) * shape->grid->stride[p];
		index /= shape->grid->size[p];
	}
	return base;
}

/* Write the members of the group whose smallest rank is base, odometer-style. */
static void list_members(const struct llmp_group_shape *shape, uint32_t base, uint32_t *members)
{
	const struct llmp_grid *grid = shape->grid;
	uint32_t digit[LLMP_NDIMS] = { 0 };
	uint32_t rank = base;

	for (uint32_t i = 0; i < shape->size; i++) {
		members[i] = rank;
		for (unsigned p = 0; p < LLMP_NDIMS; p++) {
			if (!(shape->mask & BIT(p)))
				continue;
			rank += grid->stride[p];
			if (++digit[p] < grid->size[p])
				break;
			rank -= grid->size[p] * grid->stride[p];
			digit[p] = 0;
		}
	}
}

uint32_t llmp_plan_group_count(const llmp_plan *plan, enum llmp_group group)
{
	struct llmp_group_shape shape;

	if (!plan || (unsigned)group >= LLMP_NGROUPS)
		return 0;
	plan_group_shape_of(plan, group, &shape);
	return shape.count;
}

uint32_t llmp_plan_group_size(const llmp_plan *plan, enum llmp_group group)
{
	struct llmp_group_shape shape;

	if (!plan || (unsigned)group >= LLMP_NGROUPS)
		return 0;
	plan_group_shape_of(plan, group, &shape);
	switch (kinds[group].form) {
	case EMBEDDING: return shape.size > 1 ? 2 : 1;
	case POSITION_EMBEDDING: return 1;
	case PLAIN: break;
	}
	return shape.size;
}

/*
 * Fill members for the pipeline group starting at base, in the given form.
 * Embedding keeps the first and last stage (Megatron: ranks[0], ranks[-1]),
 * position-embedding the first.
 */
static llmp_status emit(const struct llmp_group_shape *shape, enum group_form form, uint32_t base,
			uint32_t *members, uint32_t cap, uint32_t *n)
{
	uint32_t want = shape->size;

	if (form == EMBEDDING)
		want = shape->size > 1 ? 2 : 1;
	else if (form == POSITION_EMBEDDING)
		want = 1;
	if (cap < want)
		return LLMP_ERR_ARG;
	if (form == PLAIN)
		list_members(shape, base, members);
	else {
		members[0] = base;
		if (want == 2)
			members[1] = base + shape->extent;
	}
	*n = want;
	return LLMP_OK;
}

llmp_status llmp_plan_group(const llmp_plan *plan, enum llmp_group group, uint32_t index, uint32_t *members,
			    uint32_t cap, uint32_t *n)
{
	struct llmp_group_shape shape;

	if (!plan || !members || !n || (unsigned)group >= LLMP_NGROUPS)
		return LLMP_ERR_ARG;
	*n = 0;
	plan_group_shape_of(plan, group, &shape);
	if (index >= shape.count)
		return LLMP_ERR_RANGE;
	return emit(&shape, kinds[group].form, plan_group_shape_base(&shape, index), members, cap, n);
}

llmp_status llmp_plan_group_of(const llmp_plan *plan, enum llmp_group group, uint32_t rank, uint32_t *members,
			       uint32_t cap, uint32_t *n, uint32_t *index)
{
	struct llmp_group_shape shape;
	uint32_t base = rank, number = 0, place = 1;

	if (!plan || !members || !n || (unsigned)group >= LLMP_NGROUPS)
		return LLMP_ERR_ARG;
	*n = 0;
	if (index)
		*index = LLMP_NO_GROUP;
	if (rank >= plan->world)
		return LLMP_ERR_RANGE;

	plan_group_shape_of(plan, group, &shape);
	const struct llmp_grid *grid = shape.grid;
	uint32_t stage = 0; /* coordinate along the masked dimension, for embeddings */
	for (unsigned p = 0; p < LLMP_NDIMS; p++) {
		uint32_t c = (rank / grid->stride[p]) % grid->size[p];
		if (shape.mask & BIT(p)) {
			base -= c * grid->stride[p];
			stage = c;
		} else {
			number += c * place;
			place *= grid->size[p];
		}
	}

	enum group_form form = kinds[group].form;
	uint32_t last = shape.size - 1;
	if ((form == EMBEDDING && stage != 0 && stage != last) || (form == POSITION_EMBEDDING && stage != 0))
		return LLMP_OK; /* this stage holds no embedding */

	llmp_status st = emit(&shape, form, base, members, cap, n);
	if (st == LLMP_OK && index)
		*index = number;
	return st;
}

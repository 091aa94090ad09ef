/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_plan.h - a layout fitted to a job: sizes, coordinates and groups.
 *
 * A plan is a parsed spec plus a world size. It derives dp (and, for
 * experts, expert-dp), checks that everything divides, and answers, for any
 * rank, its coordinates and the members of each of its groups, without ever
 * enumerating the world: a rank's group costs O(size of that group).
 *
 * The numbering is Megatron-Core's RankGenerator: a mixed-radix number over
 * the order, leftmost dimension fastest. Dense groups (tp cp dp pp and their
 * combinations) come from the grid tp x cp x dp x pp; expert groups from the
 * grid expert-tp x ep x expert-dp x pp, both laid out by the same order.
 */
#ifndef LLMP_PLAN_H
#define LLMP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "llmp_spec.h"
#include "llmp_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LLMP_WORLD_MAX (1u << 24) /* largest world a plan accepts */

/* The sizes and coordinates of a plan. */
enum llmp_axis {
	LLMP_AXIS_TP,
	LLMP_AXIS_CP,
	LLMP_AXIS_EP,
	LLMP_AXIS_DP,
	LLMP_AXIS_PP,
	LLMP_AXIS_ETP, /* expert tensor parallel */
	LLMP_AXIS_EDP, /* expert data parallel */
	LLMP_NAXES
};

/* The groups, named as Megatron-Core names them. */
enum llmp_group {
	LLMP_GROUP_TP,
	LLMP_GROUP_PP,
	LLMP_GROUP_CP,
	LLMP_GROUP_DP,
	LLMP_GROUP_EP,
	LLMP_GROUP_DP_CP,
	LLMP_GROUP_TP_CP,
	LLMP_GROUP_TP_PP,
	LLMP_GROUP_TP_DP,
	LLMP_GROUP_TP_DP_CP,
	LLMP_GROUP_EXPERT_TP,
	LLMP_GROUP_EXPERT_DP,
	LLMP_GROUP_TP_EP,
	LLMP_GROUP_TP_EP_PP,
	LLMP_GROUP_EMBEDDING,          /* first and last stage of each pipeline */
	LLMP_GROUP_POSITION_EMBEDDING, /* first stage of each pipeline */
	LLMP_NGROUPS
};

#define LLMP_NO_GROUP UINT32_MAX /* group index of a rank outside every group */

typedef struct llmp_plan llmp_plan;

/* "tp", "cp", "ep", "dp", "pp", "expert-tp", "expert-dp". */
const char *llmp_axis_name(enum llmp_axis axis);

/* "tp", ..., "position-embedding"; and back (-1 for an unknown name). */
const char *llmp_group_name(enum llmp_group group);
int llmp_group_from_name(const char *name);

/*
 * Fit spec to a world of `world` ranks. tasks_per_node, when not 0, is the
 * number of consecutive ranks on each node: it enables warnings for tp, cp
 * and ep groups that would span nodes. On failure *plan is NULL and msg says
 * what does not fit, with the numbers.
 */
llmp_status llmp_plan_create(const llmp_spec *spec, uint32_t world, uint32_t tasks_per_node, llmp_plan **plan,
			     char *msg, size_t msglen);
void llmp_plan_destroy(llmp_plan *plan);

uint32_t llmp_plan_world(const llmp_plan *plan);
uint32_t llmp_plan_size(const llmp_plan *plan, enum llmp_axis axis);
uint32_t llmp_plan_vpp(const llmp_plan *plan);      /* 0 when not set */
const char *llmp_plan_order(const llmp_plan *plan); /* complete, e.g. "tp-cp-ep-dp-pp" */
const llmp_spec *llmp_plan_spec(const llmp_plan *plan);

/* Advice that does not stop the job, e.g. a tp group spanning nodes. */
size_t llmp_plan_warning_count(const llmp_plan *plan);
const char *llmp_plan_warning(const llmp_plan *plan, size_t i);

/* The coordinate of rank along every axis. */
llmp_status llmp_plan_coords(const llmp_plan *plan, uint32_t rank, uint32_t coords[LLMP_NAXES]);

/* How many groups of this kind the job has, and the most members one has. */
uint32_t llmp_plan_group_count(const llmp_plan *plan, enum llmp_group group);
uint32_t llmp_plan_group_size(const llmp_plan *plan, enum llmp_group group);

/*
 * Members of group number `index` (0 <= index < group_count), in Megatron's
 * order, into members[0..cap); *n gets the member count. Iterating index over
 * every kind streams the whole table.
 */
llmp_status llmp_plan_group(const llmp_plan *plan, enum llmp_group group, uint32_t index, uint32_t *members,
			    uint32_t cap, uint32_t *n);

/*
 * The group of this kind that rank belongs to: its members as above and, if
 * index is not NULL, its number. A rank in no group of the kind (a middle
 * pipeline stage has no embedding group) gets *n = 0 and LLMP_NO_GROUP.
 */
llmp_status llmp_plan_group_of(const llmp_plan *plan, enum llmp_group group, uint32_t rank, uint32_t *members,
			       uint32_t cap, uint32_t *n, uint32_t *index);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_PLAN_H */

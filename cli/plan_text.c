/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_text.c - the human-readable form of a plan, for `llmp plan`.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "llmp_cli.h"

#define WRAP 78 /* columns before a list of groups wraps */

static void write_summary(const llmp_plan *plan, uint32_t nodes, FILE *out)
{
	char spec[LLMP_SPEC_MAX_LEN + 1];
	uint32_t world = llmp_plan_world(plan);

	llmp_spec_format(llmp_plan_spec(plan), spec, sizeof spec);
	fprintf(out, "layout:   %s\n", spec[0] ? spec : "(defaults)");
	fprintf(out, "world:    %u ranks", world);
	if (nodes)
		fprintf(out, " = %u nodes x %u tasks", nodes, world / nodes);
	fprintf(out, "\norder:    %s (leftmost varies fastest)\n", llmp_plan_order(plan));
	fprintf(out, "sizes:    tp=%u pp=%u cp=%u dp=%u ep=%u expert-tp=%u expert-dp=%u",
		llmp_plan_size(plan, LLMP_AXIS_TP), llmp_plan_size(plan, LLMP_AXIS_PP),
		llmp_plan_size(plan, LLMP_AXIS_CP), llmp_plan_size(plan, LLMP_AXIS_DP),
		llmp_plan_size(plan, LLMP_AXIS_EP), llmp_plan_size(plan, LLMP_AXIS_ETP),
		llmp_plan_size(plan, LLMP_AXIS_EDP));
	if (llmp_plan_vpp(plan))
		fprintf(out, " vpp=%u", llmp_plan_vpp(plan));
	fputc('\n', out);
	for (size_t i = 0; i < llmp_plan_warning_count(plan); i++)
		fprintf(out, "warning:  %s\n", llmp_plan_warning(plan, i));
}

/* "[0,1,2]" into out; returns the columns used. */
static int write_members(const uint32_t *m, uint32_t n, FILE *out)
{
	int cols = fprintf(out, "[");
	for (uint32_t i = 0; i < n; i++)
		cols += fprintf(out, i ? ",%" PRIu32 : "%" PRIu32, m[i]);
	return cols + fprintf(out, "]");
}

static int write_table(const llmp_plan *plan, uint32_t *m, FILE *out)
{
	for (int g = 0; g < LLMP_NGROUPS; g++) {
		enum llmp_group kind = (enum llmp_group)g;
		uint32_t count = llmp_plan_group_count(plan, kind), n;
		int col = fprintf(out, "%s (%u groups of %u):", llmp_group_name(kind), count,
				  llmp_plan_group_size(plan, kind));
		for (uint32_t i = 0; i < count; i++) {
			if (llmp_plan_group(plan, kind, i, m, llmp_plan_world(plan), &n))
				return -1;
			if (col > WRAP) {
				fputs("\n   ", out);
				col = 3;
			}
			col += fprintf(out, " ");
			col += write_members(m, n, out);
		}
		fputc('\n', out);
	}
	return 0;
}

static int write_rank(const llmp_plan *plan, uint32_t rank, uint32_t *m, FILE *out)
{
	uint32_t coords[LLMP_NAXES], n, index;

	llmp_plan_coords(plan, rank, coords);
	fprintf(out, "rank:     %u\ncoords:  ", rank);
	for (int a = 0; a < LLMP_NAXES; a++)
		fprintf(out, " %s=%u", llmp_axis_name((enum llmp_axis)a), coords[a]);
	fputs("\ngroups:\n", out);
	for (int g = 0; g < LLMP_NGROUPS; g++) {
		enum llmp_group kind = (enum llmp_group)g;
		if (llmp_plan_group_of(plan, kind, rank, m, llmp_plan_world(plan), &n, &index))
			return -1;
		fprintf(out, "  %-19s ", llmp_group_name(kind));
		if (n == 0) {
			fputs("-  (this pipeline stage holds no embedding)\n", out);
			continue;
		}
		fprintf(out, "#%-6u", index);
		write_members(m, n, out);
		fputc('\n', out);
	}
	return 0;
}

int cli_plan_write_text(const llmp_plan *plan, uint32_t nodes, int64_t rank, FILE *out)
{
	uint32_t *members = malloc(llmp_plan_world(plan) * sizeof *members);
	int rc;

	if (!members)
		return -1;
	write_summary(plan, nodes, out);
	if (rank >= 0)
		rc = write_rank(plan, (uint32_t)rank, members, out);
	else
		rc = write_table(plan, members, out);
	free(members);
	return rc || ferror(out) ? -1 : 0;
}

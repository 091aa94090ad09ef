/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_svg.c - `llmp plan --topology FILE --svg OUT`: a picture of the
 * placement for an admin. One row per leaf switch (hosts under no switch
 * last), one box per host, one cell per rank in GPU order; a cell's colour
 * is its pipeline stage, its text the rank, its tooltip the rank's
 * coordinates, GPU and HCA. Plain SVG 1.1, no script, readable by any browser.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "llmp_cli.h"
#include "planner/placement.h"
#include "topology/topo.h"

#define CELL 28
#define GAP 6
#define HOST_LABEL 14
#define ROW_LABEL 120
#define CELLS_PER_LINE 8

/* Text for SVG: the names are checked printable ASCII; only XML's own characters change. */
static void put_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out);
		}
	}
}

int cli_plan_write_svg(const struct topo *t, const struct plan_placement *p, const llmp_plan *plan,
		       char *const *hosts, size_t nhosts, FILE *out)
{
	uint32_t pp = llmp_plan_size(plan, LLMP_AXIS_PP),
		 *ranks_of = calloc(nhosts ? nhosts : 1, sizeof *ranks_of),
		 *first = calloc(nhosts ? nhosts : 1, sizeof *first);
	long *leaf = malloc((nhosts ? nhosts : 1) * sizeof *leaf);
	if (!ranks_of || !first || !leaf) {
		free(ranks_of);
		free(first);
		free(leaf);
		return -1;
	}
	/* A host's ranks are consecutive in p->rank (placement.c): its first and how many. */
	uint32_t most = 1;
	for (uint32_t r = 0; r < p->world; r++) {
		uint32_t h = p->rank[r].host;
		if (ranks_of[h]++ == 0)
			first[h] = r;
		if (ranks_of[h] > most)
			most = ranks_of[h];
	}
	/* The rows: the leaf switch of each host, hosts under none (or with no rank) last. */
	for (size_t h = 0; h < nhosts; h++)
		leaf[h] = ranks_of[h] ? t->nodes[p->rank[first[h]].node].leaf : -1;
	/* Rows: each switch that is some host's leaf, in switch order, then "no switch". */
	size_t rows = 0, widest = 0;
	for (long s = -1; s < (long)t->nswitches; s++) {
		size_t n = 0;
		for (size_t h = 0; h < nhosts; h++)
			n += leaf[h] == s;
		rows += n > 0;
		if (n > widest)
			widest = n;
	}
	unsigned per_line = most < CELLS_PER_LINE ? most : CELLS_PER_LINE;
	unsigned lines = (most + per_line - 1) / per_line;
	unsigned box_w = per_line * CELL + 2 * GAP, box_h = lines * CELL + HOST_LABEL + 2 * GAP;
	unsigned width = ROW_LABEL + (unsigned)widest * (box_w + GAP) + GAP,
		 height = (unsigned)rows * (box_h + GAP) + GAP + 24;
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%u\" height=\"%u\" "
		"font-family=\"sans-serif\" font-size=\"10\">\n",
		width, height);
	char spec[LLMP_SPEC_MAX_LEN + 1];
	if (llmp_spec_format(llmp_plan_spec(plan), spec, sizeof spec) == 0)
		snprintf(spec, sizeof spec, "dp=auto");
	fprintf(out, "<text x=\"%d\" y=\"16\" font-size=\"12\">", GAP);
	put_text(out, spec);
	fprintf(out, " (order %s): %u ranks on %zu hosts; colour: pipeline stage</text>\n",
		llmp_plan_order(plan), p->world, nhosts);
	unsigned y = 24;
	for (long s = 0; s <= (long)t->nswitches; s++) {
		long sw = s < (long)t->nswitches ? s : -1; /* switches first, hosts under none last */
		size_t col = 0;
		for (size_t h = 0; h < nhosts; h++) {
			if (leaf[h] != sw)
				continue;
			if (col == 0) {
				fprintf(out, "<g class=\"leaf\"><text x=\"%d\" y=\"%u\" font-size=\"12\">",
					GAP, y + box_h / 2);
				put_text(out, sw >= 0 ? t->switches[sw].name : "(no switch)");
				fputs("</text></g>\n", out);
			}
			unsigned x = ROW_LABEL + (unsigned)col * (box_w + GAP);
			fprintf(out,
				"<g class=\"host\"><rect x=\"%u\" y=\"%u\" width=\"%u\" height=\"%u\" fill=\"none\" "
				"stroke=\"#555\"/><text x=\"%u\" y=\"%u\">",
				x, y, box_w, box_h, x + GAP, y + HOST_LABEL - 2);
			put_text(out, hosts[h]);
			fputs("</text>\n", out);
			for (uint32_t k = 0; k < ranks_of[h]; k++) {
				uint32_t r = first[h] + k;
				const struct plan_slot *slot = &p->rank[r];
				uint32_t c[LLMP_NAXES];
				llmp_plan_coords(plan, r, c);
				const struct topo_type *ty = &t->types[t->nodes[slot->node].type];
				unsigned cx = x + GAP + (k % per_line) * CELL,
					 cy = y + HOST_LABEL + GAP + (k / per_line) * CELL;
				unsigned hue = pp > 1 ? 360 * c[LLMP_AXIS_PP] / pp : 210;
				fprintf(out,
					"<rect class=\"rank\" x=\"%u\" y=\"%u\" width=\"%d\" height=\"%d\" "
					"fill=\"hsl(%u,60%%,75%%)\" stroke=\"#333\"><title>rank %u (task %u): tp %u cp %u ep %u "
					"dp %u pp %u; gpu %s; hca %s</title></rect>"
					"<text x=\"%u\" y=\"%u\" text-anchor=\"middle\">%u</text>\n",
					cx, cy, CELL - 2, CELL - 2, hue, r, slot->task, c[LLMP_AXIS_TP],
					c[LLMP_AXIS_CP], c[LLMP_AXIS_EP], c[LLMP_AXIS_DP], c[LLMP_AXIS_PP],
					slot->gpu >= 0 ? ty->gpus[slot->gpu].pci.bus : "none",
					slot->hca >= 0 ? ty->hcas[slot->hca].name : "none", cx + CELL / 2 - 1,
					cy + CELL / 2 + 3, r);
			}
			fputs("</g>\n", out);
			col++;
		}
		if (col)
			y += box_h + GAP;
	}
	fputs("</svg>\n", out);
	free(ranks_of);
	free(first);
	free(leaf);
	return ferror(out) ? -1 : 0;
}

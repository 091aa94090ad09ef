/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_rails.c - `llmp topo --rails`, and the end of `llmp topo --job`'s
 * text: every rail's HCA ports across the nodes (topology/rails.h), each
 * that is down or slower or of another link layer than the rest named.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "llmp_cli.h"
#include "topology/rails.h"

#define REPORT_MAX ((size_t)64 << 10)

int cli_topo_rails(const struct topo *t, FILE *out)
{
	char *report = malloc(REPORT_MAX);
	unsigned problems = 0;
	if (!report || topo_rails_check(t, report, REPORT_MAX, &problems) != LLMP_OK) {
		fprintf(stderr, "llmp topo: rails: out of memory\n");
		free(report);
		return CLI_EXIT_FAILURE;
	}
	if (problems)
		fprintf(out, "rails: %u port%s differ%s:\n%s", problems, problems == 1 ? "" : "s",
			problems == 1 ? "s" : "", report);
	else
		fprintf(out,
			"rails: every rail's ports agree in link layer, rate and subnet (where known) and "
			"are ACTIVE\n");
	free(report);
	return problems ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

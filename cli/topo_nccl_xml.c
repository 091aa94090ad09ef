/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_nccl_xml.c - `llmp topo --nccl-topo`: a node type as the
 * NCCL_TOPO_FILE the plugin would write for it (topology/nccl_topo.h),
 * checked against NCCL's grammar before it is printed: what a site reads
 * before trusting it, and what the tests check.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "llmp_cli.h"
#include "topology/nccl_topo.h"

#define PROG "llmp topo"
#define XML_MAX ((size_t)1 << 20)

int cli_topo_nccl_xml(const struct topo *t, const char *type, FILE *out)
{
	const struct topo_type *ty = NULL;
	for (unsigned k = 0; k < t->ntypes && !ty; k++)
		if (type ? strcmp(t->types[k].name, type) == 0 : t->ntypes == 1)
			ty = &t->types[k];
	if (!ty)
		return cli_usage_error(
			PROG, type ? "--type: no node type" : "several node types: --type is needed for",
			type ? type : "--nccl-topo");
	char *buf = malloc(XML_MAX), msg[LLMP_MSG_MAX];
	size_t used = 0;
	struct nccl_xml x;
	if (!buf) {
		fprintf(stderr, PROG ": out of memory\n");
		return CLI_EXIT_FAILURE;
	}
	llmp_status st = nccl_topo_write(ty, NCCL_TOPO_LINK_SPEED, NCCL_TOPO_LINK_WIDTH, buf, XML_MAX, &used,
					 msg, sizeof msg);
	if (st == LLMP_OK && (st = nccl_topo_check(buf, used, true, &x, msg, sizeof msg)) == LLMP_OK)
		nccl_xml_free(&x);
	if (st != LLMP_OK) {
		fprintf(stderr, PROG ": node type %s: %s\n", ty->name, msg);
		free(buf);
		return CLI_EXIT_USAGE;
	}
	bool ok = fwrite(buf, 1, used, out) == used && fflush(out) == 0;
	free(buf);
	if (!ok) {
		fprintf(stderr, PROG ": writing the output failed\n");
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

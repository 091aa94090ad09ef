/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gdr_nccl_log.c - NCCL's INFO log of this node read back and set
 * against llmp's GPUDirect RDMA prediction (topology/nccl_log.h), for
 * `llmp topo --gdr --nccl-log FILE` and for `llmp bench`, which has NCCL
 * write the log while it brings its communicators up.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "llmp_cli.h"
#include "topology/gdr.h"
#include "topology/nccl_log.h"

#define LOG_MAX ((size_t)16 << 20)
#define HCAS_MAX 64

int cli_gdr_log_compare(const char *path, const char *what, const struct topo_type *ty,
			const struct gdr_node *n, enum topo_path level, FILE *out)
{
	char *text = malloc(LOG_MAX), *report = malloc(LOG_MAX / 16);
	FILE *f = text && report ? fopen(path, "re") : NULL;
	size_t len = f ? fread(text, 1, LOG_MAX, f) : 0;
	int rc = -1;
	if (f)
		fclose(f);
	if (!text || !report) {
		fprintf(stderr, "llmp: out of memory\n");
	} else if (!f) {
		fprintf(stderr, "llmp: %s %s: cannot be read\n", what, path);
	} else if (len == LOG_MAX) {
		fprintf(stderr, "llmp: %s %s: larger than %zu bytes\n", what, path, LOG_MAX);
	} else {
		struct nccl_log_hca hcas[HCAS_MAX];
		unsigned nhcas = nccl_log_gdr_hcas(text, len, hcas, HCAS_MAX), pairs, differ;
		nccl_log_compare(hcas, nhcas, ty, n, level, report, LOG_MAX / 16, &pairs, &differ);
		if (!nhcas && pairs)
			fprintf(out,
				"NCCL's log %s: no \"GPU Direct RDMA ... for HCA\" line (NCCL_DEBUG=INFO and "
				"NCCL_DEBUG_SUBSYS with NET print them)\n",
				path);
		fprintf(out, "NCCL's log %s: %u GPU/HCA pairs compared, %u differ%s\n%s", path, pairs, differ,
			differ ? ":" : "", report);
		rc = differ || (!nhcas && pairs) ? 1 : 0;
	}
	free(text);
	free(report);
	return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_gdr.c - after `llmp bench --memory device` has brought NCCL's
 * communicators up, what NCCL decided about GPUDirect RDMA on each HCA
 * (its INFO lines, topology/nccl_log.h) against what llmp predicts for
 * this node's GPU/HCA pairs (topology/gdr.h, on this node's sysfs).
 *
 * NCCL prints those lines only at NCCL_DEBUG=INFO with NET in
 * NCCL_DEBUG_SUBSYS. Where the user set none of NCCL_DEBUG and
 * NCCL_DEBUG_FILE, the bench sets NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=
 * INIT,NET (unless set) and a file of its own per process in $TMPDIR,
 * read and removed once the communicators are up. A user's own INFO log
 * file is read and left; a user's other choice leaves the check undone,
 * said so. Rank 0 prints its node's comparison.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_gdr.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/llmp_cli.h"
#include "topology/discover/discover.h"
#include "topology/gdr.h"
#include "topology/nccl_log.h"
#include "topology/topo.h"

static bool info_level(const char *v)
{
	return v && (strcasecmp(v, "INFO") == 0 || strcasecmp(v, "TRACE") == 0);
}

void bench_gdr_prepare(struct bench_gdr *g)
{
	memset(g, 0, sizeof *g);
	const char *level = getenv("NCCL_DEBUG"), *file = getenv("NCCL_DEBUG_FILE"), *pattern = file;
	char own[PATH_MAX - 64];
	if (!level && !file) {
		const char *tmp = getenv("TMPDIR");
		/* A '%' of $TMPDIR would be read as NCCL's %h or %p. */
		snprintf(own, sizeof own, "%s/llmp-bench-nccl.%%h.%%p",
			 tmp && *tmp && !strchr(tmp, '%') ? tmp : "/tmp");
		setenv("NCCL_DEBUG", "INFO", 1);
		setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 0);
		setenv("NCCL_DEBUG_FILE", own, 1);
		pattern = own;
		g->ours = true;
	} else if (!info_level(level) || !file) {
		snprintf(g->why_not, sizeof g->why_not,
			 "not checked: the user's NCCL_DEBUG=%.32s%s (NCCL's HCA lines need INFO, in an "
			 "NCCL_DEBUG_FILE)",
			 level ? level : "(unset)", file ? "" : " and no NCCL_DEBUG_FILE");
		return;
	}
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	if (!nccl_log_file_name(pattern, host, (long)getpid(), g->path, sizeof g->path)) {
		snprintf(g->why_not, sizeof g->why_not, "not checked: NCCL_DEBUG_FILE too long");
		g->ours = false;
		return;
	}
	g->on = true;
}

/* The comparison into out, each line prefixed "# ". */
static void compare(const struct bench_gdr *g, FILE *out)
{
	struct topo t;
	char msg[LLMP_MSG_MAX], probed[64];
	if (topo_discover("/", NULL, NULL, false, &t, msg, sizeof msg) != LLMP_OK) {
		fprintf(out, "# gdr: not checked: this node not discovered: %s\n", msg);
		return;
	}
	const struct topo_type *ty = &t.types[t.nodes[0].type];
	struct gdr_node n;
	enum topo_path level = topo_gdr_level_of(getenv("NCCL_NET_GDR_LEVEL"));
	if (cli_gdr_facts(ty, "/", &n, probed, sizeof probed, msg, sizeof msg) != 0) {
		fprintf(out, "# gdr: not checked: %s\n", msg);
		topo_free(&t);
		return;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	if (mem) {
		cli_gdr_log_compare(g->path, "NCCL_DEBUG_FILE", ty, &n, level, mem);
		fclose(mem);
		for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			fprintf(out, "# %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
		}
	}
	free(text);
	gdr_node_free(&n);
	topo_free(&t);
}

void bench_gdr_report(struct bench_gdr *g, bool print, FILE *out)
{
	if (print && !g->on)
		fprintf(out, "# gdr: %s\n", g->why_not);
	else if (print)
		compare(g, out);
	if (g->on && g->ours)
		unlink(g->path);
	g->on = g->ours = false; /* once */
	snprintf(g->why_not, sizeof g->why_not, "reported");
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* node_gdr.c - each node's GPUDirect RDMA line published in the init fence, and gathered (node_gdr.h). */
#include "node_gdr.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include <llmp/llmp_env.h>
#include "topology/discover/discover.h"
#include "topology/discover/gdr_read.h"
#include "common/fail.h"
#include "topology/gdr.h"
#include "topology/nccl_log.h"
#include "wireup.h"

#define KEY_GDR "llmp.gdr"

static bool asked(void)
{
	const char *v = getenv(LLMP_ENV_TOPOLOGY_GATHER);
	return v && strcmp(v, "1") == 0;
}

/* This node's GPUDirect RDMA facts as this process sees them (its locked-memory limit included). */
static llmp_status node_facts(const struct topo_type *ty, struct gdr_node *facts, char *why, size_t len)
{
	llmp_status st = gdr_read_node("/", ty, facts, why, len);
	struct rlimit lim;
	if (st == LLMP_OK && getrlimit(RLIMIT_MEMLOCK, &lim) == 0)
		facts->memlock = lim.rlim_cur == RLIM_INFINITY ? GDR_MEMLOCK_UNLIMITED
							       : (unsigned long long)lim.rlim_cur;
	return st;
}

/* "HOST: GPUDirect RDMA on U of P GPU/HCA pairs[; GPU B / HCA: why]". */
static void judge_node(const struct topo *t, char *line, size_t len)
{
	const struct topo_type *ty = &t->types[0];
	struct gdr_node facts;
	char why[LLMP_MSG_MAX];
	enum topo_path level = topo_gdr_level_of(getenv("NCCL_NET_GDR_LEVEL"));
	if (node_facts(ty, &facts, why, sizeof why) != LLMP_OK) {
		snprintf(line, len, "%s: GPUDirect RDMA not judged: %s", t->nodes[0].host, why);
		return;
	}
	unsigned pairs = 0, used = 0;
	char first[LLMP_MSG_MAX] = "";
	for (unsigned g = 0; g < ty->ngpus; g++) {
		int h = topo_nccl_nearest_hca(ty, g, true);
		if (h < 0)
			continue;
		struct gdr_verdict v;
		gdr_pair_verdict(&facts, &ty->gpus[g].pci, &ty->hcas[h].pci, level, &v);
		pairs++;
		used += v.outcome == GDR_USED;
		if (v.outcome != GDR_USED && !first[0]) {
			char text[320];
			gdr_verdict_text(&facts, &v, level, text, sizeof text);
			snprintf(first, sizeof first, "; GPU %.15s / %.31s: %s", ty->gpus[g].pci.bus,
				 ty->hcas[h].name, text);
		}
	}
	gdr_node_free(&facts);
	if (!pairs)
		snprintf(line, len, "%.64s: no GPU with a usable HCA", t->nodes[0].host);
	else
		snprintf(line, len, "%.64s: GPUDirect RDMA on %u of %u GPU/HCA pairs%s", t->nodes[0].host,
			 used, pairs, first);
}

void rt_gdr_node_line(char *line, size_t len)
{
	struct topo t;
	char why[LLMP_MSG_MAX];
	if (topo_discover("/", NULL, NULL, false, &t, why, sizeof why) == LLMP_OK) {
		judge_node(&t, line, len);
		topo_free(&t);
	} else {
		snprintf(line, len, "a node: GPUDirect RDMA not judged: %s", why);
	}
}

/* The first max bytes of a file, NUL-terminated (malloc'd); NULL when it cannot be read. *whole: all of it. */
static char *read_head(const char *path, size_t max, size_t *len, bool *whole)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = malloc(max + 1);
	*len = buf ? fread(buf, 1, max, f) : 0;
	*whole = buf && fgetc(f) == EOF;
	bool ok = buf && !ferror(f);
	fclose(f);
	if (!ok) {
		free(buf);
		return NULL;
	}
	buf[*len] = '\0';
	return buf;
}

bool rt_gdr_nccl_line(char *line, size_t len)
{
	const char *level = getenv("NCCL_DEBUG"), *file = getenv("NCCL_DEBUG_FILE"),
		   *subsys = getenv("NCCL_DEBUG_SUBSYS");
	bool info = level && (strcasecmp(level, "INFO") == 0 || strcasecmp(level, "TRACE") == 0);
	/* NET must be among the subsystems; NCCL's default (INIT,BOOTSTRAP,ENV) leaves it out. */
	bool net = subsys && (strcasestr(subsys, "NET") || strcasestr(subsys, "ALL")) && subsys[0] != '^';
	if (!info || !file || !*file || !net) {
		snprintf(line, len,
			 "not checked: NCCL logs its GPUDirect RDMA lines with NCCL_DEBUG=INFO, "
			 "NCCL_DEBUG_SUBSYS=INIT,NET and NCCL_DEBUG_FILE");
		return true;
	}
	char host[256] = "", path[4096];
	gethostname(host, sizeof host - 1);
	if (!nccl_log_file_name(file, host, (long)getpid(), path, sizeof path)) {
		snprintf(line, len, "not checked: NCCL_DEBUG_FILE too long");
		return true;
	}
	/* NCCL prints the HCA lines at its first communicator's init, near the log's start. */
	size_t n = 0;
	bool whole = false;
	char *text = read_head(path, 4u << 20, &n, &whole);
	struct nccl_log_hca hcas[64];
	unsigned nhcas = text ? nccl_log_gdr_hcas(text, n, hcas, 64) : 0;
	bool read = text != NULL;
	free(text);
	if (!nhcas && read && !whole) {
		snprintf(line, len, "not checked: no GPUDirect RDMA line in the first 4 MiB of %.200s", path);
		return true;
	}
	if (!nhcas)
		return false; /* not written yet: ask again at the next record */
	struct topo t;
	char why[LLMP_MSG_MAX];
	if (topo_discover("/", NULL, NULL, false, &t, why, sizeof why) != LLMP_OK) {
		snprintf(line, len, "not checked: this node not discovered: %s", why);
		return true;
	}
	enum topo_path lv = topo_gdr_level_of(getenv("NCCL_NET_GDR_LEVEL"));
	struct gdr_node facts;
	if (node_facts(&t.types[0], &facts, why, sizeof why) != LLMP_OK) {
		snprintf(line, len, "not checked: %s", why);
		topo_free(&t);
		return true;
	}
	char report[2048];
	unsigned pairs = 0, differ = 0;
	nccl_log_compare(hcas, nhcas, &t.types[0], &facts, lv, report, sizeof report, &pairs, &differ);
	/* The first line that disagrees, when one does: the rest are in the log for whoever looks. */
	const char *bad = strstr(report, "mismatch");
	const char *start = bad;
	while (start && start > report && start[-1] != '\n')
		start--;
	const char *end = bad ? strchr(bad, '\n') : NULL;
	snprintf(line, len, "%u GPU/HCA pairs compared, %u differ%s%.*s", pairs, differ, bad ? ": " : "",
		 bad ? (int)(end ? end - start : (long)strlen(start)) : 0, bad ? start : "");
	gdr_node_free(&facts);
	topo_free(&t);
	return true;
}

llmp_status rt_gdr_publish(llmp_ctx *ctx)
{
	if (!asked() || ctx->local_rank != 0)
		return LLMP_OK;
	char line[2 * LLMP_MSG_MAX];
	rt_gdr_node_line(line, sizeof line);
	pmix_value_t value = { .type = PMIX_STRING };
	value.data.string = line;
	return rt_wireup_put(ctx, KEY_GDR, &value);
}

llmp_status rt_gdr_gather(llmp_ctx *ctx, FILE *out, char *msg, size_t len)
{
	if (!asked())
		return llmp_fail(LLMP_ERR_STATE, msg, len,
				 "GPUDirect RDMA is gathered only when " LLMP_ENV_TOPOLOGY_GATHER
				 "=1 at llmp_init");
	for (uint32_t r = 0; r < ctx->world; r++) {
		pmix_value_t *v = NULL;
		if (rt_wireup_get(ctx, r, KEY_GDR, &v) == PMIX_SUCCESS && v->type == PMIX_STRING &&
		    v->data.string)
			fprintf(out, "  %s\n", v->data.string);
		if (v)
			PMIX_VALUE_RELEASE(v);
	}
	return LLMP_OK;
}

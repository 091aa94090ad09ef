/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_gdr.c - `llmp topo --gdr`: for each GPU of this node and each
 * usable HCA, whether NCCL will use GPUDirect RDMA between them and every
 * reason when not (topology/gdr.c), with the facts it read. The NCCL
 * version is the library's own (dlopen of $LLMP_NCCL_LIBRARY, else
 * libnccl.so.2; unknown without one), the locked-memory limit this
 * process's, NCCL_NET_GDR_LEVEL this environment's, NCCL's dma-buf
 * probe repeated on an HCA (cli/ibv_probe.c), and each GPU's own word on
 * GPUDirect RDMA and dma-buf from the CUDA driver (cli/cuda_probe.c).
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "llmp_cli.h"
#include "topology/discover/gdr_read.h"
#include "topology/gdr.h"
#include "topology/nccl_dump.h"
#include <llmp/llmp_env.h>

#define PROG "llmp topo"

/* ncclGetVersion of the NCCL a task would load; 0 when none loads. */
static int nccl_version(void)
{
	const char *name = getenv(LLMP_ENV_NCCL_LIBRARY);
	void *lib = dlopen(name && *name ? name : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return 0;
	int (*get)(int *) = NULL;
	*(void **)&get = dlsym(lib, "ncclGetVersion");
	int v = 0;
	if (!get || get(&v) != 0 || v < 0)
		v = 0;
	dlclose(lib);
	return v;
}

static void write_facts(const struct gdr_node *n, enum topo_path level, FILE *out)
{
	char nccl[32] = "not found";
	if (n->nccl_version)
		snprintf(nccl, sizeof nccl, "%d.%d.%d", n->nccl_version / 10000, n->nccl_version / 100 % 100,
			 n->nccl_version % 100);
	fprintf(out, "GPUDirect RDMA as NCCL decides it (NCCL %s, NCCL_NET_GDR_LEVEL=%s)\n", nccl,
		topo_path_name(level));
	fprintf(out, "  peer memory: nvidia_peermem %s, nv_peer_mem %s\n",
		n->nvidia_peermem ? "loaded" : "absent", n->nv_peer_mem ? "loaded" : "absent");
	fprintf(out, "  dma-buf: kernel %s, NVIDIA kernel module %s\n", n->kernel[0] ? n->kernel : "unknown",
		n->driver == GDR_DRIVER_OPEN          ? "open"
		: n->driver == GDR_DRIVER_PROPRIETARY ? "proprietary"
						      : "not loaded");
	if (n->memlock == GDR_MEMLOCK_UNLIMITED)
		fprintf(out, "  memlock: unlimited");
	else
		fprintf(out, "  memlock: %llu KiB", n->memlock >> 10);
	fprintf(out, ", /dev/infiniband: %s\n",
		n->ib_devices > 0    ? "uverbs present"
		: n->ib_devices == 0 ? "no uverbs"
				     : "-");
}

#define DUMP_MAX ((size_t)4 << 20)

/* NCCL's topology dump against the prediction; 1 when they differ, -1 when the dump is unusable. */
static int compare_dump(const char *path, const struct topo_type *ty, const struct gdr_node *n, FILE *out)
{
	char *text = malloc(DUMP_MAX), *report = malloc(DUMP_MAX / 4), msg[LLMP_MSG_MAX];
	FILE *f = text && report ? fopen(path, "re") : NULL;
	size_t len = f ? fread(text, 1, DUMP_MAX, f) : 0;
	int rc = -1;
	struct nccl_xml x;
	if (f)
		fclose(f);
	if (!text || !report)
		fprintf(stderr, PROG ": out of memory\n");
	else if (!f)
		fprintf(stderr, PROG ": --nccl-dump %s: cannot be read\n", path);
	else if (len == DUMP_MAX)
		fprintf(stderr, PROG ": --nccl-dump %s: larger than %zu bytes\n", path, DUMP_MAX);
	else if (nccl_topo_check(text, len, false, &x, msg, sizeof msg) != LLMP_OK)
		fprintf(stderr, PROG ": --nccl-dump %s: %s\n", path, msg);
	else {
		unsigned compared, differ;
		nccl_dump_compare(&x, ty, n, report, DUMP_MAX / 4, &compared, &differ);
		nccl_xml_free(&x);
		fprintf(out, "NCCL's dump %s: %u compared, %u differ%s\n%s", path, compared, differ,
			differ ? ":" : "", report);
		rc = differ ? 1 : 0;
	}
	free(text);
	free(report);
	return rc;
}

int cli_gdr_facts(const struct topo_type *ty, const char *root, struct gdr_node *n, char *probed, size_t len,
		  char *msg, size_t msglen)
{
	if (gdr_read_node(root, ty, n, msg, msglen) != LLMP_OK)
		return -1;
	n->nccl_version = nccl_version();
	n->dmabuf_probe = cli_dmabuf_probe(ty, probed, len);
	if (!cli_cuda_gdr_attrs(ty, n, n->gpu_attrs_why, sizeof n->gpu_attrs_why) && !n->gpu_attrs_why[0])
		snprintf(n->gpu_attrs_why, sizeof n->gpu_attrs_why, "no GPU");
	struct rlimit lim;
	if (getrlimit(RLIMIT_MEMLOCK, &lim) == 0)
		n->memlock = lim.rlim_cur == RLIM_INFINITY ? GDR_MEMLOCK_UNLIMITED
							   : (unsigned long long)lim.rlim_cur;
	return 0;
}

int cli_gdr_level(enum topo_path *level)
{
	*level = TOPO_GDR_LEVEL_DEFAULT;
	const char *env = getenv("NCCL_NET_GDR_LEVEL");
	if (env && *env && !topo_path_parse_level(env, level))
		return cli_usage_error(PROG,
				       "NCCL_NET_GDR_LEVEL: not LOC, PIX, PXB, PHB, SYS or 0-5 (NCCL "
				       "would ignore it):",
				       env);
	return CLI_EXIT_OK;
}

int cli_topo_gdr(const struct topo *t, const char *root, const char *dump, const char *log, FILE *out)
{
	enum topo_path level;
	if (cli_gdr_level(&level) != CLI_EXIT_OK)
		return CLI_EXIT_USAGE;
	const struct topo_type *ty = &t->types[t->nodes[0].type];
	struct gdr_node n;
	char msg[LLMP_MSG_MAX], probed[64];
	if (cli_gdr_facts(ty, root, &n, probed, sizeof probed, msg, sizeof msg) != 0) {
		fprintf(stderr, PROG ": %s\n", msg);
		return CLI_EXIT_FAILURE;
	}
	write_facts(&n, level, out);
	if (n.gpu_attrs_why[0])
		fprintf(out, "  GPU support: not read (%s)\n", n.gpu_attrs_why);
	for (unsigned g = 0; !n.gpu_attrs_why[0] && g < ty->ngpus; g++) {
		const struct gdr_pcidev *d = gdr_node_dev(&n, ty->gpus[g].pci.bus);
		static const char *const said[] = { "unknown", "no", "yes" };
		if (d)
			fprintf(out, "  GPU %s (CUDA driver): GPUDirect RDMA %s, dma-buf %s\n", d->bus,
				said[d->gpu_gdr], said[d->gpu_dmabuf]);
	}
	if (n.dmabuf_probe < 0)
		fprintf(out, "  dma-buf probe: not run (no libibverbs, or none of these HCAs in it)\n");
	else
		fprintf(out, "  dma-buf probe on %s: ibv_reg_dmabuf_mr %s\n", probed,
			n.dmabuf_probe ? "supported" : "not supported (EOPNOTSUPP)");
	fprintf(out, "  %-4s %-13s %-10s %-4s %s\n", "gpu", "bus", "hca", "path", "gdr");
	unsigned used = 0, pairs = 0;
	for (unsigned g = 0; g < ty->ngpus; g++)
		for (unsigned h = 0; h < ty->nhcas; h++) {
			if (!topo_hca_usable(&ty->hcas[h]))
				continue;
			struct gdr_verdict v;
			char text[1024];
			gdr_pair_verdict(&n, &ty->gpus[g].pci, &ty->hcas[h].pci, level, &v);
			gdr_verdict_text(&n, &v, level, text, sizeof text);
			fprintf(out, "  %-4u %-13s %-10s %-4s %s\n", g, ty->gpus[g].pci.bus, ty->hcas[h].name,
				topo_path_name(v.path), text);
			pairs++;
			used += v.outcome == GDR_USED;
		}
	fprintf(out, "GPUDirect RDMA on %u of %u GPU/HCA pairs\n", used, pairs);
	int rc = dump ? compare_dump(dump, ty, &n, out) : 0;
	int lrc = log ? cli_gdr_log_compare(log, "--nccl-log", ty, &n, level, out) : 0;
	gdr_node_free(&n);
	return rc < 0 || lrc < 0 ? CLI_EXIT_USAGE : rc || lrc ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_env.c - GPUDirect RDMA on this node's task pairs, as NCCL will
 * decide it (topology/gdr.c), turned into what the plugin does: never a
 * variable the user set; NCCL_NET_GDR_LEVEL=LOC only where the path is
 * known bad (ACS redirect or egress control, a translating IOMMU: NVIDIA/
 * nccl#928 "IB error 4 ... confirm by setting NCCL_NET_GDR_LEVEL=0"), as
 * NCCL's variable is per process, for all NICs, and LOC costs bandwidth
 * but not correctness; a path merely beyond the level is left to NCCL,
 * which stages through host memory by itself.
 */
#define _POSIX_C_SOURCE 200809L
#include "plugin/nccl_env.h"

#include <stdio.h>
#include <string.h>

#include "common/fail.h" /* llmp_show */

int plugin_gdr_judge(const struct plugin_node_place *np, const struct gdr_node *facts, const char *user_level,
		     const char *site_level, const char *host, struct plugin_gdr *out)
{
	memset(out, 0, sizeof *out);
	enum topo_path level = TOPO_GDR_LEVEL_DEFAULT;
	bool user_set = user_level && *user_level;
	if (user_set && !topo_path_parse_level(user_level, &level)) {
		char shown[LLMP_SHOW_MAX];
		snprintf(out->line, sizeof out->line,
			 "warning: NCCL_NET_GDR_LEVEL=%s is not a level NCCL reads (LOC, PIX, PXB, PHB, "
			 "SYS or 0-5): NCCL ignores it and uses PXB",
			 llmp_show(shown, user_level, strlen(user_level)));
		return -1;
	}
	/* The site's level, for tasks that set none (site.c accepts names only). */
	if (!user_set && site_level && *site_level && topo_path_parse_level(site_level, &level))
		snprintf(out->level, sizeof out->level, "%s", site_level);
	const struct topo_type *ty = np->type;
	int first_bad = -1;
	struct gdr_verdict bad;
	for (uint32_t t = 0; t < np->n; t++) {
		int g = np->gpu[t], h = np->hca[t];
		if (g < 0 || h < 0 || (unsigned)g >= ty->ngpus || (unsigned)h >= ty->nhcas)
			continue;
		struct gdr_verdict v;
		gdr_pair_verdict(facts, &ty->gpus[g].pci, &ty->hcas[h].pci, level, &v);
		out->pairs++;
		out->used += v.outcome == GDR_USED;
		if (v.outcome == GDR_BROKEN && (v.reasons & GDR_R_KNOWN_BAD) && !user_set)
			out->loc = true;
		if (v.outcome != GDR_USED && first_bad < 0) {
			first_bad = (int)t;
			bad = v;
		}
	}
	if (out->loc)
		snprintf(out->level, sizeof out->level, "LOC");
	if (first_bad < 0)
		return 0;
	char why[320];
	gdr_verdict_text(facts, &bad, level, why, sizeof why);
	const struct topo_gpu *gpu = &ty->gpus[np->gpu[first_bad]];
	const struct topo_hca *hca = &ty->hcas[np->hca[first_bad]];
	snprintf(out->line, sizeof out->line,
		 "%.32s: GPUDirect RDMA on %u of %u task pairs; GPU %.15s / %.31s: %s%s",
		 host && *host ? host : "this node", out->used, out->pairs, gpu->pci.bus, hca->name, why,
		 out->loc ? "; NCCL_NET_GDR_LEVEL=LOC set: slower, no hang" : "");
	return 0;
}

bool plugin_sysfs_hides(const struct topo_type *file_type, const struct topo_type *seen)
{
	unsigned up[TOPO_PCIE_MAX];
	for (unsigned g = 0; g < file_type->ngpus; g++) {
		unsigned want = topo_nccl_parents(&file_type->gpus[g].pci, up);
		if (!want)
			continue;
		bool found = false;
		for (unsigned s = 0; s < seen->ngpus && !found; s++)
			if (strcmp(seen->gpus[s].pci.bus, file_type->gpus[g].pci.bus) == 0) {
				found = true;
				if (topo_nccl_parents(&seen->gpus[s].pci, up) < want)
					return true;
			}
		if (!found)
			return true;
	}
	return false;
}

int plugin_nccl_topo_path(const char *layout_path, uint64_t token, char *buf, size_t len)
{
	buf[0] = '\0';
	if (!layout_path || !layout_path[0])
		return -1;
	int k = snprintf(buf, len, "%s.%016llx.nccl-topo.xml", layout_path, (unsigned long long)token);
	if (k < 0 || (size_t)k >= len) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

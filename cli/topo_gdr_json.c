/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_gdr_json.c - `llmp topo --gdr --format json`: the same facts and
 * verdicts as the text (topo_gdr.c) as one JSON object whose field names
 * are stable (doc/gpudirect.md): each reason by a fixed name, so a site's
 * script need not parse the sentences.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>

#include "common/json_writer.h"
#include "llmp_cli.h"
#include "topology/gdr.h"

#define PROG "llmp topo"

/* enum gdr_reason's bits by their names in the JSON, in bit order. */
static const char *const reason_names[] = { "no_peermem",  "nccl_peermem", "dmabuf_kernel", "dmabuf_driver",
					    "dmabuf_nccl", "dmabuf_ibv",   "level",         "no_ibdev",
					    "acs",         "iommu",        "memlock",       "gpu",
					    "dmabuf_gpu" };

_Static_assert(1u << (sizeof reason_names / sizeof *reason_names - 1) == GDR_R_DMABUF_GPU,
	       "a name for each reason of enum gdr_reason");

static void write_facts(struct json_writer *w, const struct gdr_node *n, const struct topo_type *ty,
			enum topo_path level, int probe, const char *probed)
{
	char v[32];
	snprintf(v, sizeof v, "%d.%d.%d", n->nccl_version / 10000, n->nccl_version / 100 % 100,
		 n->nccl_version % 100);
	json_string(w, "nccl_version", n->nccl_version ? v : NULL);
	json_string(w, "gdr_level", topo_path_name(level));
	json_bool(w, "nvidia_peermem", n->nvidia_peermem);
	json_bool(w, "nv_peer_mem", n->nv_peer_mem);
	json_string(w, "kernel", n->kernel[0] ? n->kernel : NULL);
	json_string(w, "nvidia_driver",
		    n->driver == GDR_DRIVER_OPEN          ? "open"
		    : n->driver == GDR_DRIVER_PROPRIETARY ? "proprietary"
							  : "absent");
	/* The limit in bytes, null when unknown or unlimited; unlimited said apart. */
	if (n->memlock && n->memlock != GDR_MEMLOCK_UNLIMITED)
		json_uint(w, "memlock_bytes", n->memlock);
	else
		json_null(w, "memlock_bytes");
	json_bool(w, "memlock_unlimited", n->memlock == GDR_MEMLOCK_UNLIMITED);
	if (n->ib_devices < 0)
		json_null(w, "uverbs");
	else
		json_bool(w, "uverbs", n->ib_devices > 0);
	/* Each GPU's own word from the CUDA driver (attributes 116, 124): null where not read. */
	json_string(w, "gpu_attrs_not_read", n->gpu_attrs_why[0] ? n->gpu_attrs_why : NULL);
	json_array(w, "gpus");
	for (unsigned g = 0; g < ty->ngpus; g++) {
		const struct gdr_pcidev *d = gdr_node_dev(n, ty->gpus[g].pci.bus);
		json_object(w, NULL);
		json_string(w, "bus", ty->gpus[g].pci.bus);
		enum gdr_gpu_attr attrs[2] = { d ? d->gpu_gdr : GDR_ATTR_UNKNOWN,
					       d ? d->gpu_dmabuf : GDR_ATTR_UNKNOWN };
		const char *keys[2] = { "gdr", "dmabuf" };
		for (int k = 0; k < 2; k++) {
			if (attrs[k] == GDR_ATTR_UNKNOWN)
				json_null(w, keys[k]);
			else
				json_bool(w, keys[k], attrs[k] == GDR_ATTR_YES);
		}
		json_object_end(w);
	}
	json_array_end(w);
	if (probe < 0) {
		json_null(w, "dmabuf_probe");
	} else {
		json_object(w, "dmabuf_probe");
		json_string(w, "hca", probed);
		json_bool(w, "supported", probe > 0);
		json_object_end(w);
	}
}

static void write_pair(struct json_writer *w, const struct gdr_node *n, const struct topo_type *ty,
		       unsigned g, unsigned h, enum topo_path level, unsigned *used)
{
	struct gdr_verdict v;
	char text[1024];
	gdr_pair_verdict(n, &ty->gpus[g].pci, &ty->hcas[h].pci, level, &v);
	gdr_verdict_text(n, &v, level, text, sizeof text);
	json_object(w, NULL);
	json_uint(w, "gpu", g);
	json_string(w, "gpu_bus", ty->gpus[g].pci.bus);
	json_string(w, "hca", ty->hcas[h].name);
	json_string(w, "hca_bus", ty->hcas[h].pci.bus);
	json_string(w, "path", topo_path_name(v.path));
	json_string(w, "outcome",
		    v.outcome == GDR_USED       ? "used"
		    : v.outcome == GDR_NOT_USED ? "not_used"
						: "broken");
	json_array(w, "reasons");
	for (unsigned b = 0; b < sizeof reason_names / sizeof *reason_names; b++)
		if (v.reasons & (1u << b))
			json_string(w, NULL, reason_names[b]);
	json_array_end(w);
	json_bool(w, "acs_checked", !v.acs_unchecked);
	if (v.reasons & GDR_R_ACS) {
		json_string(w, "acs_bridge", v.acs_bus);
		json_uint(w, "acs_ctrl", v.acs_ctrl);
	}
	if (v.reasons & GDR_R_IOMMU) {
		json_string(w, "iommu_device", v.iommu_bus);
		json_string(w, "iommu_type", v.iommu_type);
	}
	json_string(w, "text", text);
	json_object_end(w);
	*used += v.outcome == GDR_USED;
}

int cli_topo_gdr_json(const struct topo *t, const char *root, FILE *out)
{
	enum topo_path level;
	if (cli_gdr_level(&level) != CLI_EXIT_OK)
		return CLI_EXIT_USAGE;
	const struct topo_type *ty = &t->types[t->nodes[0].type];
	struct gdr_node n;
	char msg[LLMP_MSG_MAX], probed[64] = "";
	if (cli_gdr_facts(ty, root, &n, probed, sizeof probed, msg, sizeof msg) != 0) {
		fprintf(stderr, PROG ": %s\n", msg);
		return CLI_EXIT_FAILURE;
	}
	struct json_writer w;
	json_begin(&w, out);
	json_object(&w, NULL);
	json_uint(&w, "llmp_gdr", 1);
	json_string(&w, "host", t->nodes[0].host);
	write_facts(&w, &n, ty, level, n.dmabuf_probe, probed);
	unsigned used = 0, pairs = 0;
	json_array(&w, "pairs");
	for (unsigned g = 0; g < ty->ngpus; g++)
		for (unsigned h = 0; h < ty->nhcas; h++)
			if (topo_hca_usable(&ty->hcas[h])) {
				write_pair(&w, &n, ty, g, h, level, &used);
				pairs++;
			}
	json_array_end(&w);
	json_uint(&w, "used", used);
	json_uint(&w, "total", pairs);
	json_object_end(&w);
	gdr_node_free(&n);
	if (!json_end(&w) || fflush(out) != 0) {
		fprintf(stderr, PROG ": writing the output failed\n");
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

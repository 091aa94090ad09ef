/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_log.h - what NCCL decided about GPUDirect RDMA, from its own INFO
 * lines (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS with NET, NCCL_DEBUG_FILE),
 * against llmp's prediction for the node (topology/gdr.h). NCCL 2.28
 * prints one line per HCA when it builds its topology at communicator
 * init (src/graph/topo.cc, ncclTopoPopulateNics):
 *
 *     NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'
 *
 * (and, with no IB device, "NET/Socket : ... for HCA 0 'eth0'" for the
 * socket network's interfaces: not HCAs, compared as NCCL's fallback).
 * "Enabled" when the HCA can register GPU memory: a peer-memory module
 * NCCL sees, or dma-buf (NVIDIA/nccl src/transport/net_ib.cc). The
 * path level is decided later, per connection, and is not in that line.
 */
#ifndef LLMP_NCCL_LOG_H
#define LLMP_NCCL_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "gdr.h"
#include "topo.h"

/* One HCA line of NCCL's log. */
struct nccl_log_hca {
	char name[TOPO_NAME_MAX];
	char net[16]; /* NCCL's network: "IB" */
	int index;    /* NCCL's HCA number */
	bool enabled;
};

/*
 * The HCA lines of NCCL's log text[0..len): at most max into out, the
 * last line of a name winning (each communicator prints them again).
 * Returns how many HCAs were named.
 */
unsigned nccl_log_gdr_hcas(const char *text, size_t len, struct nccl_log_hca *out, unsigned max);

/*
 * For each GPU of ty and its nearest usable HCA (NCCL's choice,
 * topo_nccl_nearest_hca), llmp's verdict (facts, level) against NCCL's
 * line for that HCA: one line per pair into report, e.g.
 * "gdr GPU 0000:18:00.0 / mlx5_1: predicted yes, NCCL: Disabled for mlx5_1
 * (mismatch: ...)"; then one line per HCA NCCL named that ty lacks.
 * *pairs: the pairs, *differ: those that disagree and those HCAs.
 */
void nccl_log_compare(const struct nccl_log_hca *hcas, unsigned nhcas, const struct topo_type *ty,
		      const struct gdr_node *facts, enum topo_path level, char *report, size_t len,
		      unsigned *pairs, unsigned *differ);

/*
 * NCCL_DEBUG_FILE's pattern as NCCL expands it: %h the host name up to
 * its first '.', %p the pid, %% a '%', anything else kept. False when the
 * result does not fit.
 */
bool nccl_log_file_name(const char *pattern, const char *host, long pid, char *out, size_t len);

#endif /* LLMP_NCCL_LOG_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * node_gdr.h - each node's GPUDirect RDMA verdict through the one fence of
 * llmp_init, beside its topology (node_topo.h), when LLMP_TOPOLOGY_GATHER=1
 * (`llmp topo --job`): the first rank of each node judges its GPUs, each
 * with its nearest usable HCA (topology/gdr.h), and puts one line.
 */
#ifndef LLMP_NODE_GDR_H
#define LLMP_NODE_GDR_H

#include <stdio.h>

#include "rt.h"

/* Before the fence: this node's line, when asked for and this is its first rank. */
llmp_status rt_gdr_publish(llmp_ctx *ctx);

/* After init: every node's line, in rank order of their first ranks, to out. */
llmp_status rt_gdr_gather(llmp_ctx *ctx, FILE *out, char *msg, size_t len);

#endif /* LLMP_NODE_GDR_H */

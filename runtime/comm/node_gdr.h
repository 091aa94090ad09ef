/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * node_gdr.h - each node's GPUDirect RDMA verdict through the one fence of
 * llmp_init, beside its topology (node_topo.h), when LLMP_TOPOLOGY_GATHER=1
 * (`llmp topo --job`): the first rank of each node judges its GPUs, each
 * with its nearest usable HCA (topology/gdr.h), and puts one line.
 */
#ifndef LLMP_NODE_GDR_H
#define LLMP_NODE_GDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "rt.h"

/* Before the fence: this node's line, when asked for and this is its first rank. */
llmp_status rt_gdr_publish(llmp_ctx *ctx);

/* This node's line, judged now: "HOST: GPUDirect RDMA on U of P GPU/HCA pairs[; first reason]". */
void rt_gdr_node_line(char *line, size_t len);

/*
 * What NCCL itself said of GPUDirect RDMA on this node, from the user's own
 * INFO log (NCCL_DEBUG=INFO, NET among NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE
 * with NCCL's %h/%p), against this node's prediction (topology/nccl_log.h):
 * "P GPU/HCA pairs compared, D differ[: the first mismatch]", or why it is
 * not checked. False while the log holds no HCA line yet (before NCCL's
 * first communicator): ask again later. libllmp never sets NCCL_DEBUG.
 */
bool rt_gdr_nccl_line(char *line, size_t len);

/* After init: every node's line, in rank order of their first ranks, to out. */
llmp_status rt_gdr_gather(llmp_ctx *ctx, FILE *out, char *msg, size_t len);

#endif /* LLMP_NODE_GDR_H */

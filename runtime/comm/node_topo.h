/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * node_topo.h - the job's topology through the one fence of llmp_init.
 *
 * With LLMP_TOPOLOGY_GATHER=1 (what `llmp topo --job` sets), the first rank
 * of each node discovers its node (topology/discover/) and puts it, as the
 * JSON of doc/topology-json.md, beside its UCX address before the fence;
 * afterwards any rank builds the job's view from the values already local:
 * no further fence, no message. Without it nothing is discovered at init.
 */
#ifndef LLMP_NODE_TOPO_H
#define LLMP_NODE_TOPO_H

#include <stddef.h>

#include "rt.h"
#include "topology/topo.h"

/* Before the fence: this node's description, when asked for and this is its first rank. */
llmp_status rt_topology_publish(llmp_ctx *ctx);

/*
 * After init: every node's description merged (topo_merge), nodes in rank
 * order of their first ranks. A node whose discovery failed is named with
 * its reason. Collective in nothing: each rank may call it alone.
 */
llmp_status rt_topology_gather(llmp_ctx *ctx, struct topo *job, char *msg, size_t len);

#endif /* LLMP_NODE_TOPO_H */

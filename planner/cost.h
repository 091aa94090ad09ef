/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cost.h - what a placed layout costs the network in one training step: the
 * bytes each dimension moves per rank (after Megatron-LM, Narayanan et al.
 * arXiv:2104.04473; Korthikanti et al. arXiv:2205.05198; and the bus
 * bandwidth of https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md), the link each group's
 * traffic crosses (its span, placement.h), and the time at that link's
 * bandwidth. An estimate to compare placements with, not a prediction: no
 * overlap with compute, no latency term, ring algorithms.
 *
 * Assumptions, printed with every report: bf16 activations and parameters
 * (2 bytes), gradients reduced in fp32 (4 bytes) by a distributed optimizer
 * (reduce-scatter then all-gather over dp x cp), sequence parallelism with
 * tp, ring context parallelism, MoE in every layer when experts > 0.
 */
#ifndef LLMP_COST_H
#define LLMP_COST_H

#include <stddef.h>

#include <llmp/llmp_plan.h>
#include <llmp/llmp_status.h>
#include "placement.h"
#include "topology/topo.h"

/* hidden=,layers=,seq=,mbs= [,heads=,kv-heads=,experts=,topk=,gbs=] */
struct plan_model {
	double hidden, layers, seq, mbs;
	double heads, kv_heads; /* 0: kv-heads = heads (no grouped-query attention) */
	double experts, topk;   /* experts 0: dense */
	double gbs;             /* global batch in sequences; 0: mbs x dp x 4 x pp */
};

/* Parse "hidden=8192,layers=80,..."; every key once, every value a positive integer. */
llmp_status plan_model_parse(const char *text, struct plan_model *m, char *msg, size_t len);

/* Bandwidth per GPU and direction, GB/s, of each link class. */
#define PLAN_GBPS_NVLINK_LINK 25.0 /* one NVLink 4 link (H100: 18 of them, 450 GB/s) */
#define PLAN_GBPS_PCIE 24.0        /* PCIe Gen4 x16 as NCCL models it */

/* The link classes a group's traffic crosses, by its span (placement.h). */
enum plan_link { PLAN_LINK_NVLINK, PLAN_LINK_PCIE, PLAN_LINK_IB_LEAF, PLAN_LINK_IB_SPINE, PLAN_NLINKS };
const char *plan_link_name(enum plan_link l);

struct plan_cost_dim {
	enum llmp_axis axis;
	double bytes;                   /* per rank and step */
	enum plan_span span;            /* the widest span among its groups */
	double gbps;                    /* the bandwidth of the link that span crosses */
	double seconds;                 /* bytes / gbps */
	double switch_bytes;            /* summed over the ranks whose group crosses a switch above a leaf */
	double node_bytes;              /* summed over the ranks whose group leaves its node */
	double link_bytes[PLAN_NLINKS]; /* summed over ranks, by the class of link their group crosses */
};

struct plan_cost {
	struct plan_cost_dim dim[5]; /* tp, cp, ep, dp, pp: those of size > 1 */
	size_t ndims;
	double microbatches;
	double seconds;      /* the sum over dimensions */
	double switch_bytes; /* over all ranks */
	double node_bytes;
};

/* Bytes per rank and step that one dimension moves, micro micro-batches a step (also step_model.c). */
double plan_cost_bytes(enum llmp_axis axis, const llmp_plan *plan, const struct plan_model *m, double micro);

llmp_status plan_cost(const struct topo *t, const llmp_plan *plan, const struct plan_placement *p,
		      const struct plan_model *m, struct plan_cost *out, char *msg, size_t len);

/*
 * The first tensor-, context- or expert-parallel group (in that order) that
 * leaves its node and NVLink domain under placement p, in a sentence with
 * its cost: the GB/s per GPU its members get there against inside a node.
 * Returns 1 with buf filled, 0 when every such group stays in, -1 when out
 * of memory. No model needed: a ratio of bandwidths, not a time.
 */
int plan_span_advice(const struct topo *t, const llmp_plan *plan, const struct plan_placement *p, char *buf,
		     size_t len);

#endif /* LLMP_COST_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_dump.h - what NCCL actually built, from its topology dump
 * (NCCL_TOPO_DUMP_FILE, parsed by nccl_topo_check), against llmp's
 * prediction for the node (nccl_dump.c): where each GPU and HCA hangs,
 * and the GPUDirect RDMA flags NCCL set on each NIC and GPU.
 */
#ifndef LLMP_NCCL_DUMP_H
#define LLMP_NCCL_DUMP_H

#include <stddef.h>

#include "gdr.h"
#include "nccl_topo.h"

/*
 * Compare dump x with ty and facts; one line per difference into report
 * ("" when none), their count in *differ, what was compared in *compared.
 */
void nccl_dump_compare(const struct nccl_xml *x, const struct topo_type *ty, const struct gdr_node *facts,
		       char *report, size_t len, unsigned *compared, unsigned *differ);

#endif /* LLMP_NCCL_DUMP_H */

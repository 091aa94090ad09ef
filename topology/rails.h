/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rails.h - the fabric across a job's nodes (rails.c): rail r is the HCA
 * nearest GPU r of each node (NCCL's path types, pci_path.h), and every
 * rail's ports must agree in link layer and rate and be ACTIVE. NCCL
 * cannot see another node's port (NVIDIA/nccl#366); a 200 Gb/s port among
 * 400 Gb/s ones makes its node a straggler every step.
 */
#ifndef LLMP_RAILS_H
#define LLMP_RAILS_H

#include <stddef.h>

#include <llmp/llmp_status.h>
#include "topo.h"

/*
 * Check every rail of t's nodes; write one line per problem into report
 * ("" when none) and their count into *problems. An error only for memory
 * (LLMP_ERR_NOMEM); a report that does not fit ends with "...".
 */
llmp_status topo_rails_check(const struct topo *t, char *report, size_t len, unsigned *problems);

#endif /* LLMP_RAILS_H */

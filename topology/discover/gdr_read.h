/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gdr_read.h - the node's GPUDirect RDMA facts (topology/gdr.h) read from
 * sysfs and procfs under a root (gdr_read.c).
 */
#ifndef LLMP_GDR_READ_H
#define LLMP_GDR_READ_H

#include <stddef.h>

#include <llmp/llmp_status.h>
#include "topology/gdr.h"

/*
 * Fill n for the GPUs and HCAs of ty (and every bridge above them) from
 * root_dir ("" or "/": the machine's). ACS is read only where the config
 * file gives more than its first 64 bytes (root); the NCCL version,
 * memlock and dma-buf probe are left unknown for the caller to set.
 */
llmp_status gdr_read_node(const char *root_dir, const struct topo_type *ty, struct gdr_node *n, char *msg,
			  size_t len);

/*
 * ACS of every PCI bridge (class 0x0604) under root_dir, for a caller that
 * is root now and will judge later without root (the plugin's
 * task_init_privileged): *devs (malloc'd, bus and ACS only) and *n. Bridges
 * whose config cannot be read past 64 bytes are left out.
 */
llmp_status gdr_read_bridges_acs(const char *root_dir, struct gdr_pcidev **devs, unsigned *n, char *msg,
				 size_t len);

#endif /* LLMP_GDR_READ_H */

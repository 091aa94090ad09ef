# SPDX-License-Identifier: BSD-3-Clause
# topology/local.mk - the machine model: topology files, PCIe paths as NCCL
# sees them, GPUDirect RDMA verdicts, NCCL's topology file, rails, GPUs; and
# the discovery of this node (included by Makefile.am; paths are from the
# top of the tree).
topology_sources = \
	topology/topo.h topology/topo_file.c topology/topo_write.c topology/topo_merge.c \
	topology/pci_path.h topology/pci_path.c \
	topology/gpu_desc.h topology/gpu_desc.c \
	topology/gdr.h topology/gdr.c \
	topology/nccl_topo.h topology/nccl_topo_write.c topology/nccl_topo_check.c \
	topology/nccl_dump.h topology/nccl_dump.c \
	topology/nccl_log.h topology/nccl_log.c \
	topology/rails.h topology/rails.c
noinst_LTLIBRARIES += topology/libtopology.la
topology_libtopology_la_SOURCES = $(topology_sources)

# Discovery of this node (sysfs, Slurm's tree address, NVML, what GPUDirect
# RDMA needs): a library of its own, so the model stays pure computation.
noinst_LTLIBRARIES += topology/discover/libdiscover.la
topology_discover_libdiscover_la_SOURCES = topology/discover/discover.h topology/discover/discover.c \
	topology/discover/sysfs.c topology/discover/slurm_addr.c topology/discover/nvml.c \
	topology/discover/gdr_read.h topology/discover/gdr_read.c topology/discover/read_line.h
topology_discover_libdiscover_la_LIBADD = -ldl
EXTRA_DIST += topology/README.md

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gdr.h - whether NCCL will use GPUDirect RDMA between a GPU and an HCA
 * of a node, and every reason when not (NCCL 2.28's rules, as
 * doc/gpudirect.md lists them). The facts of a node are read by
 * topology/discover/gdr_read.c (sysfs, procfs, root-only PCI config
 * space); the rules here are pure functions over them.
 */
#ifndef LLMP_GDR_H
#define LLMP_GDR_H

#include <stdbool.h>
#include <stddef.h>

#include "pci_path.h"
#include "topo.h"

enum gdr_driver { GDR_DRIVER_ABSENT, GDR_DRIVER_PROPRIETARY, GDR_DRIVER_OPEN };

/* What is known of ACS on a bridge: its control register needs root (a 64-byte config file). */
enum gdr_acs { GDR_ACS_UNREAD, GDR_ACS_NONE, GDR_ACS_READ };

/* ACS control bits (linux/pci_regs.h): these three send peer-to-peer traffic up to the root. */
#define GDR_ACS_RR 0x0004u /* P2P request redirect */
#define GDR_ACS_CR 0x0008u /* P2P completion redirect */
#define GDR_ACS_EC 0x0020u /* P2P egress control */
#define GDR_ACS_REDIRECTS (GDR_ACS_RR | GDR_ACS_CR | GDR_ACS_EC)

/* What the CUDA driver says of a GPU (cuDeviceGetAttribute); zero: not asked. */
enum gdr_gpu_attr { GDR_ATTR_UNKNOWN, GDR_ATTR_NO, GDR_ATTR_YES };

/* A PCI function on a path: a GPU, an HCA or a bridge above them. */
struct gdr_pcidev {
	char bus[TOPO_BUS_MAX];
	char iommu[16]; /* its IOMMU group's type: "DMA", "DMA-FQ", "identity", ... ; "" none */
	enum gdr_acs acs;
	unsigned acs_ctrl;
	/* A GPU's CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED (116), which NCCL 2.28 takes as
	 * its gpu gdr flag, and _DMA_BUF_SUPPORTED (124), which its dma-buf path needs. */
	enum gdr_gpu_attr gpu_gdr, gpu_dmabuf;
};

/* Below this locked-memory limit RDMA registration of NCCL's buffers fails (see gdr.c). */
#define GDR_MEMLOCK_MIN ((unsigned long long)64 << 20)
#define GDR_MEMLOCK_UNLIMITED (~0ULL)

struct gdr_node {
	bool nvidia_peermem; /* /sys/module/nvidia_peermem/version */
	bool nv_peer_mem;    /* /sys/kernel/mm/memory_peers/nv_mem{,_nc}/version */
	char kernel[64];     /* /proc/sys/kernel/osrelease; "" unknown */
	enum gdr_driver driver;
	int dmabuf_probe;           /* ibv_reg_dmabuf_mr(fd -1): 1 EBADF, 0 EOPNOTSUPP, -1 not probed */
	int nccl_version;           /* ncclGetVersion's code (22809); 0 unknown */
	int ib_devices;             /* /dev/infiniband/uverbs* seen: 1, 0, -1 not looked */
	unsigned long long memlock; /* RLIMIT_MEMLOCK in bytes; 0 unknown */
	char gpu_attrs_why[160];    /* why the GPUs' CUDA attributes were not read; "" read */
	struct gdr_pcidev *devs;
	unsigned ndevs;
};

/* Why GPUDirect RDMA will not be used, or why using it is known to fail. */
enum gdr_reason {
	GDR_R_NO_PEERMEM = 1u << 0,    /* neither peer-memory module loaded */
	GDR_R_NCCL_PEERMEM = 1u << 1,  /* nvidia_peermem only, NCCL < 2.23.4 looks for nv_peer_mem */
	GDR_R_DMABUF_KERNEL = 1u << 2, /* kernel < 5.12 */
	GDR_R_DMABUF_DRIVER = 1u << 3, /* NVIDIA's proprietary kernel module, or none */
	GDR_R_DMABUF_NCCL = 1u << 4,   /* NCCL < 2.13 */
	GDR_R_DMABUF_IBV = 1u << 5,    /* the HCA driver refuses dma-buf registration */
	GDR_R_LEVEL = 1u << 6,         /* path beyond NCCL_NET_GDR_LEVEL */
	GDR_R_NO_IBDEV = 1u << 7,      /* no /dev/infiniband: NCCL uses sockets */
	/* NCCL will try GDR, and it is known to fail or hang: */
	GDR_R_ACS = 1u << 8,      /* ACS redirect or egress control on a bridge between them */
	GDR_R_IOMMU = 1u << 9,    /* a translating IOMMU on the GPU or the HCA */
	GDR_R_MEMLOCK = 1u << 10, /* locked-memory limit too low to register buffers */
	/* And two more of the not-used kind, from the CUDA driver: */
	GDR_R_GPU = 1u << 11,        /* the GPU reports no GPUDirect RDMA support (attribute 116) */
	GDR_R_DMABUF_GPU = 1u << 12, /* no dma-buf: the GPU reports no dma-buf support (attribute 124) */
};
#define GDR_R_NOT_USED (0x00ffu | GDR_R_GPU | GDR_R_DMABUF_GPU)
#define GDR_R_KNOWN_BAD (GDR_R_ACS | GDR_R_IOMMU)

enum gdr_outcome { GDR_USED, GDR_NOT_USED, GDR_BROKEN };

struct gdr_verdict {
	enum gdr_outcome outcome;
	enum topo_path path;          /* NCCL's path type between them */
	unsigned reasons;             /* enum gdr_reason bits */
	bool acs_unchecked;           /* a bridge on the path whose ACS could not be read (not root) */
	char acs_bus[TOPO_BUS_MAX];   /* GDR_R_ACS: the first such bridge */
	unsigned acs_ctrl;            /* and its control register */
	char iommu_bus[TOPO_BUS_MAX]; /* GDR_R_IOMMU: the device */
	char iommu_type[16];
};

/* The facts of a PCI function by bus id, or NULL. */
const struct gdr_pcidev *gdr_node_dev(const struct gdr_node *n, const char *bus);

/*
 * The bridges whose ACS matters between a and b: from the last bridge
 * their chains share (or every one, when they share none) down to each.
 * Writes up to max indices as (which, index): which 0 for a's pcie, 1 for
 * b's; returns how many.
 */
unsigned gdr_path_bridges(const struct topo_pci *a, const struct topo_pci *b, unsigned (*out)[2],
			  unsigned max);

/* NCCL's verdict for a GPU and an HCA of the node, with level NCCL_NET_GDR_LEVEL's value. */
void gdr_pair_verdict(const struct gdr_node *n, const struct topo_pci *gpu, const struct topo_pci *hca,
		      enum topo_path level, struct gdr_verdict *v);

/* Whether the HCAs can register GPU memory as NCCL decides it: a module NCCL sees, or dma-buf. */
bool gdr_nic_capable(const struct gdr_node *n);

/* The verdict in words: "yes", "no: REASON; REASON", "broken: REASON". */
void gdr_verdict_text(const struct gdr_node *n, const struct gdr_verdict *v, enum topo_path level, char *buf,
		      size_t len);

/* Kernel release "5.15.0-91-generic" as 5 and 15; false when it does not start so. */
bool gdr_kernel_version(const char *release, unsigned *major, unsigned *minor);

/* Fill the ACS of n's bridges left unread from acs[0..nacs) (read earlier, as root). */
void gdr_node_merge_acs(struct gdr_node *n, const struct gdr_pcidev *acs, unsigned nacs);

void gdr_node_free(struct gdr_node *n);

#endif /* LLMP_GDR_H */

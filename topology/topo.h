/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.h - what llmp knows of the machines: node types (GPUs, HCAs, NUMA,
 * PCIe), which host is of which type, and the switch tree. The format on
 * disk is doc/topology-json.md; a discovered node (topology/discover/) and
 * a hand-written cluster are the same structure.
 *
 * Not installed yet: placement and the cost report will settle what is
 * public. Names: topo_.
 */
#ifndef LLMP_TOPO_H
#define LLMP_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <llmp/llmp_status.h>

#define TOPO_VERSION 1
#define TOPO_NAME_MAX 64 /* bytes of a name, NUL included */
#define TOPO_BUS_MAX 16  /* "dddd:bb:dd.f" and its NUL */
#define TOPO_PCIE_MAX 8  /* bridges above a device */
#define TOPO_FILE_MAX ((size_t)64 << 20)
#define TOPO_HOSTS_MAX ((size_t)1 << 20)
#define TOPO_GPU_DESC_MAX 128 /* a node type's "gpu": a --gpu text (model_desc.h) and its NUL */

/* Where a device hangs: its PCI address, NUMA node, and the bridges above it from the root port down. */
struct topo_pci {
	char bus[TOPO_BUS_MAX]; /* "" when unknown */
	int numa;               /* -1: unknown */
	char pcie[TOPO_PCIE_MAX][TOPO_BUS_MAX];
	unsigned npcie;
	/*
	 * Each bridge's vendor, device, subsystem vendor and subsystem device,
	 * 16 bits each from the top, as NCCL packs them; 0 unknown. Discovery
	 * only (not in the file): NCCL merges Broadcom switches by it (pci_path.c).
	 */
	uint64_t pcie_id[TOPO_PCIE_MAX];
};

/* Unknown: discovery without NVML, or a file that does not say. */
enum topo_nvlink { TOPO_NVLINK_UNKNOWN, TOPO_NVLINK_NONE, TOPO_NVLINK_SWITCH, TOPO_NVLINK_PEERS };

struct topo_gpu {
	struct topo_pci pci;
	char model[TOPO_NAME_MAX];
	char uuid[TOPO_NAME_MAX];
	enum topo_nvlink nvlink;
	char (*peers)[TOPO_BUS_MAX]; /* TOPO_NVLINK_PEERS: bus ids of the GPUs its links reach */
	unsigned npeers;
	unsigned nvlinks;           /* active links; 0 unknown */
	char domain[TOPO_NAME_MAX]; /* multi-node NVLink domain; "" none */
};

/* "xxxx:xxxx:xxxx:xxxx" and its NUL. */
#define TOPO_SUBNET_MAX 20

/* Whether s is a subnet prefix as topo_port keeps it: four groups of four lowercase hex digits. */
bool topo_subnet_valid(const char *s);

struct topo_port {
	unsigned port;
	char state[16]; /* "ACTIVE", "DOWN", ... */
	unsigned gbps;
	char link[16]; /* "InfiniBand", "Ethernet" */
	char netdev[TOPO_NAME_MAX];
	char subnet
		[TOPO_SUBNET_MAX]; /* GID prefix, gids/0's first 64 bits: "fe80:0000:0000:0000"; "" unknown */
};

struct topo_hca {
	char name[TOPO_NAME_MAX];
	struct topo_pci pci;
	struct topo_port *ports;
	unsigned nports;
};

struct topo_type {
	char name[TOPO_NAME_MAX];
	unsigned numa_nodes;
	struct topo_gpu *gpus;
	unsigned ngpus;
	struct topo_hca *hcas;
	unsigned nhcas;
	char gpu[TOPO_GPU_DESC_MAX]; /* what its GPUs are for the step model ("h100", "mem=80,tflops=989"); "" unsaid */
};

struct topo_node {
	char host[TOPO_NAME_MAX];
	unsigned type;              /* index in types */
	char domain[TOPO_NAME_MAX]; /* NVLink domain of its GPUs when its type names none */
	long leaf;                  /* index in switches of its leaf; -1 none */
};

struct topo_switch {
	char name[TOPO_NAME_MAX];
	long parent; /* index; -1 for a root */
	bool leaf;   /* it holds nodes, not switches */
};

struct topo {
	unsigned version;
	char *source;
	struct topo_type *types;
	unsigned ntypes;
	struct topo_node *nodes;
	size_t nnodes;
	struct topo_switch *switches;
	size_t nswitches;
	char note[160]; /* what discovery could not read (NVML), for people; not in the file */
};

/*
 * Read a topology file (doc/topology-json.md), checking everything the
 * format says. On failure *t is empty and msg says "PATH:LINE: what",
 * naming the key.
 */
llmp_status topo_read_file(const char *path, struct topo *t, char *msg, size_t len);
/* The same from text in memory; name stands for the path in messages. */
llmp_status topo_read_text(const char *text, size_t n, const char *name, struct topo *t, char *msg,
			   size_t len);
void topo_free(struct topo *t);

/*
 * Add part's node types, nodes and switches to whole (topo_merge.c): a
 * job's view built from each node's own. Two nodes of one name, two types
 * of one name, or a switch under another parent than before: an error
 * naming it, and whole keeps what was merged before.
 */
llmp_status topo_merge(struct topo *whole, const struct topo *part, char *msg, size_t len);

/* Write t in the format of doc/topology-json.md; -1 on an output error. */
int topo_write_json(const struct topo *t, FILE *out);
/* Write t for people: each node type, its GPUs with their nearest HCA, the tree. */
int topo_write_text(const struct topo *t, FILE *out);

/*
 * How near two devices of one node are, as NCCL and `nvidia-smi topo -m`
 * class them: under one PCIe switch (PIX), under bridges that meet below
 * the root port (PXB), under one root port (PHB), on one NUMA node (NODE),
 * or not (SYS).
 */
enum topo_distance { TOPO_PIX, TOPO_PXB, TOPO_PHB, TOPO_NODE, TOPO_SYS };
enum topo_distance topo_pci_distance(const struct topo_pci *a, const struct topo_pci *b);
const char *topo_distance_name(enum topo_distance d);

/* Names looked up by bisection: hosts of a topology, its switches. */
struct topo_name_index {
	const char *name;
	size_t index;
};
/* Sort v[0..n) by name. */
void topo_names_sort(struct topo_name_index *v, size_t n);
/* The index of name in v (sorted), or -1. */
long topo_names_find(const struct topo_name_index *v, size_t n, const char *name);

/* Whether an HCA port carries traffic: ACTIVE, InfiniBand or Ethernet (NCCL's filter). */
bool topo_port_usable(const struct topo_port *p);
/* Whether an HCA has such a port. */
bool topo_hca_usable(const struct topo_hca *h);

/* The characters of a name in a topology: hosts, switches, node types, HCAs, netdevs, UUIDs. */
#define TOPO_NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
/* Whether s is such a name, of 1 to TOPO_NAME_MAX - 1 bytes (topo_file.c). */
bool topo_name_ok(const char *s);
/* Whether s is a PCI address "dddd:bb:dd.f": lower-case hex, function 0-7 (topo_file.c). */
bool topo_bus_id(const char *s);

#endif /* LLMP_TOPO_H */

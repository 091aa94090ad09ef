/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sysfs.c - GPUs, InfiniBand/RoCE HCAs and NUMA nodes from Linux's sysfs,
 * read as hwloc and NCCL read them (open-mpi/hwloc hwloc/topology-linux.c,
 * NVIDIA/nccl src/graph/xml.cc; the attributes in torvalds/linux
 * Documentation/ABI/stable/sysfs-class-infiniband):
 *
 *   /sys/bus/pci/devices/B/{vendor,class,numa_node}  a GPU is vendor 0x10de,
 *                                                    class 0x03xxxx
 *   the resolved path of B                           the bridges above it
 *   /sys/class/infiniband/H/device                   its PCI function
 *   /sys/class/infiniband/H/ports/P/{state,rate,link_layer}
 *                                                    "4: ACTIVE", "400 Gb/sec (4X NDR)"
 *   /sys/class/infiniband/H/ports/P/gid_attrs/ndevs/0, or device/net/
 *                                                    the netdev
 *   /sys/devices/system/node/nodeN                   NUMA nodes
 *
 * Only the leading number of a rate is parsed, never its text: kernels
 * add speeds. A file that is missing leaves its field unknown.
 */
#define _GNU_SOURCE
#include "discover.h"
#include "read_line.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"

#define PATH_LEN 4096

/* root + path; false when it does not fit. */
static bool join(char *buf, const char *root, const char *path)
{
	int n = snprintf(buf, PATH_LEN, "%s%s", root, path);
	return n > 0 && n < PATH_LEN;
}

/* The first line of a small file, without its newline; false when it cannot be read. */
bool discover_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* vendor, device, subsystem_vendor, subsystem_device of the function at dir, packed as NCCL does; 0 unknown. */
static uint64_t read_ids(const char *dir)
{
	static const char *const names[] = { "vendor", "device", "subsystem_vendor", "subsystem_device" };
	char path[PATH_MAX + 32], text[32];
	uint64_t id = 0;
	for (unsigned i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (!discover_read_line(path, text, sizeof text))
			return 0;
		id = id << 16 | (strtoul(text, NULL, 16) & 0xffff);
	}
	return id;
}

/* numa_node, pcie and bus of the PCI function whose sysfs directory is dir. */
static void read_pci(const char *dir, struct topo_pci *pci)
{
	char path[PATH_LEN + 16], real[PATH_MAX], text[32];
	pci->numa = -1;
	snprintf(path, sizeof path, "%s/numa_node", dir);
	if (discover_read_line(path, text, sizeof text))
		pci->numa = atoi(text) < 0 ? -1 : atoi(text);
	if (!realpath(dir, real))
		return;
	/* .../pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0: bridges, then the function. */
	const char *last = strrchr(real, '/');
	if (last && topo_bus_id(last + 1))
		snprintf(pci->bus, sizeof pci->bus, "%s", last + 1);
	char *save = NULL, bridge[PATH_MAX];
	unsigned n = 0;
	size_t at = 0;
	for (char *part = strtok_r(real, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
		/* The path so far: the bridge's own sysfs directory, for its ids. */
		int k = snprintf(bridge + at, sizeof bridge - at, "/%s", part);
		at = k < 0 || (size_t)k >= sizeof bridge - at ? sizeof bridge - 1 : at + (size_t)k;
		if (topo_bus_id(part) && strcmp(part, pci->bus) != 0 && n < TOPO_PCIE_MAX) {
			pci->pcie_id[n] = read_ids(bridge);
			snprintf(pci->pcie[n++], TOPO_BUS_MAX, "%s", part);
		}
	}
	pci->npcie = n;
}

static int entry_names(const void *a, const void *b)
{
	return strverscmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names in directory path (no dot entries), sorted as versions ("mlx5_2" before "mlx5_10"). */
static llmp_status list_dir(const char *path, char ***names, size_t *n, char *msg, size_t len)
{
	size_t cap = 0;
	*names = NULL;
	*n = 0;
	DIR *d = opendir(path);
	if (!d)
		return LLMP_OK; /* absent: none of these */
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 32;
			char **grown = realloc(*names, cap * sizeof *grown);
			if (!grown)
				break;
			*names = grown;
		}
		if (!((*names)[*n] = strdup(e->d_name)))
			break;
		(*n)++;
	}
	bool complete = e == NULL;
	closedir(d);
	if (!complete) {
		for (size_t i = 0; i < *n; i++)
			free((*names)[i]);
		free(*names);
		*names = NULL;
		*n = 0;
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "listing %s: out of memory", path);
	}
	if (*n)
		qsort(*names, *n, sizeof **names, entry_names);
	return LLMP_OK;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static unsigned count_numa(const char *root)
{
	char path[PATH_LEN], **names, why[64];
	size_t n;
	unsigned count = 0;
	if (!join(path, root, "/sys/devices/system/node") ||
	    list_dir(path, &names, &n, why, sizeof why) != LLMP_OK)
		return 1;
	for (size_t i = 0; i < n; i++)
		count += strncmp(names[i], "node", 4) == 0 && names[i][4] &&
			 strspn(names[i] + 4, "0123456789") == strlen(names[i] + 4);
	free_names(names, n);
	return count ? count : 1;
}

static llmp_status find_gpus(const char *root, struct topo_type *type, char *msg, size_t len)
{
	char dir[PATH_LEN], path[PATH_LEN + 300], text[32], **names;
	size_t n;
	if (!join(dir, root, "/sys/bus/pci/devices"))
		return llmp_fail(LLMP_ERR_ARG, msg, len, "sysfs root too long");
	llmp_status st = list_dir(dir, &names, &n, msg, len);
	if (st != LLMP_OK)
		return st;
	for (size_t i = 0; i < n; i++) {
		unsigned long vendor, cls;
		snprintf(path, sizeof path, "%s/%s/vendor", dir, names[i]);
		if (!discover_read_line(path, text, sizeof text) ||
		    (vendor = strtoul(text, NULL, 16)) != 0x10de)
			continue;
		snprintf(path, sizeof path, "%s/%s/class", dir, names[i]);
		if (!discover_read_line(path, text, sizeof text) ||
		    ((cls = strtoul(text, NULL, 16)) >> 16) != 0x03)
			continue;
		struct topo_gpu *grown = realloc(type->gpus, (type->ngpus + 1) * sizeof *grown);
		if (!grown) {
			st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "discovering GPUs: out of memory");
			break;
		}
		type->gpus = grown;
		struct topo_gpu *g = &type->gpus[type->ngpus++];
		memset(g, 0, sizeof *g);
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		read_pci(path, &g->pci);
		if (!g->pci.bus[0] && topo_bus_id(names[i]))
			snprintf(g->pci.bus, sizeof g->pci.bus, "%s", names[i]);
	}
	free_names(names, n);
	return st;
}

/* "4: ACTIVE" -> "ACTIVE"; "400 Gb/sec (4X NDR)" -> 400. */
static void read_port(const char *dir, unsigned port, struct topo_port *p)
{
	char path[3 * PATH_LEN], text[128], **names, why[64];
	size_t n;
	p->port = port;
	snprintf(p->state, sizeof p->state, "UNKNOWN");
	snprintf(path, sizeof path, "%s/state", dir);
	if (discover_read_line(path, text, sizeof text)) {
		const char *colon = strchr(text, ':');
		const char *word = colon ? colon + 1 + strspn(colon + 1, " ") : text;
		size_t k = 0;
		while (word[k] && k + 1 < sizeof p->state && word[k] >= 'A' && word[k] <= 'Z')
			k++;
		if (k) {
			memcpy(p->state, word, k);
			p->state[k] = '\0';
		}
	}
	snprintf(path, sizeof path, "%s/rate", dir);
	if (discover_read_line(path, text, sizeof text))
		p->gbps = (unsigned)strtoul(text, NULL, 10);
	snprintf(path, sizeof path, "%s/link_layer", dir);
	if (discover_read_line(path, text, sizeof text))
		snprintf(p->link, sizeof p->link, "%s",
			 !strcmp(text, "InfiniBand") ? "InfiniBand"
			 : !strcmp(text, "Ethernet") ? "Ethernet"
						     : "");
	/* "fe80:0000:0000:0000:0c42:a103:0080:4a7e": the subnet prefix, then the port GUID; all zero: none. */
	snprintf(path, sizeof path, "%s/gids/0", dir);
	if (discover_read_line(path, text, sizeof text) && strlen(text) == 39 &&
	    strcmp(text, "0000:0000:0000:0000:0000:0000:0000:0000") != 0) {
		memcpy(p->subnet, text, TOPO_SUBNET_MAX - 1);
		p->subnet[TOPO_SUBNET_MAX - 1] = '\0';
		if (!topo_subnet_valid(p->subnet))
			p->subnet[0] = '\0';
	}
	snprintf(path, sizeof path, "%s/gid_attrs/ndevs/0", dir);
	if (discover_read_line(path, text, sizeof text) && text[0] && strlen(text) < sizeof p->netdev)
		memcpy(p->netdev, text, strlen(text) + 1);
	else {
		snprintf(path, sizeof path, "%s/../../device/net", dir);
		if (list_dir(path, &names, &n, why, sizeof why) == LLMP_OK && n &&
		    strlen(names[0]) < sizeof p->netdev)
			snprintf(p->netdev, sizeof p->netdev, "%s", names[0]);
		if (n)
			free_names(names, n);
	}
}

static llmp_status find_hcas(const char *root, struct topo_type *type, char *msg, size_t len)
{
	char dir[PATH_LEN], path[2 * PATH_LEN], **names, **ports;
	size_t n, nports;
	if (!join(dir, root, "/sys/class/infiniband"))
		return llmp_fail(LLMP_ERR_ARG, msg, len, "sysfs root too long");
	llmp_status st = list_dir(dir, &names, &n, msg, len);
	if (st != LLMP_OK)
		return st;
	if (n && !(type->hcas = calloc(n, sizeof *type->hcas)))
		st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "discovering HCAs: out of memory");
	for (size_t i = 0; st == LLMP_OK && i < n; i++) {
		if (strlen(names[i]) >= TOPO_NAME_MAX)
			continue;
		struct topo_hca *h = &type->hcas[type->nhcas++];
		snprintf(h->name, sizeof h->name, "%s", names[i]);
		snprintf(path, sizeof path, "%s/%s/device", dir, names[i]);
		read_pci(path, &h->pci);
		snprintf(path, sizeof path, "%s/%s/ports", dir, names[i]);
		if ((st = list_dir(path, &ports, &nports, msg, len)) != LLMP_OK)
			break;
		if (nports && !(h->ports = calloc(nports, sizeof *h->ports)))
			st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "discovering HCAs: out of memory");
		for (size_t p = 0; st == LLMP_OK && p < nports; p++) {
			unsigned long port = strtoul(ports[p], NULL, 10);
			if (port < 1 || port > 255)
				continue;
			snprintf(path, sizeof path, "%s/%s/ports/%s", dir, names[i], ports[p]);
			read_port(path, (unsigned)port, &h->ports[h->nports++]);
		}
		free_names(ports, nports);
	}
	free_names(names, n);
	return st;
}

static int gpu_by_bus(const void *a, const void *b)
{
	return strcmp(((const struct topo_gpu *)a)->pci.bus, ((const struct topo_gpu *)b)->pci.bus);
}

llmp_status topo_discover_sysfs(const char *sysfs_root, struct topo_type *type, char *msg, size_t len)
{
	const char *root = sysfs_root && strcmp(sysfs_root, "/") ? sysfs_root : "";
	type->numa_nodes = count_numa(root);
	llmp_status st = find_gpus(root, type, msg, len);
	if (st == LLMP_OK)
		st = find_hcas(root, type, msg, len);
	if (st == LLMP_OK && type->ngpus)
		qsort(type->gpus, type->ngpus, sizeof *type->gpus, gpu_by_bus);
	/* A NUMA node sysfs gives beyond those counted would not pass the file's checks. */
	for (unsigned g = 0; g < type->ngpus; g++)
		if (type->gpus[g].pci.numa >= (int)type->numa_nodes)
			type->gpus[g].pci.numa = -1;
	for (unsigned h = 0; h < type->nhcas; h++)
		if (type->hcas[h].pci.numa >= (int)type->numa_nodes)
			type->hcas[h].pci.numa = -1;
	return st;
}

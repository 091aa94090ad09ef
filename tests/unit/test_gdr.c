/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gdr.c - NCCL 2.28's GPUDirect RDMA decision for a GPU and an HCA
 * (topology/gdr.c), one case per way it goes wrong in the field
 * (doc/gpudirect.md's reasons; NVIDIA/nccl src/transport/net_ib.cc and
 * src/graph/paths.cc ncclTopoCheckGdr). Each expected outcome and reason is
 * written by hand from NCCL's rules: the HCA side needs nv_peer_mem,
 * nvidia_peermem (NCCL >= 2.23.4) or dma-buf (kernel >= 5.12, open NVIDIA
 * module, NCCL >= 2.13); the path at most NCCL_NET_GDR_LEVEL (PXB); ACS
 * redirect and a translating IOMMU break it.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "topology/discover/gdr_read.h"
#include "topology/gdr.h"

static struct topo_pci pci(const char *bus, int numa, const char *b0, const char *b1, const char *b2)
{
	struct topo_pci p = { .numa = numa };
	strcpy(p.bus, bus);
	const char *b[] = { b0, b1, b2 };
	for (unsigned i = 0; i < 3 && b[i]; i++)
		strcpy(p.pcie[p.npcie++], b[i]);
	return p;
}

/* GPU 18 and mlx5_0 19 behind switch 16 (downstream ports 17:00.0, 17:01.0); mlx5_1 on root port 28. */
static struct topo_pci gpu0, hca0, hca1;
static struct gdr_pcidev devs[8];

/* A healthy node: nvidia_peermem, NCCL 2.28.9, 6.8 kernel, open module, uverbs, memlock unlimited. */
static struct gdr_node healthy(void)
{
	gpu0 = pci("0000:18:00.0", 0, "0000:15:01.0", "0000:16:00.0", "0000:17:00.0");
	hca0 = pci("0000:19:00.0", 0, "0000:15:01.0", "0000:16:00.0", "0000:17:01.0");
	hca1 = pci("0000:29:00.0", 0, "0000:28:01.0", NULL, NULL);
	const char *bus[] = { "0000:18:00.0", "0000:19:00.0", "0000:29:00.0", "0000:15:01.0",
			      "0000:16:00.0", "0000:17:00.0", "0000:17:01.0", "0000:28:01.0" };
	for (unsigned i = 0; i < 8; i++) {
		memset(&devs[i], 0, sizeof devs[i]);
		strcpy(devs[i].bus, bus[i]);
		strcpy(devs[i].iommu, "identity");
		devs[i].acs = i < 3 ? GDR_ACS_NONE : GDR_ACS_READ;
		devs[i].acs_ctrl = 0x0001; /* SrcValid alone: what lspci shows, no redirect */
	}
	struct gdr_node n = { .nvidia_peermem = true,
			      .kernel = "6.8.0-45-generic",
			      .driver = GDR_DRIVER_OPEN,
			      .dmabuf_probe = -1,
			      .nccl_version = 22809,
			      .ib_devices = 1,
			      .memlock = GDR_MEMLOCK_UNLIMITED,
			      .devs = devs,
			      .ndevs = 8 };
	return n;
}

static struct gdr_verdict judge(const struct gdr_node *n, const struct topo_pci *hca, enum topo_path level,
				char *text, size_t len)
{
	struct gdr_verdict v;
	gdr_pair_verdict(n, &gpu0, hca, level, &v);
	gdr_verdict_text(n, &v, level, text, len);
	return v;
}

static void test_healthy_and_modules(void **state)
{
	(void)state;
	char t[1024];
	struct gdr_node n = healthy();
	struct gdr_verdict v = judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t);
	assert_int_equal(v.outcome, GDR_USED);
	assert_int_equal(v.path, TOPO_PATH_PIX);
	assert_int_equal(v.reasons, 0);
	assert_string_equal(t, "yes");
	/* No module, 5.10 kernel, proprietary module: neither peer memory nor dma-buf. */
	n.nvidia_peermem = false;
	strcpy(n.kernel, "5.10.0-28-amd64");
	n.driver = GDR_DRIVER_PROPRIETARY;
	v = judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t);
	assert_int_equal(v.outcome, GDR_NOT_USED);
	assert_int_equal(v.reasons, GDR_R_NO_PEERMEM | GDR_R_DMABUF_KERNEL | GDR_R_DMABUF_DRIVER);
	assert_non_null(strstr(t, "no: no nvidia_peermem or nv_peer_mem loaded"));
	assert_non_null(strstr(t, "kernel 5.10.0-28-amd64 (5.12 needed)"));
	assert_non_null(strstr(t, "proprietary kernel module"));
	/* Open module on 6.x: dma-buf carries it without a module. */
	strcpy(n.kernel, "6.1.0-18-amd64");
	n.driver = GDR_DRIVER_OPEN;
	v = judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t);
	assert_int_equal(v.outcome, GDR_USED);
	/* ... unless the HCA driver refuses dma-buf registration (EOPNOTSUPP). */
	n.dmabuf_probe = 0;
	v = judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t);
	assert_int_equal(v.reasons, GDR_R_NO_PEERMEM | GDR_R_DMABUF_IBV);
	/* nvidia_peermem with NCCL 2.22.3 and no dma-buf: NVIDIA/nccl#1676. */
	n = healthy();
	n.driver = GDR_DRIVER_PROPRIETARY;
	n.nccl_version = 22203;
	v = judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t);
	assert_int_equal(v.outcome, GDR_NOT_USED);
	assert_int_equal(v.reasons, GDR_R_NCCL_PEERMEM | GDR_R_DMABUF_DRIVER);
	assert_non_null(strstr(t, "NCCL 2.22.3 does not see nvidia_peermem"));
	/* The legacy nv_peer_mem is seen by every NCCL. */
	n.nv_peer_mem = true;
	assert_int_equal(judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t).outcome, GDR_USED);
	/* NCCL 2.12: no dma-buf at all. */
	n = healthy();
	n.nvidia_peermem = false;
	n.nccl_version = 21205;
	assert_int_equal(judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t).reasons,
			 GDR_R_NO_PEERMEM | GDR_R_DMABUF_NCCL);
}

static void test_path_level(void **state)
{
	(void)state;
	char t[1024];
	struct gdr_node n = healthy();
	/* mlx5_1 on another root port of NUMA node 0: PHB, beyond the default PXB. */
	struct gdr_verdict v = judge(&n, &hca1, TOPO_PATH_PXB, t, sizeof t);
	assert_int_equal(v.outcome, GDR_NOT_USED);
	assert_int_equal(v.path, TOPO_PATH_PHB);
	assert_int_equal(v.reasons, GDR_R_LEVEL);
	assert_string_equal(t, "no: path PHB beyond NCCL_NET_GDR_LEVEL=PXB");
	assert_int_equal(judge(&n, &hca1, TOPO_PATH_PHB, t, sizeof t).outcome, GDR_USED);
	/* LOC: not even the switch's own NIC. */
	assert_int_equal(judge(&n, &hca0, TOPO_PATH_LOC, t, sizeof t).reasons, GDR_R_LEVEL);
}

static void test_broken_paths(void **state)
{
	(void)state;
	char t[1024];
	struct gdr_node n = healthy();
	/* ReqRedir|CmpltRedir on GPU 18's downstream port 17:00.0. */
	devs[5].acs_ctrl = 0x001d;
	struct gdr_verdict v = judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t);
	assert_int_equal(v.outcome, GDR_BROKEN);
	assert_int_equal(v.reasons, GDR_R_ACS);
	assert_string_equal(v.acs_bus, "0000:17:00.0");
	assert_non_null(strstr(t, "broken: ACS ReqRedir CmpltRedir on bridge 0000:17:00.0"));
	/* The root port 15:01.0 is above the switch both hang on: not on their path. */
	devs[5].acs_ctrl = 0x0001;
	devs[3].acs_ctrl = 0x001d;
	assert_int_equal(judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t).outcome, GDR_USED);
	/* ... but it is on the path to mlx5_1 behind another root port. */
	v = judge(&n, &hca1, TOPO_PATH_SYS, t, sizeof t);
	assert_int_equal(v.reasons, GDR_R_ACS);
	assert_string_equal(v.acs_bus, "0000:15:01.0");
	/* Egress control alone also sends traffic up. */
	devs[3].acs_ctrl = 0x0001;
	devs[6].acs_ctrl = GDR_ACS_EC;
	assert_int_equal(judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t).reasons, GDR_R_ACS);
	devs[6].acs_ctrl = 0;
	/* A translating IOMMU on the HCA. */
	strcpy(devs[1].iommu, "DMA-FQ");
	v = judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t);
	assert_int_equal(v.outcome, GDR_BROKEN);
	assert_int_equal(v.reasons, GDR_R_IOMMU);
	assert_string_equal(v.iommu_bus, "0000:19:00.0");
	assert_non_null(strstr(t, "IOMMU translates for 0000:19:00.0 (group type DMA-FQ"));
	strcpy(devs[1].iommu, "identity");
	/* Locked memory of 64 KiB. */
	n.memlock = 64 << 10;
	v = judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t);
	assert_int_equal(v.outcome, GDR_BROKEN);
	assert_non_null(strstr(t, "locked-memory limit 64 KiB"));
	n.memlock = GDR_MEMLOCK_UNLIMITED;
	/* A container without /dev/infiniband: NCCL uses sockets, no GDR. */
	n.ib_devices = 0;
	assert_int_equal(judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t).reasons, GDR_R_NO_IBDEV);
	n.ib_devices = 1;
	/* Not root: ACS unread, said, the verdict otherwise stands. */
	devs[5].acs = GDR_ACS_UNREAD;
	v = judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t);
	assert_int_equal(v.outcome, GDR_USED);
	assert_true(v.acs_unchecked);
	assert_string_equal(t, "yes (ACS not checked: needs root)");
}

static void test_helpers(void **state)
{
	(void)state;
	unsigned ma = 0, mi = 0;
	assert_true(gdr_kernel_version("5.15.0-91-generic", &ma, &mi));
	assert_int_equal(ma, 5);
	assert_int_equal(mi, 15);
	assert_false(gdr_kernel_version("", &ma, &mi));
	assert_false(gdr_kernel_version("linux", &ma, &mi));
	(void)healthy();
	unsigned idx[16][2];
	/* One switch: from the shared upstream port 16 down: 16, 17:00.0 (a), 17:01.0 (b). */
	unsigned k = gdr_path_bridges(&gpu0, &hca0, idx, 16);
	assert_int_equal(k, 3);
	assert_string_equal(gpu0.pcie[idx[0][1]], "0000:16:00.0");
	assert_string_equal(gpu0.pcie[idx[1][1]], "0000:17:00.0");
	assert_int_equal(idx[2][0], 1);
	assert_string_equal(hca0.pcie[idx[2][1]], "0000:17:01.0");
	/* No shared bridge: every one of both. */
	assert_int_equal(gdr_path_bridges(&gpu0, &hca1, idx, 16), 4);
}

static void put_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
}

/* ACS read as root into a list, then handed to a judge that could not read it. */
static void test_bridges_acs(void **state)
{
	(void)state;
	char root[] = "/tmp/llmp-test-gdr-XXXXXX", path[256];
	assert_non_null(mkdtemp(root));
	const char *names[] = { "0000:17:00.0", "0000:17:01.0", "0000:18:00.0", "0000:99:00.0" };
	const char *classes[] = { "0x060400", "0x060400", "0x030200", "0x060400" };
	snprintf(path, sizeof path, "%s/sys", root);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/sys/bus", root);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/sys/bus/pci", root);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/sys/bus/pci/devices", root);
	mkdir(path, 0755);
	for (unsigned i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s", root, names[i]);
		mkdir(path, 0755);
		snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/class", root, names[i]);
		put_file(path, classes[i], strlen(classes[i]));
		/* 17:00.0: AER at 0x100 -> ACS at 0x148, control 0x001d; 17:01.0: AER only; 99: 64 bytes. */
		unsigned char cfg[4096] = { 0 };
		size_t n = i == 3 ? 64 : sizeof cfg;
		if (i < 3) {
			cfg[0x100] = 0x01;
			cfg[0x102] = 0x01;
			if (i == 0) {
				cfg[0x103] = 0x14; /* next 0x148: bits 20-31 of the header */
				cfg[0x102] = 0x81;
				cfg[0x148] = 0x0d;
				cfg[0x14a] = 0x01;
				cfg[0x14e] = 0x1d;
			}
		}
		snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/config", root, names[i]);
		put_file(path, cfg, n);
	}
	struct gdr_pcidev *acs = NULL;
	unsigned nacs = 0;
	char msg[256];
	assert_int_equal(gdr_read_bridges_acs(root, &acs, &nacs, msg, sizeof msg), LLMP_OK);
	/* The GPU is no bridge; 99's 64 bytes are left out. */
	assert_int_equal(nacs, 2);
	struct gdr_pcidev *a = strcmp(acs[0].bus, "0000:17:00.0") == 0 ? &acs[0] : &acs[1];
	struct gdr_pcidev *b = a == &acs[0] ? &acs[1] : &acs[0];
	assert_string_equal(a->bus, "0000:17:00.0");
	assert_int_equal(a->acs, GDR_ACS_READ);
	assert_int_equal(a->acs_ctrl, 0x001d);
	assert_string_equal(b->bus, "0000:17:01.0");
	assert_int_equal(b->acs, GDR_ACS_NONE);
	/* Merged into a node read without root: the redirect is found. */
	struct gdr_node n = healthy();
	devs[5].acs = GDR_ACS_UNREAD; /* 17:00.0 */
	devs[6].acs = GDR_ACS_UNREAD; /* 17:01.0 */
	gdr_node_merge_acs(&n, acs, nacs);
	assert_int_equal(devs[5].acs, GDR_ACS_READ);
	assert_int_equal(devs[6].acs, GDR_ACS_NONE);
	char t[1024];
	assert_int_equal(judge(&n, &hca0, TOPO_PATH_PXB, t, sizeof t).reasons, GDR_R_ACS);
	free(acs);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_and_modules), cmocka_unit_test(test_path_level),
		cmocka_unit_test(test_broken_paths),        cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_bridges_acs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

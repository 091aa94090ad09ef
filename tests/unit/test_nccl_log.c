/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_nccl_log.c - NCCL's own GPUDirect RDMA lines read back and set
 * against llmp's prediction (topology/nccl_log.c). The log lines are
 * written as NCCL 2.28 prints them (src/graph/topo.cc: "NET/%s : GPU
 * Direct RDMA %s for HCA %d '%s'" after its "host:pid:tid [dev] NCCL INFO "
 * prefix); each expected verdict is worked out by hand: a node with
 * nvidia_peermem and NCCL 2.28.9 can register GPU memory on its HCAs
 * (NCCL must say Enabled), a node with no module, a proprietary driver
 * and NCCL 2.28.9 cannot (NCCL must say Disabled).
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "topology/nccl_log.h"

static struct topo_pci pci(const char *bus, const char *b0, const char *b1, const char *b2)
{
	struct topo_pci p = { .numa = 0 };
	strcpy(p.bus, bus);
	const char *b[] = { b0, b1, b2 };
	for (unsigned i = 0; i < 3; i++)
		strcpy(p.pcie[p.npcie++], b[i]);
	return p;
}

/*
 * Two GPUs, each behind a switch with its own HCA (PIX): GPU 18 with
 * mlx5_0 (19), GPU 38 with mlx5_1 (39); across they are PHB, so each
 * GPU's nearest HCA is its switch mate.
 */
static struct topo_gpu gpus[2];
static struct topo_port ports[2];
static struct topo_hca hcas[2];
static struct topo_type ty;

static void node(void)
{
	memset(gpus, 0, sizeof gpus);
	memset(hcas, 0, sizeof hcas);
	gpus[0].pci = pci("0000:18:00.0", "0000:15:01.0", "0000:16:00.0", "0000:17:00.0");
	gpus[1].pci = pci("0000:38:00.0", "0000:35:01.0", "0000:36:00.0", "0000:37:00.0");
	hcas[0].pci = pci("0000:19:00.0", "0000:15:01.0", "0000:16:00.0", "0000:17:01.0");
	hcas[1].pci = pci("0000:39:00.0", "0000:35:01.0", "0000:36:00.0", "0000:37:01.0");
	for (unsigned i = 0; i < 2; i++) {
		ports[i] = (struct topo_port){
			.port = 1, .state = "ACTIVE", .gbps = 400, .link = "InfiniBand"
		};
		snprintf(hcas[i].name, sizeof hcas[i].name, "mlx5_%u", i);
		hcas[i].ports = &ports[i];
		hcas[i].nports = 1;
	}
	ty = (struct topo_type){
		.name = "t", .numa_nodes = 1, .gpus = gpus, .ngpus = 2, .hcas = hcas, .nhcas = 2
	};
}

static struct gdr_node facts(bool peermem)
{
	return (struct gdr_node){ .nvidia_peermem = peermem,
				  .kernel = "6.8.0-45-generic",
				  .driver = peermem ? GDR_DRIVER_OPEN : GDR_DRIVER_PROPRIETARY,
				  .dmabuf_probe = -1,
				  .nccl_version = 22809,
				  .ib_devices = 1,
				  .memlock = GDR_MEMLOCK_UNLIMITED };
}

#define PFX "node1:4242:4250 [0] NCCL INFO "

static const char log_mixed[] = PFX
	"Bootstrap: Using eth0:10.0.0.1<0>\n" PFX "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n" PFX
	"NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n" /* a second communicator: the last wins */
	PFX "NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1'\n" PFX
	"GPU Direct RDMA Disabled for GPU 0 / HCA 1 (distance 5 > 4)\n" /* per connection: not an HCA line */
	PFX "NET/IB : GPU Direct RDMA Sometimes for HCA 2 'mlx5_2'\n"   /* not NCCL's words */
	"NET/IB : GPU Direct RDMA Enabled for HCA 3 'mlx5_3";           /* no closing quote, no newline */

static void test_parse(void **state)
{
	(void)state;
	struct nccl_log_hca h[4];
	unsigned n = nccl_log_gdr_hcas(log_mixed, strlen(log_mixed), h, 4);
	assert_int_equal(n, 2);
	assert_string_equal(h[0].name, "mlx5_0");
	assert_string_equal(h[0].net, "IB");
	assert_int_equal(h[0].index, 0);
	assert_true(h[0].enabled);
	assert_string_equal(h[1].name, "mlx5_1");
	assert_int_equal(h[1].index, 1);
	assert_false(h[1].enabled);
	/* Without NCCL's prefix, as a file of the bare messages. */
	const char bare[] = "NET/IB : GPU Direct RDMA Enabled for HCA 7 'mlx5_7'\n";
	assert_int_equal(nccl_log_gdr_hcas(bare, strlen(bare), h, 4), 1);
	assert_int_equal(h[0].index, 7);
	/* max bounds what is kept. */
	assert_int_equal(nccl_log_gdr_hcas(log_mixed, strlen(log_mixed), h, 1), 1);
	assert_int_equal(nccl_log_gdr_hcas("", 0, h, 4), 0);
}

/* The brief's case: llmp predicts yes on both pairs, NCCL disabled mlx5_1: one mismatch, named. */
static void test_disagree(void **state)
{
	(void)state;
	node();
	struct gdr_node f = facts(true);
	struct nccl_log_hca h[4];
	unsigned n = nccl_log_gdr_hcas(log_mixed, strlen(log_mixed), h, 4), pairs, differ;
	char report[2048];
	nccl_log_compare(h, n, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(pairs, 2);
	assert_int_equal(differ, 1);
	assert_non_null(strstr(report, "gdr GPU 0000:18:00.0 / mlx5_0: predicted yes"));
	assert_non_null(strstr(report, "NCCL: Enabled for mlx5_0 (HCA 0) (agree)\n"));
	assert_non_null(strstr(report, "gdr GPU 0000:38:00.0 / mlx5_1: predicted yes"));
	assert_non_null(strstr(report, "NCCL: Disabled for mlx5_1 (HCA 1) (mismatch: llmp found"));
	/* The other way: no module, proprietary driver: NCCL enabling mlx5_0 contradicts llmp. */
	f = facts(false);
	nccl_log_compare(h, n, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(differ, 1);
	assert_non_null(strstr(report, "mlx5_0: predicted no: no nvidia_peermem or nv_peer_mem loaded"));
	assert_non_null(strstr(report, "Enabled for mlx5_0 (HCA 0) (mismatch: NCCL registers"));
	assert_non_null(strstr(report, "Disabled for mlx5_1 (HCA 1) (agree)"));
}

static void test_agree_and_missing(void **state)
{
	(void)state;
	node();
	struct gdr_node f = facts(true);
	const char both[] = "NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n"
			    "NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_1'\n";
	struct nccl_log_hca h[4];
	unsigned n = nccl_log_gdr_hcas(both, strlen(both), h, 4), pairs, differ;
	char report[2048];
	nccl_log_compare(h, n, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(pairs, 2);
	assert_int_equal(differ, 0);
	/* A level that rules out PIX: the pair is predicted no, but the HCA line still agrees. */
	nccl_log_compare(h, n, &ty, &f, TOPO_PATH_LOC, report, sizeof report, &pairs, &differ);
	assert_int_equal(differ, 0);
	assert_non_null(strstr(report, "predicted no: path PIX beyond NCCL_NET_GDR_LEVEL=LOC"));
	/* mlx5_1 missing from NCCL's lines: a mismatch, unless no uverbs made NCCL use sockets. */
	n = nccl_log_gdr_hcas(both, strlen(both) / 2, h, 4);
	assert_int_equal(n, 1);
	nccl_log_compare(h, n, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(differ, 1);
	assert_non_null(strstr(report, "NCCL: no IB line for mlx5_1 (mismatch: NCCL named no such HCA"));
	f.ib_devices = 0;
	nccl_log_compare(h, 0, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(pairs, 2);
	assert_int_equal(differ, 0);
	/* An HCA whose ports are all down is not NCCL's choice: GPU 38 falls back to mlx5_0 (PHB). */
	strcpy(ports[1].state, "DOWN");
	f.ib_devices = 1;
	n = nccl_log_gdr_hcas(both, strlen(both), h, 4);
	nccl_log_compare(h, n, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(pairs, 2);
	assert_non_null(strstr(report, "gdr GPU 0000:38:00.0 / mlx5_0: predicted no: path PHB beyond"));
	assert_null(strstr(report, "/ mlx5_1"));
}

/* NCCL opened mlx5_9, which llmp's discovery lacks (a VM hiding the tree): named, counted. */
static void test_unknown_hca(void **state)
{
	(void)state;
	node();
	struct gdr_node f = facts(true);
	const char lines[] = "NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n"
			     "NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_1'\n"
			     "NET/IB : GPU Direct RDMA Disabled for HCA 2 'mlx5_9'\n";
	struct nccl_log_hca h[4];
	unsigned n = nccl_log_gdr_hcas(lines, strlen(lines), h, 4), pairs, differ;
	char report[2048];
	nccl_log_compare(h, n, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(pairs, 2);
	assert_int_equal(differ, 1);
	assert_non_null(strstr(report,
			       "gdr NCCL: Disabled for mlx5_9 (HCA 2), not an HCA of this node as llmp "
			       "discovered it (mismatch)\n"));
	/* A node without GPUs or HCAs: no pair, each of NCCL's HCAs named. */
	ty.ngpus = ty.nhcas = 0;
	nccl_log_compare(h, n, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(pairs, 0);
	assert_int_equal(differ, 3);
	nccl_log_compare(h, 0, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(pairs + differ, 0);
	assert_string_equal(report, "");
}

/*
 * NCCL 2.28.9 on an H200 VM without an HCA (recorded): NET/IB found none,
 * and the socket network's interface got the HCA line. It is no HCA of
 * the node's: not counted as one; llmp's pairs, expecting IB, are named.
 */
static void test_socket_fallback(void **state)
{
	(void)state;
	node();
	struct gdr_node f = facts(true);
	const char lines[] =
		"vm:498:498 [0] NCCL INFO NET/IB : No device found.\n"
		"vm:498:498 [0] NCCL INFO NET/Socket : Using [0]eth0:192.0.2.2<0>\n"
		"vm:498:498 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'\n";
	struct nccl_log_hca h[4];
	unsigned n = nccl_log_gdr_hcas(lines, strlen(lines), h, 4), pairs, differ;
	assert_int_equal(n, 1);
	assert_string_equal(h[0].net, "Socket");
	char report[2048];
	nccl_log_compare(h, n, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(pairs, 2);
	assert_int_equal(differ, 2);
	assert_non_null(
		strstr(report, "gdr NCCL: no IB device; NET/Socket on eth0 (HCA 0): no GPUDirect RDMA\n"));
	assert_non_null(strstr(report, "NCCL: no IB line for mlx5_0 (mismatch: NCCL found no IB device"));
	assert_null(strstr(report, "not an HCA of this node"));
	/* No uverbs device visible: llmp expected sockets too. */
	f.ib_devices = 0;
	nccl_log_compare(h, n, &ty, &f, TOPO_PATH_PXB, report, sizeof report, &pairs, &differ);
	assert_int_equal(differ, 0);
	assert_non_null(strstr(report, "(agree: no uverbs device, NCCL used sockets)"));
}

static void test_file_name(void **state)
{
	(void)state;
	char out[64];
	assert_true(nccl_log_file_name("/tmp/nccl.%h.%p", "node1.cluster.local", 4242, out, sizeof out));
	assert_string_equal(out, "/tmp/nccl.node1.4242");
	assert_true(nccl_log_file_name("a%%b%xc%", "h", 1, out, sizeof out));
	assert_string_equal(out, "a%b%xc%");
	assert_false(nccl_log_file_name("/tmp/%p%p%p", "h", 1234567, out, 16));
	assert_true(nccl_log_file_name("/tmp/%p%p", "h", 1234567, out, 24));
	assert_string_equal(out, "/tmp/12345671234567");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_disagree),
		cmocka_unit_test(test_agree_and_missing),
		cmocka_unit_test(test_unknown_hca),
		cmocka_unit_test(test_socket_fallback),
		cmocka_unit_test(test_file_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_nccl_topo.c - the NCCL_TOPO_FILE writer and the grammar checker
 * (topology/nccl_topo_*.c). The golden file is written by hand from
 * NCCL's rule (every second bridge counted up from a device is a node;
 * CPUs by NUMA node); each refused input is one NCCL 2.28.9's parser was
 * seen to refuse (NVIDIA/nccl src/graph/xml.cc), or one of its limits
 * (xml.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topology/nccl_topo.h"

static struct topo_pci pci(const char *bus, int numa, const char *b0, const char *b1)
{
	struct topo_pci p = { .numa = numa };
	strcpy(p.bus, bus);
	if (b0)
		strcpy(p.pcie[p.npcie++], b0);
	if (b1)
		strcpy(p.pcie[p.npcie++], b1);
	return p;
}

static const char golden[] =
	"<system version=\"1\">\n"
	"  <cpu numaid=\"0\">\n"
	"    <pci busid=\"0000:15:01.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
	"      <pci busid=\"0000:18:00.0\" class=\"0x020700\"/>\n"
	"      <pci busid=\"0000:1b:00.0\" class=\"0x030200\"/>\n"
	"    </pci>\n"
	"    <pci busid=\"0000:29:00.0\" class=\"0x020000\"/>\n"
	"  </cpu>\n"
	"  <cpu numaid=\"1\">\n"
	"    <pci busid=\"0000:97:01.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
	"      <pci busid=\"0000:9a:00.0\" class=\"0x020700\"/>\n"
	"      <pci busid=\"0000:9d:00.0\" class=\"0x030200\"/>\n"
	"    </pci>\n"
	"  </cpu>\n"
	"</system>\n";

static void test_write_golden(void **state)
{
	(void)state;
	struct topo_gpu gpus[2] = { { .pci = pci("0000:1b:00.0", 0, "0000:15:01.0", "0000:16:00.0") },
				    { .pci = pci("0000:9d:00.0", 1, "0000:97:01.0", "0000:98:00.0") } };
	struct topo_port ib = { .port = 1, .state = "ACTIVE", .link = "InfiniBand" };
	struct topo_port eth = { .port = 1, .state = "ACTIVE", .link = "Ethernet" };
	struct topo_hca hcas[3] = {
		{ .name = "mlx5_0",
		  .pci = pci("0000:18:00.0", 0, "0000:15:01.0", "0000:16:01.0"),
		  .ports = &ib,
		  .nports = 1 },
		{ .name = "mlx5_1",
		  .pci = pci("0000:29:00.0", 0, "0000:28:01.0", NULL),
		  .ports = &eth,
		  .nports = 1 },
		{ .name = "mlx5_6",
		  .pci = pci("0000:9a:00.0", 1, "0000:97:01.0", "0000:98:01.0"),
		  .ports = &ib,
		  .nports = 1 },
	};
	struct topo_type ty = {
		.name = "t", .numa_nodes = 2, .gpus = gpus, .ngpus = 2, .hcas = hcas, .nhcas = 3
	};
	char buf[4096], msg[256] = "";
	size_t used = 0;
	if (nccl_topo_write(&ty, "32.0 GT/s PCIe", 16, buf, sizeof buf, &used, msg, sizeof msg) != LLMP_OK)
		fail_msg("%s", msg);
	assert_int_equal(used, strlen(golden));
	assert_string_equal(buf, golden);
	/* It passes the checker as a generated file: system, 2 CPUs, 2 bridges, 5 devices. */
	struct nccl_xml x;
	if (nccl_topo_check(buf, used, true, &x, msg, sizeof msg) != LLMP_OK)
		fail_msg("%s", msg);
	assert_int_equal(x.n, 10);
	assert_string_equal(x.nodes[3].name, "pci");
	assert_string_equal(nccl_xml_attr(&x, 3, "busid"), "0000:18:00.0");
	assert_int_equal(x.nodes[3].parent, 2);
	assert_string_equal(nccl_xml_attr(&x, 2, "busid"), "0000:15:01.0");
	assert_int_equal(x.nodes[2].parent, 1);
	assert_string_equal(nccl_xml_attr(&x, 1, "numaid"), "0");
	nccl_xml_free(&x);
	/* Too small a buffer: an error, nothing half-written. */
	assert_int_equal(nccl_topo_write(&ty, "32.0 GT/s PCIe", 16, buf, 100, &used, msg, sizeof msg),
			 LLMP_ERR_ARG);
	assert_int_equal(used, 0);
	/* A bridge two devices put under different NUMA nodes. */
	gpus[1].pci = pci("0000:1c:00.0", 1, "0000:15:01.0", "0000:16:02.0");
	assert_int_equal(nccl_topo_write(&ty, "32.0 GT/s PCIe", 16, buf, sizeof buf, &used, msg, sizeof msg),
			 LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "0000:15:01.0"));
}

static void refused(const char *text, bool generated, const char *want)
{
	struct nccl_xml x;
	char msg[256] = "";
	llmp_status st = nccl_topo_check(text, strlen(text), generated, &x, msg, sizeof msg);
	if (st == LLMP_OK)
		fail_msg("accepted: %s", text);
	if (!strstr(msg, want))
		fail_msg("'%s' does not say '%s'", msg, want);
}

static void accepted(const char *text, bool generated, unsigned nodes)
{
	struct nccl_xml x;
	char msg[256] = "";
	if (nccl_topo_check(text, strlen(text), generated, &x, msg, sizeof msg) != LLMP_OK)
		fail_msg("%s: %s", text, msg);
	assert_int_equal(x.n, nodes);
	nccl_xml_free(&x);
}

static void test_grammar(void **state)
{
	(void)state;
	accepted("<!-- made by hand -->\n<system version=\"1\">\n  <cpu numaid=\"-1\"/>\n</system>\n", true,
		 2);
	accepted("<system  version=\"1\">\n<cpu numaid=\"0\"  affinity=\"ff\"/>\n</system>", true, 2);
	refused("<?xml version=\"1.0\"?>\n<system version=\"1\">\n</system>\n", true,
		"line 1: an XML declaration");
	refused("<system version=\"1\">\n\t<cpu numaid=\"0\"/>\n</system>\n", true, "line 2: a tab");
	refused("<system version=\"1\">\n  <cpu numaid=\"0\"\n    affinity=\"ff\"/>\n</system>\n", true,
		"line 2: a tag continued on the next line");
	refused("<system version=\"2\">\n</system>\n", true, "version=\"1\"");
	refused("<topology version=\"1\">\n</topology>\n", true, "the root is not <system>");
	refused("<system version=\"1\">\n  <cpu numaid=\"0\">\n</system>\n", true, "closes nothing open");
	refused("<system version=\"1\">\n  <cpu numaid=\"0\">\n", true, "ends with this element open: cpu");
	refused("<system version=\"1\">\n</system>\n<system version=\"1\"/>\n", true, "after the closing");
	refused("<system version=\"1\">\n  <cpu numaid=\"0\" gdr=\"1\"/>\n</system>\n", true,
		"NCCL must detect itself: gdr");
	accepted(
		"<system version=\"1\">\n  <cpu numaid=\"0\">\n  <pci busid=\"0000:01:00.0\">\n    <gpu dev=\"0\" "
		"sm=\"90\" rank=\"0\" gdr=\"1\"/>\n  </pci>\n  </cpu>\n</system>\n",
		false, 4);
	refused("<system version=\"1\">\n  <cpu numaid=\"0\">\n  <pci busid=\"0000:01:00.0\">\n    <gpu rank=\"0\"/>\n"
		"  </pci>\n  </cpu>\n</system>\n",
		true, "line 4: an attribute NCCL must detect itself: rank");
	/* 17 attributes. */
	char text[70000];
	int k = snprintf(text, sizeof text, "<system version=\"1\"");
	for (int i = 0; i < 16; i++)
		k += snprintf(text + k, sizeof text - (size_t)k, " a%d=\"x\"", i);
	snprintf(text + k, sizeof text - (size_t)k, "/>\n");
	refused(text, true, "more than NCCL's 16 attributes");
	/* A 256-character value; 255 pass. */
	char value[257];
	memset(value, 'v', 256);
	value[256] = '\0';
	snprintf(text, sizeof text, "<system version=\"1\" name=\"%s\"/>\n", value);
	refused(text, true, "longer than 255 characters");
	value[255] = '\0';
	snprintf(text, sizeof text, "<system version=\"1\" name=\"%s\"/>\n", value);
	accepted(text, true, 1);
	/* 129 children of one CPU; 128 pass (130 nodes with system and cpu). */
	k = snprintf(text, sizeof text, "<system version=\"1\">\n<cpu numaid=\"0\">\n");
	for (int i = 0; i < 128; i++)
		k += snprintf(text + k, sizeof text - (size_t)k, "<pci busid=\"0000:%02x:00.0\"/>\n", i);
	snprintf(text + k, sizeof text - (size_t)k, "</cpu>\n</system>\n");
	accepted(text, true, 130);
	snprintf(text + k, sizeof text - (size_t)k, "<pci busid=\"0000:ff:00.0\"/>\n</cpu>\n</system>\n");
	refused(text, true, "more than NCCL's 128 children under <cpu");
	/* 256 nodes pass: system, 2 CPUs, 127 + 126 devices; one more is refused. */
	k = snprintf(text, sizeof text, "<system version=\"1\">\n");
	for (int c = 0; c < 2; c++) {
		k += snprintf(text + k, sizeof text - (size_t)k, "<cpu numaid=\"%d\">\n", c);
		for (int i = 0; i < 127 - c; i++)
			k += snprintf(text + k, sizeof text - (size_t)k, "<pci busid=\"%04x:%02x:00.0\"/>\n",
				      c, i);
		k += snprintf(text + k, sizeof text - (size_t)k, "</cpu>\n");
	}
	snprintf(text + k, sizeof text - (size_t)k, "</system>\n");
	accepted(text, true, 256);
	k -= (int)strlen("</cpu>\n");
	snprintf(text + k, sizeof text - (size_t)k, "<pci busid=\"0001:ff:00.0\"/>\n</cpu>\n</system>\n");
	refused(text, true, "more than NCCL's 256 nodes");
	refused("", true, "no <system>");
	refused("system", true, "expected '<'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_golden),
		cmocka_unit_test(test_grammar),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

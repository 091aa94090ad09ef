/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_topo.c - the pieces of the topology reader (topology/): the strict
 * JSON reader and its line numbers, Slurm host lists, and the PCIe
 * distance classes, and NCCL's path types (NVIDIA/nccl src/graph/xml.cc:
 * NCCL keeps every second bridge counted from the device up, and keys CPUs
 * by NUMA node). Expected values are written out by hand here.
 * tests/topo.bats tests the whole files and discovery.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/hostlist.h"
#include "common/json_read.h"
#include "topology/pci_path.h"
#include "topology/topo.h"

static void parse_ok(const char *text, struct json_value *v)
{
	char msg[256] = "";
	llmp_status st = json_parse(text, strlen(text), v, msg, sizeof msg);
	if (st != LLMP_OK)
		fail_msg("'%s': %s", text, msg);
}

static void parse_bad(const char *text, const char *want)
{
	char msg[256] = "";
	struct json_value v;
	assert_int_equal(json_parse(text, strlen(text), &v, msg, sizeof msg), LLMP_ERR_ARG);
	if (!strstr(msg, want))
		fail_msg("'%s': got \"%s\", want \"%s\"", text, msg, want);
	assert_int_equal(v.kind, JSON_NULL);
	assert_null(v.members);
}

static void test_json_values(void **state)
{
	(void)state;
	struct json_value v;
	parse_ok("{\n \"a\": [1, -2.5e3, true, null],\n\n \"b\": \"x\\u00e9\\ud83d\\ude00\\n\"\n}", &v);
	assert_int_equal(v.kind, JSON_OBJECT);
	assert_int_equal(v.n, 2);
	const struct json_value *a = json_get(&v, "a"), *b = json_get(&v, "b");
	assert_non_null(a);
	assert_int_equal(a->line, 2);
	assert_int_equal(a->n, 4);
	assert_true(a->items[0].integer);
	assert_int_equal(a->items[0].int64, 1);
	assert_false(a->items[1].integer);
	assert_true(a->items[1].number == -2500.0);
	assert_true(a->items[2].kind == JSON_BOOL && a->items[2].boolean);
	assert_int_equal(a->items[3].kind, JSON_NULL);
	assert_int_equal(b->line, 4);
	/* é is c3 a9, U+1F600 is f0 9f 98 80. */
	assert_string_equal(b->string, "x\xc3\xa9\xf0\x9f\x98\x80\n");
	assert_null(json_get(&v, "c"));
	json_free(&v);
	parse_ok("9223372036854775807", &v);
	assert_true(v.integer);
	assert_int_equal(v.int64, INT64_MAX);
	json_free(&v);
	parse_ok("9223372036854775808", &v);
	assert_false(v.integer); /* past int64: a number, not an integer */
	json_free(&v);
}

static void test_json_errors(void **state)
{
	(void)state;
	parse_bad("{\"a\": 1,\n}", "line 2: expected a string, found '}'");
	parse_bad("[1, 2", "line 1: expected ',' or ']' in an array, found the end of the file");
	parse_bad("{\"a\": 1, \"a\": 2}", "key \"a\" given twice");
	parse_bad("\"abc", "a string is not closed");
	parse_bad("\"a\\qb\"", "unknown escape \\q");
	parse_bad("\"\\ud800x\"", "a high surrogate without its low one");
	parse_bad("\"\\u0000\"", "a NUL in a string");
	parse_bad("\"a\tb\"", "a control character (0x09)");
	parse_bad("01", "text after the document");
	parse_bad("1.", "digits after its '.'");
	parse_bad("-", "a number needs digits");
	parse_bad("tru", "expected a value, found 't'");
	parse_bad("{} x", "text after the document: 'x'");
	parse_bad("", "expected a value, found the end of the file");
	parse_bad("\n\n[NaN]", "line 3: expected a value, found 'N'");
	char deep[80];
	memset(deep, '[', 40);
	memset(deep + 40, ']', 39);
	deep[79] = '\0';
	parse_bad(deep, "nested more than 32 deep");
	char msg[64];
	struct json_value v;
	assert_int_equal(json_parse("[1]\0", 4, &v, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "NUL byte"));
}

static void expand_is(const char *list, const char *want)
{
	char **names, msg[256], got[1024] = "";
	size_t n;
	llmp_status st = hostlist_expand(list, 1000, &names, &n, msg, sizeof msg);
	if (st != LLMP_OK)
		fail_msg("'%s': %s", list, msg);
	for (size_t i = 0; i < n; i++) {
		strcat(got, i ? " " : "");
		strcat(got, names[i]);
	}
	hostlist_free(names, n);
	assert_string_equal(got, want);
}

static void expand_bad(const char *list, size_t max, const char *want)
{
	char **names, msg[256];
	size_t n;
	assert_int_equal(hostlist_expand(list, max, &names, &n, msg, sizeof msg), LLMP_ERR_ARG);
	if (!strstr(msg, want))
		fail_msg("'%s': got \"%s\", want \"%s\"", list, msg, want);
	assert_null(names);
	assert_int_equal(n, 0);
}

static void test_hostlist(void **state)
{
	(void)state;
	expand_is("login1", "login1");
	expand_is("dgx[001-003,007],login1", "dgx001 dgx002 dgx003 dgx007 login1");
	expand_is("n[8-11]", "n8 n9 n10 n11");
	expand_is("n[08-11]", "n08 n09 n10 n11");
	expand_is("r[1-2]-gpu,x", "r1-gpu r2-gpu x");
	expand_is("leaf-dgx[0-1],leaf-nvl", "leaf-dgx0 leaf-dgx1 leaf-nvl");
	expand_bad("a,,b", 100, "an empty host name");
	expand_bad("a[3-1]", 100, "LOW <= HIGH");
	expand_bad("a[1-", 100, "opened and closed");
	expand_bad("a[1]b[2]", 100, "one [...] per host name");
	expand_bad("a[1,]", 100, "an empty range");
	expand_bad("d[]", 100, "an empty range"); /* the topology fuzzer found it accepted, as no host */
	expand_bad("a b", 100, "' ' in a host name");
	expand_bad("n[1-5]", 4, "more than 4 hosts");
}

/* names (space-separated) written as a host list must be want, and expand to names again. */
static void write_is(const char *names, const char *want)
{
	char copy[1024], *v[64], *save = NULL, *buf = NULL, **back, msg[256];
	size_t n = 0, len = 0, m;
	snprintf(copy, sizeof copy, "%s", names);
	for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
		v[n++] = w;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(hostlist_write(f, (const char *const *)v, n), 0);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(buf, want);
	if (n == 0) { /* no list at all, which hostlist_expand refuses */
		free(buf);
		return;
	}
	if (hostlist_expand(buf, 1000, &back, &m, msg, sizeof msg) != LLMP_OK)
		fail_msg("'%s': %s", buf, msg);
	assert_int_equal(m, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(back[i], v[i]);
	hostlist_free(back, m);
	free(buf);
}

static void test_hostlist_write(void **state)
{
	(void)state;
	write_is("", "");
	write_is("login1", "login1");
	write_is("n1 n2 n3 n5", "n[1-3,5]");
	write_is("dgx001 dgx002 dgx003 dgx007 login1", "dgx[001-003,007],login1");
	write_is("n8 n9 n10 n11", "n[8-11]");
	write_is("n098 n099 n100 n101", "n[098-101]");
	write_is("n08 n9", "n[08,9]");          /* 9 is not as wide as 08 */
	write_is("n0 n00 n000", "n[0,00,000]"); /* three names, none counting on */
	write_is("n3 n2 n1", "n[3,2,1]");       /* the order is kept */
	write_is("a b a1", "a,b,a1");
	write_is("r1-gpu r2-gpu", "r1-gpu,r2-gpu"); /* no number at the end */
	write_is("7 8 9", "[7-9]");
	write_is("n1 m1 n2", "n1,m1,n2");
	write_is("n999999998 n999999999 n1000000000", "n[999999998-999999999],n1000000000");
	write_is("x12345678901 x12345678902", "x12345678901,x12345678902"); /* more digits than a range */
}

static struct topo_pci pci(int numa, const char *a, const char *b)
{
	struct topo_pci p = { .numa = numa };
	if (a)
		strcpy(p.pcie[p.npcie++], a);
	if (b)
		strcpy(p.pcie[p.npcie++], b);
	return p;
}

static void test_distance(void **state)
{
	(void)state;
	struct topo_pci gpu = pci(0, "0000:15:01.0", "0000:16:00.0");
	struct topo_pci same_switch = pci(0, "0000:15:01.0", "0000:16:00.0");
	struct topo_pci other_port = pci(0, "0000:15:01.0", "0000:16:01.0");
	struct topo_pci other_root = pci(0, "0000:30:01.0", "0000:31:00.0");
	struct topo_pci other_numa = pci(1, "0000:90:01.0", "0000:91:00.0");
	struct topo_pci unknown = pci(-1, NULL, NULL);
	struct topo_pci deep = pci(0, "0000:15:01.0", "0000:16:00.0");
	strcpy(deep.pcie[deep.npcie++], "0000:17:02.0");
	assert_int_equal(topo_pci_distance(&gpu, &same_switch), TOPO_PIX);
	assert_int_equal(topo_pci_distance(&gpu, &deep), TOPO_PXB);
	assert_int_equal(topo_pci_distance(&gpu, &other_port), TOPO_PHB);
	assert_int_equal(topo_pci_distance(&gpu, &other_root), TOPO_NODE);
	assert_int_equal(topo_pci_distance(&gpu, &other_numa), TOPO_SYS);
	assert_int_equal(topo_pci_distance(&unknown, &unknown), TOPO_SYS);
	assert_string_equal(topo_distance_name(TOPO_PXB), "PXB");
	struct topo_port up = { .port = 1, .state = "ACTIVE", .link = "InfiniBand" };
	struct topo_port down = { .port = 1, .state = "DOWN", .link = "InfiniBand" };
	struct topo_port nolink = { .port = 1, .state = "ACTIVE" };
	assert_true(topo_port_usable(&up));
	assert_false(topo_port_usable(&down));
	assert_false(topo_port_usable(&nolink));
}

/* A sysfs chain, root port first, of up to six bridges; NULL ends it. */
static struct topo_pci chain(const char *bus, int numa, const char *const *bridges)
{
	struct topo_pci p = { .numa = numa };
	strcpy(p.bus, bus);
	for (; *bridges; bridges++)
		strcpy(p.pcie[p.npcie++], *bridges);
	return p;
}

static void test_nccl_path(void **state)
{
	(void)state;
	int common = 99;
	/* The fixtures' style: one shared chain [root port, switch] -> one node, PIX. */
	struct topo_pci fa = chain("0000:1b:00.0", 0,
				   (const char *[]){ "0000:15:01.0", "0000:16:00.0", NULL });
	struct topo_pci fb = chain("0000:18:00.0", 0,
				   (const char *[]){ "0000:15:01.0", "0000:16:00.0", NULL });
	assert_int_equal(topo_nccl_path(&fa, &fb, &common), TOPO_PATH_PIX);
	assert_int_equal(common, 0);
	/* A real switch (nccl-tests#256): upstream 16:00.0, a downstream port per device. */
	struct topo_pci gpu = chain("0000:18:00.0", 0,
				    (const char *[]){ "0000:15:01.0", "0000:16:00.0", "0000:17:00.0", NULL });
	struct topo_pci nic = chain("0000:19:00.0", 0,
				    (const char *[]){ "0000:15:01.0", "0000:16:00.0", "0000:17:01.0", NULL });
	assert_int_equal(topo_nccl_path(&gpu, &nic, &common), TOPO_PATH_PIX);
	assert_int_equal(topo_pci_distance(&gpu, &nic), TOPO_PXB); /* nvidia-smi's reading differs */
	unsigned up[TOPO_PCIE_MAX];
	assert_int_equal(topo_nccl_parents(&gpu, up), 1);
	assert_string_equal(gpu.pcie[up[0]], "0000:16:00.0");
	/* Two switch levels: the GPU under a leaf under the top switch, the NIC right under the top. */
	struct topo_pci deep = chain("0000:05:00.0", 0,
				     (const char *[]){ "0000:00:01.0", "0000:01:00.0", "0000:02:00.0",
						       "0000:03:00.0", "0000:04:00.0", NULL });
	struct topo_pci top = chain("0000:06:00.0", 0,
				    (const char *[]){ "0000:00:01.0", "0000:01:00.0", "0000:02:01.0", NULL });
	assert_int_equal(topo_nccl_parents(&deep, up), 2);
	assert_string_equal(deep.pcie[up[0]], "0000:03:00.0");
	assert_string_equal(deep.pcie[up[1]], "0000:01:00.0");
	assert_int_equal(topo_nccl_path(&deep, &top, &common), TOPO_PATH_PXB);
	assert_int_equal(common, 0);
	/* Under the same leaf: PIX, and the leaf is one node below the top. */
	struct topo_pci leaf = chain("0000:07:00.0", 0,
				     (const char *[]){ "0000:00:01.0", "0000:01:00.0", "0000:02:00.0",
						       "0000:03:00.0", "0000:04:01.0", NULL });
	assert_int_equal(topo_nccl_path(&deep, &leaf, &common), TOPO_PATH_PIX);
	assert_int_equal(common, 1);
	/* Two root ports of one NUMA node: PHB (nvidia-smi: NODE). */
	struct topo_pci other_root = chain("0000:31:00.0", 0, (const char *[]){ "0000:30:01.0", NULL });
	assert_int_equal(topo_nccl_path(&gpu, &other_root, &common), TOPO_PATH_PHB);
	assert_int_equal(common, -1);
	assert_int_equal(topo_pci_distance(&gpu, &other_root), TOPO_NODE);
	/* A device right on a root port hangs on the CPU: two such, one NUMA node, PHB. */
	struct topo_pci rp2 = chain("0000:41:00.0", 0, (const char *[]){ "0000:40:01.0", NULL });
	assert_int_equal(topo_nccl_path(&other_root, &rp2, NULL), TOPO_PATH_PHB);
	/* NUMA unknown on both (a VM, flat): one CPU -1, PHB (nvidia-smi: SYS). */
	struct topo_pci vm1 = chain("0000:00:05.0", -1, (const char *[]){ NULL });
	struct topo_pci vm2 = chain("0000:00:0d.0", -1, (const char *[]){ NULL });
	assert_int_equal(topo_nccl_path(&vm1, &vm2, NULL), TOPO_PATH_PHB);
	assert_int_equal(topo_pci_distance(&vm1, &vm2), TOPO_SYS);
	/* Other NUMA node, or known against unknown: two CPUs, SYS. */
	struct topo_pci far = chain("0000:99:00.0", 1,
				    (const char *[]){ "0000:97:01.0", "0000:98:00.0", "0000:17:09.0", NULL });
	assert_int_equal(topo_nccl_path(&gpu, &far, NULL), TOPO_PATH_SYS);
	assert_int_equal(topo_nccl_path(&gpu, &vm1, NULL), TOPO_PATH_SYS);
	assert_int_equal(topo_nccl_path(&gpu, &gpu, NULL), TOPO_PATH_LOC);
	assert_string_equal(topo_path_name(TOPO_PATH_PXB), "PXB");
	assert_string_equal(topo_path_name(TOPO_PATH_PHB), "PHB");
	assert_string_equal(topo_path_name((enum topo_path)12), "?");
}

/* NCCL merges a Broadcom Gen4/Gen5 switch's sub-switches of the same ids into it; no one else's. */
static void test_bcm_flattening(void **state)
{
	(void)state;
	const char *a[] = { "0000:00:01.0", "0000:01:00.0", "0000:02:00.0",
			    "0000:03:00.0", "0000:04:00.0", NULL };
	const char *b[] = { "0000:00:01.0", "0000:01:00.0", "0000:02:01.0",
			    "0000:05:00.0", "0000:06:00.0", NULL };
	struct topo_pci gpu = chain("0000:07:00.0", 0, a), nic = chain("0000:08:00.0", 0, b);
	/* Without ids: two leaves under a top switch, PXB. */
	assert_int_equal(topo_nccl_path(&gpu, &nic, NULL), TOPO_PATH_PXB);
	/* PEX Gen4 in base mode: vendor 0x1000, device 0xc010, subsystem 0x1000:0xa0xx. */
	const uint64_t gen4 = 0x1000c0101000a064ull;
	gpu.pcie_id[1] = gpu.pcie_id[3] = gen4;
	nic.pcie_id[1] = nic.pcie_id[3] = gen4;
	unsigned up[TOPO_PCIE_MAX];
	assert_int_equal(topo_nccl_parents(&gpu, up), 1);
	assert_string_equal(gpu.pcie[up[0]], "0000:01:00.0");
	assert_int_equal(topo_nccl_path(&gpu, &nic, NULL), TOPO_PATH_PIX);
	/* Gen5: device 0xc030, subsystem 0x1000:0x0xxx. */
	const uint64_t gen5 = 0x1000c03010000100ull;
	gpu.pcie_id[1] = gpu.pcie_id[3] = nic.pcie_id[1] = nic.pcie_id[3] = gen5;
	assert_int_equal(topo_nccl_path(&gpu, &nic, NULL), TOPO_PATH_PIX);
	/* A Gen5 switch of an OEM's subsystem vendor (Supermicro 0x15d9) is not merged. */
	const uint64_t oem = 0x1000c03015d91d2aull;
	gpu.pcie_id[1] = gpu.pcie_id[3] = nic.pcie_id[1] = nic.pcie_id[3] = oem;
	assert_int_equal(topo_nccl_path(&gpu, &nic, NULL), TOPO_PATH_PXB);
	/* Nor a leaf of other ids under a Broadcom top, nor a PLX cascade. */
	gpu.pcie_id[1] = nic.pcie_id[1] = gen4;
	gpu.pcie_id[3] = nic.pcie_id[3] = 0x10b587471234abcdull;
	assert_int_equal(topo_nccl_path(&gpu, &nic, NULL), TOPO_PATH_PXB);
	gpu.pcie_id[1] = gpu.pcie_id[3] = nic.pcie_id[1] = nic.pcie_id[3] = 0x10b587471234abcdull;
	assert_int_equal(topo_nccl_path(&gpu, &nic, NULL), TOPO_PATH_PXB);
}

static void test_gdr_level(void **state)
{
	(void)state;
	enum topo_path l = TOPO_PATH_DIS;
	/* Names LOC..SYS as NCCL prints them; values 4, 5, 8, 9 in NCCL's enum. */
	assert_true(topo_path_parse_level("PIX", &l));
	assert_int_equal(l, 4);
	assert_true(topo_path_parse_level("PXB", &l));
	assert_int_equal(l, 5);
	assert_true(topo_path_parse_level("PHB", &l));
	assert_int_equal(l, 8);
	assert_true(topo_path_parse_level("SYS", &l));
	assert_int_equal(l, 9);
	/* Legacy numbers: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and 5 SYS, larger clamps to 5. */
	const int legacy[][2] = { { 0, 0 }, { 1, 4 }, { 2, 5 }, { 3, 8 }, { 4, 9 }, { 5, 9 }, { 17, 9 } };
	for (unsigned i = 0; i < sizeof legacy / sizeof legacy[0]; i++) {
		char text[8];
		snprintf(text, sizeof text, "%d", legacy[i][0]);
		assert_true(topo_path_parse_level(text, &l));
		assert_int_equal(l, legacy[i][1]);
	}
	assert_false(topo_path_parse_level("pxb", &l));
	assert_false(topo_path_parse_level("NET", &l));
	assert_false(topo_path_parse_level("", &l));
	assert_int_equal(TOPO_GDR_LEVEL_DEFAULT, 5);
	/* The level NCCL then uses: unset or a value it ignores keep its default PXB (5). */
	assert_int_equal(topo_gdr_level_of(NULL), 5);
	assert_int_equal(topo_gdr_level_of(""), 5);
	assert_int_equal(topo_gdr_level_of("pxb"), 5);
	assert_int_equal(topo_gdr_level_of("SYS"), 9);
	assert_int_equal(topo_gdr_level_of("1"), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_values), cmocka_unit_test(test_json_errors),
		cmocka_unit_test(test_hostlist),    cmocka_unit_test(test_hostlist_write),
		cmocka_unit_test(test_distance),    cmocka_unit_test(test_nccl_path),
		cmocka_unit_test(test_gdr_level),   cmocka_unit_test(test_bcm_flattening),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

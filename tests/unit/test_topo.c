/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_topo.c - the pieces of the topology reader (topology/): the strict
 * JSON reader and its line numbers, Slurm host lists, and the PCIe
 * distance classes. Expected values are written out by hand here.
 * tests/topo.bats tests the whole files and discovery.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "topology/hostlist.h"
#include "topology/json_read.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_values),
		cmocka_unit_test(test_json_errors),
		cmocka_unit_test(test_hostlist),
		cmocka_unit_test(test_distance),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_topo.c - libFuzzer target for what reads a user's topology file:
 * the JSON reader, the topology checker on top of it, and host lists.
 *
 * For any bytes: no crash, leak or undefined behaviour; a topology that is
 * accepted writes out as JSON that reads back and writes out the same
 * (doc/topology-json.md); a host list that expands names no more hosts
 * than it was allowed, and its names written as a list expand to the same.
 * The plugin reads these files for a user's job, so a bug here is a bug a
 * user can aim at (plugin/README.md: slurmstepd keeps a saved uid of 0).
 * Built with clang -fsanitize=fuzzer by `make fuzz`; its corpus
 * (tests/fuzz/corpus-topo, quadratic cases of the old reader among them)
 * is replayed by tests/fuzz/fuzz_replay_topo in `make check`.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"
#include "common/json_read.h"
#include "topology/topo.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* names written as one host list expand to the same names, in order. */
static void check_written_list(char **names, size_t count)
{
	char *buf = NULL, **back, msg[LLMP_MSG_MAX];
	size_t n, got;
	FILE *f = open_memstream(&buf, &n);
	CHECK(f != NULL);
	CHECK(hostlist_write(f, (const char *const *)names, count) == 0);
	CHECK(fclose(f) == 0);
	CHECK(hostlist_expand(buf, count, &back, &got, msg, sizeof msg) == LLMP_OK);
	CHECK(got == count);
	for (size_t i = 0; i < count; i++)
		CHECK(strcmp(back[i], names[i]) == 0);
	hostlist_free(back, got);
	free(buf);
}

/* t written as JSON into a fresh buffer (the caller frees it). */
static char *written(const struct topo *t, size_t *n)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, n);
	CHECK(f != NULL);
	CHECK(topo_write_json(t, f) == 0);
	CHECK(fclose(f) == 0);
	return buf;
}

static void check_topology(const char *text, size_t size)
{
	char msg[LLMP_MSG_MAX];
	struct topo t, again;
	if (topo_read_text(text, size, "fuzz", &t, msg, sizeof msg) != LLMP_OK)
		return;
	size_t n1, n2;
	char *first = written(&t, &n1);
	CHECK(topo_read_text(first, n1, "again", &again, msg, sizeof msg) == LLMP_OK);
	char *second = written(&again, &n2);
	CHECK(n1 == n2 && memcmp(first, second, n1) == 0);
	free(first);
	free(second);
	topo_free(&again);
	topo_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[LLMP_MSG_MAX];
	struct json_value root;
	if (json_parse((const char *)data, size, &root, msg, sizeof msg) == LLMP_OK)
		json_free(&root);
	check_topology((const char *)data, size);

	/* The same bytes as a host list, up to the first NUL, of at most 4096 hosts. */
	char *list = strndup((const char *)data, size);
	CHECK(list != NULL);
	char **names;
	size_t count;
	if (hostlist_expand(list, 4096, &names, &count, msg, sizeof msg) == LLMP_OK) {
		CHECK(count >= 1 && count <= 4096);
		for (size_t i = 0; i < count; i++)
			CHECK(names[i] && names[i][0]);
		check_written_list(names, count);
		hostlist_free(names, count);
	}
	free(list);
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_list.c - `llmp ckpt list DIR`: every checkpoint directory under a
 * root, with its state, size and contents.
 *
 * States: complete (step-N whose MANIFEST reads; "latest" in the text when
 * `latest` names it), temporary (step-N.tmp), deleting (step-N.deleting),
 * damaged (step-N.damaged: a load passed it over, its step was saved again),
 * corrupt-manifest (a step-N whose MANIFEST is missing, unreadable, fails
 * its checksum, or names another step), unsupported-format (a MANIFEST of
 * another format version). Only the MANIFEST is read: `llmp ckpt verify`
 * checks the data. JSON: doc/ckpt-json.md.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_cli.h"
#include "common/json_writer.h"

#define PROG "llmp ckpt list"

static void help(void)
{
	printf("usage: llmp ckpt list DIR [--json]\n\n"
	       "List the checkpoints under the checkpoint root DIR, newest first: each step\n"
	       "directory's state (complete, latest, temporary, deleting, damaged,\n"
	       "corrupt-manifest, unsupported-format), size, tensors, shards and saving world size. Reads only\n"
	       "the MANIFESTs (each checked against its own CRC-32C); use 'llmp ckpt verify'\n"
	       "to check the data.\n  --json, --format json   one JSON document (doc/ckpt-json.md)\n"
	       "Exit status: 0 listed, 1 DIR could not be read, 2 bad input.\n");
}

/* What one entry of the root is. */
struct listed {
	const struct ck_entry *entry;
	char name[64];
	const char *state;
	bool latest;
	uint64_t bytes;
	bool has_manifest;
	struct ck_manifest m;
	char problem[LLMP_MSG_MAX]; /* corrupt-manifest: why */
};

/* Bytes of the regular files under path, at any depth (symbolic links not followed). */
static uint64_t tree_bytes(const char *path)
{
	DIR *dir = opendir(path);
	uint64_t total = 0;
	struct dirent *e;
	if (!dir)
		return 0;
	while ((e = readdir(dir))) {
		char child[4200];
		struct stat sb;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(child, sizeof child, "%s/%s", path, e->d_name);
		if (lstat(child, &sb) != 0)
			continue;
		if (S_ISDIR(sb.st_mode))
			total += tree_bytes(child);
		else if (S_ISREG(sb.st_mode))
			total += (uint64_t)sb.st_size;
	}
	closedir(dir);
	return total;
}

static void describe(const struct ckpt_root *root, const struct ck_entry *e, struct listed *l)
{
	static const char *const suffix[] = {
		[CK_ENTRY_COMPLETE] = "",
		[CK_ENTRY_TMP] = CK_SUFFIX_TMP,
		[CK_ENTRY_DELETING] = CK_SUFFIX_DELETING,
		[CK_ENTRY_DAMAGED] = CK_SUFFIX_DAMAGED,
	};
	char dir[4200], path[4300];
	memset(l, 0, sizeof *l);
	l->entry = e;
	snprintf(l->name, sizeof l->name, "step-%" PRIu64 "%s", e->step, suffix[e->kind]);
	ck_step_path(root->path, e->step, suffix[e->kind], dir, sizeof dir);
	l->bytes = tree_bytes(dir);
	if (e->kind == CK_ENTRY_TMP) {
		l->state = "temporary";
		return;
	}
	if (e->kind == CK_ENTRY_DELETING) {
		l->state = "deleting";
		return;
	}
	if (e->kind == CK_ENTRY_DAMAGED) {
		l->state = "damaged";
		return;
	}
	snprintf(path, sizeof path, "%s/" CK_MANIFEST, dir);
	l->state = "corrupt-manifest";
	llmp_status st = ck_manifest_read(path, &l->m, l->problem, sizeof l->problem);
	if (st == LLMP_ERR_UNSUPPORTED)
		l->state = "unsupported-format";
	if (st != LLMP_OK)
		return;
	l->has_manifest = true;
	if (l->m.step != e->step) {
		llmp_fail(LLMP_ERR_IO, l->problem, sizeof l->problem, "%s says step %" PRIu64, path,
			  l->m.step);
		return;
	}
	l->state = "complete";
	l->latest = root->has_latest && root->latest == e->step;
}

static void write_json(const struct ckpt_root *root, const struct listed *l, size_t n, FILE *out)
{
	struct json_writer w;
	char latest[64];
	json_begin(&w, out);
	json_object(&w, NULL);
	json_string(&w, "root", root->path);
	snprintf(latest, sizeof latest, "step-%" PRIu64, root->latest);
	json_string(&w, "latest", root->has_latest ? latest : NULL);
	if (root->latest_problem[0])
		json_string(&w, "latest_problem", root->latest_problem);
	json_array(&w, "checkpoints");
	for (size_t i = 0; i < n; i++) {
		bool ok = strcmp(l[i].state, "complete") == 0;
		json_object(&w, NULL);
		json_string(&w, "name", l[i].name);
		json_uint(&w, "step", l[i].entry->step);
		json_string(&w, "state", l[i].state);
		json_bool(&w, "latest", l[i].latest);
		json_uint(&w, "bytes", l[i].bytes);
		if (ok) {
			json_uint(&w, "tensors", ck_manifest_tensors(&l[i].m));
			json_uint(&w, "slices", l[i].m.nslices);
			json_uint(&w, "shards", l[i].m.nshards);
			json_uint(&w, "world", l[i].m.world);
			json_string(&w, "layout", l[i].m.layout);
		} else {
			json_null(&w, "tensors");
			json_null(&w, "slices");
			json_null(&w, "shards");
			json_null(&w, "world");
			json_null(&w, "layout");
		}
		json_string(&w, "problem", l[i].problem[0] ? l[i].problem : NULL);
		json_object_end(&w);
	}
	json_array_end(&w);
	json_object_end(&w);
	json_end(&w);
}

static void write_text(const struct ckpt_root *root, const struct listed *l, size_t n, FILE *out)
{
	char size[32];
	fprintf(out, "checkpoints in %s", root->path);
	if (root->has_latest)
		fprintf(out, " (latest: step-%" PRIu64 "%s)", root->latest,
			ckpt_root_has(root, root->latest) ? "" : ", not a complete checkpoint");
	else if (root->latest_problem[0])
		fprintf(out, " (%s)", root->latest_problem);
	fprintf(out, "\n%12s  %-16s %10s %8s %7s %6s  %s\n", "step", "state", "size", "tensors", "shards",
		"world", "note");
	for (size_t i = 0; i < n; i++) {
		const struct listed *e = &l[i];
		bool ok = strcmp(e->state, "complete") == 0;
		fprintf(out, "%12" PRIu64 "  %-16s %10s", e->entry->step, e->latest ? "latest" : e->state,
			cli_human_bytes(e->bytes, size, sizeof size));
		if (ok)
			fprintf(out, " %8zu %7zu %6u  %s\n", ck_manifest_tensors(&e->m), e->m.nshards,
				e->m.world, e->m.layout);
		else
			fprintf(out, " %8s %7s %6s  %s\n", "-", "-", "-",
				e->problem[0] ? e->problem : e->name);
	}
	if (n == 0)
		fprintf(out, "(no checkpoint directories)\n");
}

int cli_ckpt_list(int argc, char **argv)
{
	struct ckpt_args a;
	struct ckpt_root root;
	int rc = ckpt_parse_args(PROG, argc, argv, 0, help, &a);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if ((rc = ckpt_root_open(PROG, a.dir, &root)) != CLI_EXIT_OK)
		return rc;
	struct listed *l = calloc(root.n ? root.n : 1, sizeof *l);
	if (!l) {
		fprintf(stderr, PROG ": out of memory for %zu entries\n", root.n);
		ckpt_root_close(&root);
		return CLI_EXIT_FAILURE;
	}
	for (size_t i = 0; i < root.n; i++)
		describe(&root, &root.entries[i], &l[i]);
	if (a.json)
		write_json(&root, l, root.n, stdout);
	else
		write_text(&root, l, root.n, stdout);
	for (size_t i = 0; i < root.n; i++)
		ck_manifest_free(&l[i].m);
	free(l);
	ckpt_root_close(&root);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PROG ": writing the output failed: %s\n", strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

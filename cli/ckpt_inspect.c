/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_inspect.c - `llmp ckpt inspect DIR [--step N]`: what a checkpoint
 * holds, from its MANIFEST: step, saving world and layout, user metadata,
 * index, shards, and every tensor with its dtype, global shape and slices
 * (region, owner, shard, place in it, CRC-32C). Only the MANIFEST is read,
 * and checked against its own CRC-32C; the files it describes are not
 * (`llmp ckpt verify`).
 * JSON: doc/ckpt-json.md.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_cli.h"
#include "common/json_writer.h"

#define PROG "llmp ckpt inspect"

static void help(void)
{
	printf("usage: llmp ckpt inspect DIR [--step N] [--json]\n\n"
	       "Show what a checkpoint under the checkpoint root DIR holds (the newest complete\n"
	       "one, as llmp_ckpt_load picks it, or step N), from its MANIFEST: step, the saving\n"
	       "job's world and layout, the user metadata, the shards, and every tensor with its\n"
	       "dtype, global shape and slices (region, owner rank, shard file, CRC-32C).\n"
	       "  -s, --step N            checkpoint step-N\n"
	       "  --json, --format json   one JSON document (doc/ckpt-json.md)\n"
	       "Exit status: 0 shown, 1 its MANIFEST is unreadable (or no complete checkpoint),\n"
	       "2 bad input.\n");
}

/* The slices of one tensor: m->slices[first, end). */
struct tensor {
	size_t first, end;
	uint64_t bytes;
};

static void next_tensor(const struct ck_manifest *m, size_t first, struct tensor *t)
{
	t->first = first;
	t->bytes = 0;
	for (t->end = first;
	     t->end < m->nslices && strcmp(m->slices[t->end].name, m->slices[first].name) == 0; t->end++)
		t->bytes += ck_bytes(&m->slices[t->end]);
}

static uint64_t total_shard_bytes(const struct ck_manifest *m)
{
	uint64_t total = 0;
	for (size_t i = 0; i < m->nshards; i++)
		total += m->shard_bytes[i];
	return total;
}

/* ------------------------------------------------------------------ JSON */

static void json_dims(struct json_writer *w, const char *key, const uint64_t *dims, unsigned n)
{
	json_array(w, key);
	for (unsigned d = 0; d < n; d++)
		json_uint(w, NULL, dims[d]);
	json_array_end(w);
}

static void json_crc(struct json_writer *w, const char *key, uint32_t crc)
{
	char hex[16];
	snprintf(hex, sizeof hex, "0x%08x", crc);
	json_string(w, key, hex);
}

/* "tp=2,cp=1,...,order=tp-cp-ep-dp-pp,world=4" as an object: numbers as numbers. */
static void json_layout(struct json_writer *w, const char *layout)
{
	char copy[sizeof((struct ck_manifest *)0)->layout], *save = NULL;
	snprintf(copy, sizeof copy, "%s", layout);
	json_object(w, "layout");
	json_string(w, "spec", layout);
	for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq || eq == kv || strcmp(kv, "spec") == 0)
			continue;
		*eq++ = '\0';
		uint64_t v;
		bool number = *eq && strspn(eq, "0123456789") == strlen(eq) && strlen(eq) < 19;
		if (number && sscanf(eq, "%" SCNu64, &v) == 1)
			json_uint(w, kv, v);
		else
			json_string(w, kv, eq);
	}
	json_object_end(w);
}

static void json_tensor(struct json_writer *w, const struct ck_manifest *m, const struct tensor *t)
{
	const struct ck_slice *s0 = &m->slices[t->first];
	json_object(w, NULL);
	json_string(w, "name", s0->name);
	json_string(w, "dtype", llmp_dtype_name((llmp_dtype)s0->dtype));
	json_dims(w, "shape", s0->global, s0->ndim);
	json_uint(w, "bytes", t->bytes);
	json_array(w, "slices");
	for (size_t i = t->first; i < t->end; i++) {
		const struct ck_slice *s = &m->slices[i];
		char file[32], dataset[CK_DATASET_MAX];
		ck_shard_path(NULL, s->file, file, sizeof file);
		ck_dataset_name(s, dataset, sizeof dataset);
		json_object(w, NULL);
		json_dims(w, "offset", s->offset, s->ndim);
		json_dims(w, "shape", s->shape, s->ndim);
		json_uint(w, "owner", s->owner);
		json_string(w, "file", file);
		json_string(w, "dataset", dataset);
		json_uint(w, "at", s->at);
		json_uint(w, "bytes", ck_bytes(s));
		json_crc(w, "crc32c", s->crc);
		json_object_end(w);
	}
	json_array_end(w);
	json_object_end(w);
}

static void write_json(const char *dir, const struct ck_manifest *m, FILE *out)
{
	struct json_writer w;
	struct tensor t;
	json_begin(&w, out);
	json_object(&w, NULL);
	json_string(&w, "path", dir);
	json_uint(&w, "format", (uint64_t)m->version);
	json_uint(&w, "step", m->step);
	json_uint(&w, "world", m->world);
	json_layout(&w, m->layout);
	json_object(&w, "meta");
	json_string(&w, "file", CK_META);
	json_uint(&w, "bytes", m->meta_bytes);
	json_crc(&w, "crc32c", m->meta_crc);
	json_object_end(&w);
	json_object(&w, "index");
	json_string(&w, "file", CK_INDEX);
	json_uint(&w, "bytes", m->index_bytes);
	json_crc(&w, "crc32c", m->index_crc);
	json_object_end(&w);
	json_array(&w, "shards");
	for (size_t i = 0; i < m->nshards; i++) {
		char file[32];
		ck_shard_path(NULL, m->shard_ranks[i], file, sizeof file);
		json_object(&w, NULL);
		json_uint(&w, "rank", m->shard_ranks[i]);
		json_string(&w, "file", file);
		json_uint(&w, "bytes", m->shard_bytes[i]);
		json_crc(&w, "crc32c", m->shard_crcs[i]);
		json_object_end(&w);
	}
	json_array_end(&w);
	json_array(&w, "tensors");
	for (size_t first = 0; first < m->nslices; first = t.end) {
		next_tensor(m, first, &t);
		json_tensor(&w, m, &t);
	}
	json_array_end(&w);
	json_object_end(&w);
	json_end(&w);
}

/* ------------------------------------------------------------------ text */

/* "13x10" */
static const char *dims_text(const uint64_t *dims, unsigned n, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (unsigned d = 0; d < n && used < len; d++)
		used += (size_t)snprintf(buf + used, len - used, "%s%" PRIu64, d ? "x" : "", dims[d]);
	return buf;
}

/* "[0:7, 0:10]": the region, as Python slices. */
static const char *region_text(const struct ck_slice *s, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, "[");
	for (unsigned d = 0; d < s->ndim && used < len; d++)
		used += (size_t)snprintf(buf + used, len - used, "%s%" PRIu64 ":%" PRIu64, d ? ", " : "",
					 s->offset[d], s->offset[d] + s->shape[d]);
	if (used < len)
		snprintf(buf + used, len - used, "]");
	return buf;
}

static void write_text(const char *dir, const struct ck_manifest *m, FILE *out)
{
	char a[32], b[32], region[256];
	struct tensor t;
	uint64_t tensor_bytes = 0;
	for (size_t i = 0; i < m->nslices; i++)
		tensor_bytes += ck_bytes(&m->slices[i]);
	fprintf(out, "checkpoint  %s\n", dir);
	fprintf(out, "format      llmp-checkpoint %d\n", m->version);
	fprintf(out, "step        %" PRIu64 "\n", m->step);
	fprintf(out, "world       %u rank%s\n", m->world, m->world == 1 ? "" : "s");
	fprintf(out, "layout      %s\n", m->layout);
	fprintf(out, "meta        " CK_META ", %" PRIu64 " bytes, CRC-32C 0x%08x\n", m->meta_bytes,
		m->meta_crc);
	fprintf(out, "index       " CK_INDEX ", %" PRIu64 " bytes, CRC-32C 0x%08x\n", m->index_bytes,
		m->index_crc);
	fprintf(out, "shards      %zu, %s:", m->nshards, cli_human_bytes(total_shard_bytes(m), a, sizeof a));
	for (size_t i = 0; i < m->nshards; i++)
		fprintf(out, " shard-%u.h5 (%s)", m->shard_ranks[i],
			cli_human_bytes(m->shard_bytes[i], b, sizeof b));
	fprintf(out, "\ntensors     %zu, %s in %zu slices\n\n", ck_manifest_tensors(m),
		cli_human_bytes(tensor_bytes, a, sizeof a), m->nslices);
	fprintf(out, "%-32s %-9s %-16s %12s %6s\n", "tensor", "dtype", "shape", "bytes", "slices");
	for (size_t first = 0; first < m->nslices; first = t.end) {
		next_tensor(m, first, &t);
		const struct ck_slice *s0 = &m->slices[first];
		fprintf(out, "%-32s %-9s %-16s %12" PRIu64 " %6zu\n", s0->name,
			llmp_dtype_name((llmp_dtype)s0->dtype), dims_text(s0->global, s0->ndim, a, sizeof a),
			t.bytes, t.end - t.first);
		for (size_t i = t.first; i < t.end; i++) {
			const struct ck_slice *s = &m->slices[i];
			fprintf(out, "    %-28s owner %-5u shard-%u.h5  crc32c 0x%08x\n",
				region_text(s, region, sizeof region), s->owner, s->file, s->crc);
		}
	}
}

int cli_ckpt_inspect(int argc, char **argv)
{
	struct ckpt_args a;
	struct ckpt_root root;
	struct ck_manifest m;
	uint64_t step;
	char dir[4200], path[4300], msg[LLMP_MSG_MAX];
	int rc = ckpt_parse_args(PROG, argc, argv, CKPT_OPT_STEP, help, &a);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if ((rc = ckpt_root_open(PROG, a.dir, &root)) != CLI_EXIT_OK)
		return rc;
	rc = ckpt_root_pick(PROG, &root, &a, &step);
	if (rc == CLI_EXIT_OK) {
		ckpt_step_dir(&root, step, dir, sizeof dir);
		snprintf(path, sizeof path, "%s/" CK_MANIFEST, dir);
		if (ck_manifest_read(path, &m, msg, sizeof msg) != LLMP_OK) {
			fprintf(stderr, PROG ": step-%" PRIu64 ": %s\n", step, msg);
			rc = CLI_EXIT_FAILURE;
		}
	}
	if (rc == CLI_EXIT_OK) {
		if (a.json)
			write_json(dir, &m, stdout);
		else
			write_text(dir, &m, stdout);
		ck_manifest_free(&m);
		if (fflush(stdout) != 0 || ferror(stdout)) {
			fprintf(stderr, PROG ": writing the output failed: %s\n", strerror(errno));
			rc = CLI_EXIT_FAILURE;
		}
	}
	ckpt_root_close(&root);
	return rc;
}

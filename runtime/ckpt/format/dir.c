/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dir.c - the names in a checkpoint root and a step directory, the listing
 * of a root, the `latest` pointer, and a small file replaced atomically.
 *
 * A checkpoint directory is step-N once complete and step-N.tmp before;
 * the rename is the commit. Only directories named step-<digits> count.
 * No context: `llmp ckpt` lists and reads roots with this code, and the
 * runtime writes `latest` and the run record with it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_format.h"

void ck_step_path(const char *root, uint64_t step, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/step-%llu%s", root, (unsigned long long)step, suffix);
}

void ck_shard_path(const char *dir, uint32_t rank, char *buf, size_t len)
{
	if (dir)
		snprintf(buf, len, "%s/shard-%u.h5", dir, rank);
	else
		snprintf(buf, len, "shard-%u.h5", rank);
}

/*
 * A node's file holds slices of several ranks, which may be slices of the
 * same tensor: each rank's datasets go under a group of its own, so no two
 * names meet whatever the tensors are called.
 */
void ck_dataset_name(const struct ck_slice *s, char *buf, size_t len)
{
	if (s->node_file)
		snprintf(buf, len, "rank-%u/%s", s->owner, s->name);
	else
		snprintf(buf, len, "%s", s->name);
}

llmp_status ck_fsync_msg(const char *path, char *msg, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(msg, len, "open %s for fsync: %s", path, strerror(errno));
		return LLMP_ERR_IO;
	}
	int rc = fsync(fd);
	int saved = errno;
	close(fd);
	/* Some filesystems cannot fsync a directory; the data files are what matter most. */
	if (rc != 0 && !(saved == EINVAL || saved == EBADF)) {
		snprintf(msg, len, "fsync %s: %s", path, strerror(saved));
		return LLMP_ERR_IO;
	}
	return LLMP_OK;
}

/*
 * N from the digits at name, up to end; false for none, junk, overflow or
 * a leading zero (step-007 is not the directory ck_step_path names for 7).
 */
static bool parse_digits(const char *name, const char *end, uint64_t *step)
{
	uint64_t v = 0;
	if (name == end || (name[0] == '0' && end - name > 1))
		return false;
	for (const char *p = name; p < end; p++) {
		uint64_t digit = (uint64_t)(*p - '0');
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - digit) / 10)
			return false;
		v = v * 10 + digit;
	}
	*step = v;
	return true;
}

enum ck_entry_kind ck_parse_entry_name(const char *name, uint64_t *step)
{
	static const struct {
		const char *suffix;
		enum ck_entry_kind kind;
	} kinds[] = { { "", CK_ENTRY_COMPLETE },
		      { CK_SUFFIX_TMP, CK_ENTRY_TMP },
		      { CK_SUFFIX_DELETING, CK_ENTRY_DELETING },
		      { CK_SUFFIX_DAMAGED, CK_ENTRY_DAMAGED } };
	if (strncmp(name, "step-", 5) != 0)
		return CK_ENTRY_OTHER;
	const char *digits = name + 5, *end = digits + strspn(digits, "0123456789");
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(end, kinds[i].suffix) == 0)
			return parse_digits(digits, end, step) ? kinds[i].kind : CK_ENTRY_OTHER;
	return CK_ENTRY_OTHER;
}

static int newest_first(const void *a, const void *b)
{
	const struct ck_entry *x = a, *y = b;
	if (x->step != y->step)
		return x->step > y->step ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

static bool is_directory(const char *root, const char *name)
{
	char path[4200];
	struct stat sb;
	snprintf(path, sizeof path, "%s/%s", root, name);
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

llmp_status ck_list_entries(const char *root, struct ck_entry **entries, size_t *n, char *msg, size_t len)
{
	*entries = NULL;
	*n = 0;
	DIR *dir = opendir(root);
	if (!dir) {
		if (errno == ENOENT)
			return LLMP_OK;
		snprintf(msg, len, "opendir %s: %s", root, strerror(errno));
		return LLMP_ERR_IO;
	}
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		struct ck_entry entry;
		entry.kind = ck_parse_entry_name(e->d_name, &entry.step);
		if (entry.kind == CK_ENTRY_OTHER || !is_directory(root, e->d_name))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			struct ck_entry *grown = realloc(*entries, cap * sizeof *grown);
			if (!grown) {
				closedir(dir);
				free(*entries);
				*entries = NULL;
				*n = 0;
				snprintf(msg, len, "listing %s: out of memory", root);
				return LLMP_ERR_NOMEM;
			}
			*entries = grown;
		}
		(*entries)[(*n)++] = entry;
	}
	closedir(dir);
	if (*n)
		qsort(*entries, *n, sizeof **entries, newest_first);
	return LLMP_OK;
}

llmp_status ck_read_latest(const char *root, uint64_t *step, char *msg, size_t len)
{
	char path[4200], text[64] = "";
	snprintf(path, sizeof path, "%s/" CK_LATEST, root);
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(msg, len, "%s: %s", path, strerror(errno));
		return LLMP_ERR_IO;
	}
	size_t got = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[got] = '\0';
	char *nl = strchr(text, '\n');
	if (!nl || nl[1] || (*nl = '\0', ck_parse_entry_name(text, step) != CK_ENTRY_COMPLETE)) {
		snprintf(msg, len, "%s does not hold a line step-N", path);
		return LLMP_ERR_IO;
	}
	return LLMP_OK;
}

llmp_status ck_replace_file(const char *dir, const char *name, const char *tmp_name, const char *text,
			    char *msg, size_t len)
{
	char tmp[4096], final[4096];
	snprintf(tmp, sizeof tmp, "%s/%s", dir, tmp_name);
	snprintf(final, sizeof final, "%s/%s", dir, name);
	FILE *f = fopen(tmp, "we");
	if (!f) {
		snprintf(msg, len, "create %s: %s", tmp, strerror(errno));
		return LLMP_ERR_IO;
	}
	int bad = fputs(text, f) < 0;
	bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
	bad |= fclose(f) != 0;
	if (bad) {
		snprintf(msg, len, "write %s: %s", tmp, strerror(errno));
		unlink(tmp);
		return LLMP_ERR_IO;
	}
	if (rename(tmp, final) != 0) {
		snprintf(msg, len, "rename %s: %s", tmp, strerror(errno));
		unlink(tmp);
		return LLMP_ERR_IO;
	}
	return ck_fsync_msg(dir, msg, len);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics_file.c - the LLMP_METRICS setting and the metrics files, appended whole lines only. */
#define _POSIX_C_SOURCE 200809L
#include "metrics_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fail.h"

/* "30", "30s", "2m", "0.5s": seconds; -1 if not a duration. */
static double parse_duration(const char *text)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || end == text || !isfinite(v) || v < 0 || *text == '-' || *text == '+')
		return -1;
	if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		return v * 60;
	if (*end == '\0' || strcmp(end, "s") == 0)
		return v;
	return -1;
}

llmp_status job_metrics_spec_parse(const char *text, struct job_metrics_spec *spec, char *msg, size_t msglen)
{
	memset(spec, 0, sizeof *spec);
	spec->every_s = JOB_METRICS_DEFAULT_EVERY_S;
	if (!text || !*text || *text == ',')
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 JOB_METRICS_ENV ": no directory (DIR[,every=Ns][,prom])");
	const char *comma = strchr(text, ',');
	size_t n = comma ? (size_t)(comma - text) : strlen(text);
	if (n >= sizeof spec->dir)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 JOB_METRICS_ENV ": the directory is longer than %zu bytes",
				 sizeof spec->dir - 1);
	memcpy(spec->dir, text, n);
	spec->dir[n] = '\0';
	while (comma) {
		const char *item = comma + 1;
		comma = strchr(item, ',');
		size_t len = comma ? (size_t)(comma - item) : strlen(item);
		char field[64];
		char shown[LLMP_SHOW_MAX];
		if (len >= sizeof field)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen, JOB_METRICS_ENV ": '%s': not a field",
					 llmp_show(shown, item, len));
		memcpy(field, item, len);
		field[len] = '\0';
		if (strcmp(field, "prom") == 0) {
			spec->prom = true;
		} else if (strncmp(field, "every=", 6) == 0) {
			if ((spec->every_s = parse_duration(field + 6)) < 0)
				return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
						 JOB_METRICS_ENV
						 ": every='%s' is not a duration (30s, 2m, 0: every step)",
						 llmp_show(shown, field + 6, strlen(field + 6)));
		} else {
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 JOB_METRICS_ENV ": unknown field '%s' (DIR[,every=Ns][,prom])",
					 llmp_show(shown, field, len));
		}
	}
	return LLMP_OK;
}

void job_metrics_path(const char *dir, uint32_t rank, const char *ext, char *buf, size_t len)
{
	snprintf(buf, len, "%s/rank-%05u.%s", dir, rank, ext);
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
	char path[JOB_METRICS_DIR_MAX];
	snprintf(path, sizeof path, "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* The length of the file up to its last newline (0 if none). */
static off_t whole_lines(int fd, off_t size)
{
	char buf[4096];
	off_t end = size;
	while (end > 0) {
		size_t n = end < (off_t)sizeof buf ? (size_t)end : sizeof buf;
		if (pread(fd, buf, n, end - (off_t)n) != (ssize_t)n)
			return -1;
		for (size_t i = n; i > 0; i--)
			if (buf[i - 1] == '\n')
				return end - (off_t)n + (off_t)i;
		end -= (off_t)n;
	}
	return 0;
}

llmp_status job_metrics_open(const char *dir, uint32_t rank, int *fd, char *msg, size_t msglen)
{
	char path[JOB_METRICS_DIR_MAX + 32];
	*fd = -1;
	if (make_dirs(dir) != 0)
		return llmp_fail(LLMP_ERR_IO, msg, msglen, JOB_METRICS_ENV ": cannot make %.300s: %s", dir,
				 strerror(errno));
	job_metrics_path(dir, rank, "jsonl", path, sizeof path);
	int f = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (f < 0)
		return llmp_fail(LLMP_ERR_IO, msg, msglen, JOB_METRICS_ENV ": %.300s: %s", path,
				 strerror(errno));
	struct stat st;
	off_t keep = fstat(f, &st) == 0 ? whole_lines(f, st.st_size) : -1;
	if (keep < 0 || (keep < st.st_size && ftruncate(f, keep) != 0)) {
		int e = errno;
		close(f);
		return llmp_fail(LLMP_ERR_IO, msg, msglen,
				 JOB_METRICS_ENV ": cutting the last line of %.300s: %s", path, strerror(e));
	}
	*fd = f;
	return LLMP_OK;
}

llmp_status job_metrics_append(int fd, const char *line, size_t len, char *msg, size_t msglen)
{
	off_t start = lseek(fd, 0, SEEK_END);
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, line + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : ENOSPC;
			if (done && start >= 0 && ftruncate(fd, start) != 0)
				e = errno;
			return llmp_fail(LLMP_ERR_IO, msg, msglen, JOB_METRICS_ENV ": appending a line: %s",
					 strerror(e));
		}
		done += (size_t)w;
	}
	return LLMP_OK;
}

llmp_status job_metrics_replace(const char *path, const char *text, size_t len, char *msg, size_t msglen)
{
	char tmp[JOB_METRICS_DIR_MAX + 64];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return llmp_fail(LLMP_ERR_IO, msg, msglen, "%.300s: %s", tmp, strerror(errno));
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	int e = done < len ? errno : 0;
	if (close(fd) != 0 && !e)
		e = errno;
	if (!e && rename(tmp, path) != 0)
		e = errno;
	if (e) {
		unlink(tmp);
		return llmp_fail(LLMP_ERR_IO, msg, msglen, "%.300s: %s", path, strerror(e ? e : ENOSPC));
	}
	return LLMP_OK;
}

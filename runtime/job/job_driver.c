/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_driver.c - ROOT/llmp-driver, the heartbeat of `llmp job run`
 * (job_driver.h): written by the driver, read by a rank whose run failed.
 */

#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC, O_NOFOLLOW: this library is built without _GNU_SOURCE */

#include "job_driver.h"
#include "job_record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAGIC "llmp-driver"
#define VERSION 1

static bool only(const char *s, const char *set, size_t max)
{
	size_t n = strlen(s);
	return n > 0 && n < max && strspn(s, set) == n;
}

static bool beat_ok(const struct job_driver_beat *b)
{
	return only(b->job_id, "0123456789_", sizeof b->job_id) && job_record_host_ok(b->host) &&
	       (!strcmp(b->how, "auto") || !strcmp(b->how, "exit") || !strcmp(b->how, "scontrol") ||
		!strcmp(b->how, "none")) &&
	       b->ms > 0;
}

llmp_status job_driver_write(const char *root, const struct job_driver_beat *b, char *msg, size_t msglen)
{
	char path[4096], tmp[4096 + 32], line[256];
	if (!beat_ok(b)) {
		snprintf(msg, msglen, "not a driver's beat (job '%.31s', host '%.63s', requeue '%.15s')",
			 b->job_id, b->host, b->how);
		return LLMP_ERR_ARG;
	}
	int n = snprintf(line, sizeof line, "%s %d %s %s %s %lld\n", MAGIC, VERSION, b->job_id, b->host,
			 b->how, b->ms);
	snprintf(path, sizeof path, "%s/%s", root, JOB_DRIVER_FILE);
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		snprintf(msg, msglen, "%.200s: %s", tmp, strerror(errno));
		return LLMP_ERR_IO;
	}
	bool ok = write(fd, line, (size_t)n) == n;
	int err = errno;
	if (close(fd) != 0 && ok) {
		ok = false;
		err = errno;
	}
	if (ok && rename(tmp, path) == 0)
		return LLMP_OK;
	if (ok)
		err = errno;
	unlink(tmp);
	snprintf(msg, msglen, "%.200s: %s", path, strerror(err));
	return LLMP_ERR_IO;
}

llmp_status job_driver_read(const char *root, struct job_driver_beat *b, char *msg, size_t msglen)
{
	char path[4096], line[256], magic[16];
	int version;
	snprintf(path, sizeof path, "%s/%s", root, JOB_DRIVER_FILE);
	memset(b, 0, sizeof *b);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(msg, msglen, "%.200s: %s", path, strerror(errno));
		return LLMP_ERR_IO;
	}
	ssize_t got = read(fd, line, sizeof line - 1);
	close(fd);
	line[got > 0 ? got : 0] = '\0';
	if (sscanf(line, "%15s %d %31s %63s %15s %lld", magic, &version, b->job_id, b->host, b->how,
		   &b->ms) != 6 ||
	    strcmp(magic, MAGIC) != 0 || version != VERSION || !beat_ok(b)) {
		snprintf(msg, msglen, "%.200s: not a driver's beat", path);
		return LLMP_ERR_IO;
	}
	return LLMP_OK;
}

void job_driver_remove(const char *root, const char *job_id)
{
	struct job_driver_beat b;
	char path[4096], msg[256];
	if (job_driver_read(root, &b, msg, sizeof msg) != LLMP_OK || strcmp(b.job_id, job_id) != 0)
		return;
	snprintf(path, sizeof path, "%s/%s", root, JOB_DRIVER_FILE);
	unlink(path);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* own_dir.c - whether a directory is the user's own (own_dir.h). */
#define _XOPEN_SOURCE 700
#include "own_dir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fail.h"

/* path for a message: at most 200 bytes, every byte that is not printable ASCII as '?'. */
static const char *shown(char out[204], const char *path)
{
	return llmp_show_in(out, 204, path, strlen(path));
}

int llmp_dir_own(const char *path, uid_t uid, char *msg, size_t msglen)
{
	char buf[204];
	struct stat sb;
	if (stat(path, &sb) != 0)
		return snprintf(msg, msglen, "%s: %s", shown(buf, path), strerror(errno)), -1;
	if (!S_ISDIR(sb.st_mode))
		return snprintf(msg, msglen, "%s is not a directory", shown(buf, path)), -1;
	if (sb.st_uid != uid)
		return snprintf(
			       msg, msglen,
			       "%s belongs to uid %u, not to this job's user (%u): another user could replace "
			       "what is kept there; use a directory of your own",
			       shown(buf, path), (unsigned)sb.st_uid, (unsigned)uid),
		       -1;
	if ((sb.st_mode & (S_IWGRP | S_IWOTH)) && !(sb.st_mode & S_ISVTX))
		return snprintf(
			       msg, msglen,
			       "%s is writable by %s (mode %04o, no sticky bit): others could replace what is "
			       "kept there; chmod go-w it",
			       shown(buf, path), sb.st_mode & S_IWOTH ? "everyone" : "its group",
			       (unsigned)(sb.st_mode & 07777)),
		       -1;
	return 0;
}

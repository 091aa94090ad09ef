/* SPDX-License-Identifier: BSD-3-Clause */
/* open_regular.c - open a regular file without waiting on it (open_regular.h). */
#define _POSIX_C_SOURCE 200809L
#include "open_regular.h"

#include <fcntl.h>
#include <unistd.h>

int llmp_open_regular(const char *path, struct stat *sb)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode)) {
		close(fd);
		return LLMP_NOT_REGULAR;
	}
	return fd;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * open_regular.h - open a file a user names, to read it whole, without
 * waiting on it: a FIFO or a device would hold open(2) or read(2) until a
 * writer came. Shared by the readers of a topology file (topology/, the
 * plugin's), a model's config.json (planner/) and the plugin's bounded
 * reads.
 */
#ifndef LLMP_OPEN_REGULAR_H
#define LLMP_OPEN_REGULAR_H

#include <sys/stat.h>

#define LLMP_NOT_REGULAR (-2)

/*
 * path opened read-only, O_NONBLOCK, O_NOCTTY (a terminal stays free) and
 * O_CLOEXEC, kept only when it is a regular file: the descriptor, with its
 * stat in *sb. -1 when open(2) failed (errno says why); LLMP_NOT_REGULAR,
 * nothing left open, when it is not a regular file (or fstat failed).
 */
int llmp_open_regular(const char *path, struct stat *sb);

#endif /* LLMP_OPEN_REGULAR_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * own_dir.h - whether a directory is the user's own: one that another user
 * could have made or filled first (a name in a shared /tmp or scratch
 * space) would let them replace checkpoints that are loaded later, or plant
 * links where the job writes. Shared by the plugin (checkpoint, metrics and
 * flight-recorder directories) and the runtime (the checkpoint root).
 */
#ifndef LLMP_OWN_DIR_H
#define LLMP_OWN_DIR_H

#include <stddef.h>
#include <sys/types.h>

/*
 * 0 when path (links followed) is a directory owned by uid that nobody
 * else may write to: no group or world write bit, unless the sticky bit
 * is set too (as on /tmp, where one cannot remove or rename another's
 * files). Else -1 with msg naming the path (non-printable bytes as '?'),
 * its owner or its mode, and why.
 */
int llmp_dir_own(const char *path, uid_t uid, char *msg, size_t msglen);

#endif /* LLMP_OWN_DIR_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * own_dir.h - whether a directory is the user's own: one that another user
 * could have made or filled first (a name in a shared /tmp or scratch
 * space), or could move away and replace later, would let them replace
 * checkpoints that are loaded later, or plant links where the job writes.
 * Shared by the plugin (checkpoint, metrics and flight-recorder
 * directories) and the runtime (the checkpoint root); python/llmp/dcp.py
 * applies the same rule before it unpickles a checkpoint's metadata.
 *
 * The rule, for every directory from "/" down to the one named (a relative
 * path is walked from "/" through the working directory getcwd(3) gives):
 *
 * - a directory on the way must belong to root or the user, and nobody
 *   else may write to it unless it has the sticky bit (as /tmp). Its owner,
 *   or anyone it lets write without the sticky bit, could rename what is
 *   under it away and put a directory of their choosing in its place. So a
 *   project directory shared through its group (root:proj, mode 2770) is
 *   refused too: another member of the group could do the same. Use a
 *   directory under one only the user (or root) can write to.
 * - the directory named must belong to the user, and nobody else may write
 *   to it unless it has the sticky bit.
 * - a symbolic link on the way, the last name included, is followed only
 *   when the link itself belongs to root or the user (a site's /scratch ->
 *   /lustre/scratch; the spirit of Linux's protected_symlinks): another
 *   user's link points where they chose. Its target is walked by the same
 *   rule; more than 40 links on one path are refused (as ELOOP).
 * - "." is the directory the walk is in; ".." its parent as it is on disk,
 *   so ".." after a followed link is the parent of the link's target (as
 *   the kernel resolves it), a directory the walk has already checked.
 *
 * Why a path that passes may be used by name afterwards: every directory
 * on it can be renamed, replaced or written only by root or the user (a
 * sticky directory lets others add names, but not move or remove the
 * user's), and every link on it can be changed only by root or the user,
 * as only they may write the directory that holds it. No other user can
 * make the same path lead elsewhere later. What is in the last directory
 * is another matter when it is sticky: others may add names there, so a
 * caller checks what it opens under it.
 *
 * Messages name the directory or link (non-printable bytes as '?', at most
 * 200 bytes of it), its owner or mode, and why; the last directory's
 * messages name the path as the caller wrote it.
 */
#ifndef LLMP_OWN_DIR_H
#define LLMP_OWN_DIR_H

#include <stddef.h>
#include <sys/types.h>

#define LLMP_DIR_REFUSED (-1) /* the rule refuses the path: msg says where and why */
#define LLMP_DIR_FAILED (-2)  /* a call failed (a missing name, no space): msg names it and errno's text */

/*
 * 0 when path passes the rule above, *dirfd then an O_PATH descriptor
 * (close-on-exec) of the directory (dirfd NULL: none kept). Else
 * LLMP_DIR_REFUSED or LLMP_DIR_FAILED with msg.
 */
int llmp_dir_open_own(const char *path, uid_t uid, int *dirfd, char *msg, size_t msglen);

/*
 * The same, making each missing directory on the way with mode (less the
 * umask): only in a directory that has passed the rule, so nothing is made
 * where another user's link or directory leads.
 */
int llmp_dir_make_own(const char *path, uid_t uid, mode_t mode, int *dirfd, char *msg, size_t msglen);

/* 0 when path passes the rule above; else -1 with msg. */
int llmp_dir_own(const char *path, uid_t uid, char *msg, size_t msglen);

#endif /* LLMP_OWN_DIR_H */

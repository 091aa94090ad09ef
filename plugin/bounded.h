/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bounded.h - work on a path a user named, done in a child process under a
 * deadline, so that no such path can hold the caller.
 *
 * slurmstepd runs the plugin's user_init and exit with a saved uid of 0,
 * and a step that never starts (or never ends) drains its node. A FIFO, a
 * hung NFS server or a FUSE daemon that never answers holds whoever opens,
 * reads or writes there. The work is therefore done by a child that takes
 * the job owner's identity for good (real, effective and saved ids and the
 * job's groups) and hands back at most a given number of bytes through a
 * pipe. Past the deadline the child is killed and left behind if it cannot
 * even die (a wait in the kernel that no signal ends), and the caller gets
 * a message instead of a wait.
 */
#ifndef LLMP_PLUGIN_BOUNDED_H
#define LLMP_PLUGIN_BOUNDED_H

#include <stddef.h>
#include <sys/types.h>

/* How long the plugin waits for work on a user's path, in milliseconds. */
#define PLUGIN_PATH_TIMEOUT_MS 10000

/* Who the child becomes. */
struct plugin_identity {
	uid_t uid;
	gid_t gid;
	const gid_t *groups; /* the job's supplementary groups */
	size_t ngroups;
};

/*
 * The child's work: what the caller should get in *out (malloc'ed, *outlen
 * bytes; NULL and 0 for nothing) and 0, or -1 with msg set. It runs in a
 * forked process: it may block, and what it allocates is gone with it.
 */
typedef int (*plugin_child_work)(void *arg, char **out, size_t *outlen, char *msg, size_t msglen);

/*
 * Run work(arg) in a child, as *who (NULL: the caller's own identity, for a
 * caller that is the user already), for at most timeout_ms. Its output,
 * at most cap bytes, in *out (malloc'ed, NUL-terminated, *outlen bytes
 * before the NUL); out may be NULL when nothing is expected. Returns 0, or
 * -1 with msg saying why: the work's own message, the deadline passed,
 * more than cap bytes, or the child's end. what names the work in the
 * deadline's message ("reading /path").
 */
int plugin_run_bounded(const struct plugin_identity *who, const char *what, plugin_child_work work, void *arg,
		       unsigned timeout_ms, size_t cap, char **out, size_t *outlen, char *msg, size_t msglen);

/*
 * A child's work: the regular file at arg (a path) as it is, when it is
 * owned by the child's user or root and has at most cap bytes (struct
 * plugin_file_read). Opened without blocking, so a FIFO or a device is
 * refused rather than waited on.
 */
struct plugin_file_read {
	const char *path;
	size_t cap;
};
int plugin_read_file_work(void *arg, char **out, size_t *outlen, char *msg, size_t msglen);

/*
 * A path a user gave, for a message: every byte that is not printable
 * ASCII shown as '?' (a newline or an escape sequence would forge a line
 * of slurmd's log or the job's output), at most PLUGIN_SHOWN - 4 bytes
 * and "..." when cut. Returns out.
 */
#define PLUGIN_SHOWN 256
const char *plugin_show_path(char out[PLUGIN_SHOWN], const char *path);

#endif /* LLMP_PLUGIN_BOUNDED_H */

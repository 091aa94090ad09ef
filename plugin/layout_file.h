/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * layout_file.h - the per-node copy of the layout, in the JSON format of
 * `llmp plan --format json`, for frameworks that read groups from a file.
 *
 * Its name carries a random token (llmp-layout.JOB.STEP.NODE.TOKEN.json):
 * another user of a shared /tmp cannot guess it, so cannot take the name
 * first or plant a link there. It is created with O_EXCL|O_NOFOLLOW, mode
 * 0600, by a child process that is the job's owner and nothing else, under
 * a deadline (bounded.h), before any task starts; so it is complete when a
 * task reads it.
 */
#ifndef LLMP_LAYOUT_FILE_H
#define LLMP_LAYOUT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <llmp/llmp_plan.h>
#include "bounded.h"

/*
 * The file's name, in path: dir (absolute; a relative TMPDIR means nothing
 * to slurmstepd, whose working directory is not the job's: the caller
 * gives /tmp then) and a fresh random token. Touches no file system.
 * Returns 0, or -1 with msg set.
 */
int plugin_layout_file_name(const char *dir, uint32_t job_id, uint32_t step_id, uint32_t node_id, char *path,
			    size_t pathlen, char *msg, size_t msglen);

/*
 * The same for any per-node file of a step: dir/STEM.JOB.STEP.NODE.RANDOM
 * followed by suffix; what names the file in msg ("layout file").
 */
int plugin_random_file_name(const char *dir, const char *stem, const char *suffix, const char *what,
			    uint32_t job_id, uint32_t step_id, uint32_t node_id, char *path, size_t pathlen,
			    char *msg, size_t msglen);

/*
 * Write the layout to path, as *who (NULL: the caller is the user), with
 * each pipeline stage's layers when stage_layers is not NULL (pp of them,
 * llmp_plan_write_json_stages). Returns 0, or -1 with msg set.
 */
int plugin_layout_file_write(const llmp_plan *plan, const uint32_t *stage_layers, const char *path,
			     const struct plugin_identity *who, char *msg, size_t msglen);

/*
 * In a task: the file where the task sees it. A task can see another /tmp
 * than slurmstepd did when it wrote the file (job_container/tmpfs gives each
 * job its own, joined after user_init): then each task writes the same
 * layout under a name of its own (path.PID, O_EXCL) and renames it to path,
 * so a reader never sees a part of it, whichever task is first. The copy
 * goes with the job's private /tmp. *written tells whether this task wrote
 * one. Run in a child under the deadline, as the caller (the task is the
 * user already). Returns 0, or -1 with msg set.
 */
int plugin_layout_file_ensure(const llmp_plan *plan, const uint32_t *stage_layers, const char *path,
			      bool *written, char *msg, size_t msglen);

/*
 * Remove the file as the job's owner, with the job's groups (a directory
 * writable through one of them stays so), in a child under a deadline: the
 * caller (slurmstepd's exit) runs as root and must not act as root on a
 * path in a directory the user chose, nor wait on it. Returns 0, or -1
 * with msg set.
 */
int plugin_layout_file_remove(const char *path, const struct plugin_identity *who, char *msg, size_t msglen);

#endif /* LLMP_LAYOUT_FILE_H */

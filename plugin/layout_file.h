/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * layout_file.h - the per-node copy of the layout, in the JSON format of
 * `llmp plan --format json`, for frameworks that read groups from a file.
 */
#ifndef LLMP_LAYOUT_FILE_H
#define LLMP_LAYOUT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <llmp/llmp_plan.h>

/*
 * Write dir/llmp-layout.JOB.STEP.NODE.json: into a temporary file first,
 * renamed into place only once complete, so a reader never sees half a
 * document. The node's index keeps nodes apart where dir is shared. path
 * receives the final name. Returns 0, or -1 with msg set.
 */
int plugin_layout_file_write(const llmp_plan *plan, const char *dir, uint32_t job_id, uint32_t step_id,
			     uint32_t node_id, char *path, size_t pathlen, char *msg, size_t msglen);

/*
 * Remove the file with the job owner's identity, from a child process: the
 * caller (slurmstepd's exit) runs as root and must not act as root on a path
 * in a directory the user chose. Returns 0 or -1.
 */
int plugin_layout_file_remove(const char *path, uid_t uid, gid_t gid);

#endif /* LLMP_LAYOUT_FILE_H */

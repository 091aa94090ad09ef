/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * serve_token.h - a serving step's token file (serve.h): the secret srun's
 * plugin drew for the step (LLMP_SERVE_TOKEN, 64 hex digits), written on
 * each node as the job's user, 0600, under a random name, for the engines'
 * authentication (Ray's RAY_AUTH_TOKEN_PATH, vLLM's API key through `llmp
 * serve`). Written and removed like the layout file (layout_file.h): by a
 * child that is the job's owner, under the deadline (bounded.h).
 */
#ifndef LLMP_PLUGIN_SERVE_TOKEN_H
#define LLMP_PLUGIN_SERVE_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bounded.h"

#define PLUGIN_SERVE_TOKEN_LEN 64

/* Whether text is a token as srun's plugin writes it: exactly 64 lower-case hex digits. */
bool plugin_serve_token_valid(const char *text);

/* The new file's path under dir; 0, or -1 with msg. */
int plugin_serve_token_name(const char *dir, uint32_t job_id, uint32_t step_id, uint32_t node_id, char *path,
			    size_t pathlen, char *msg, size_t msglen);

/* Write token to the new file path as *who (O_EXCL, O_NOFOLLOW, 0600); 0, or -1 with msg. */
int plugin_serve_token_write(const char *token, const char *path, const struct plugin_identity *who,
			     char *msg, size_t msglen);

#endif /* LLMP_PLUGIN_SERVE_TOKEN_H */

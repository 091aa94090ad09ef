/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * serve_token.c - write a serving step's token file (serve_token.h).
 */
#define _GNU_SOURCE
#include "serve_token.h"
#include "layout_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

bool plugin_serve_token_valid(const char *text)
{
	return text && strlen(text) == PLUGIN_SERVE_TOKEN_LEN &&
	       strspn(text, "0123456789abcdef") == PLUGIN_SERVE_TOKEN_LEN;
}

int plugin_serve_token_name(const char *dir, uint32_t job_id, uint32_t step_id, uint32_t node_id, char *path,
			    size_t pathlen, char *msg, size_t msglen)
{
	return plugin_random_file_name(dir, "llmp-serve-token", "", "token file", job_id, step_id, node_id,
				       path, pathlen, msg, msglen);
}

struct token_job {
	const char *token, *path;
};

/* In the child, as the job's user: the new file, written whole, or gone again. */
static int write_work(void *arg, char **out, size_t *outlen, char *msg, size_t msglen)
{
	const struct token_job *t = arg;
	char shown[PLUGIN_SHOWN];
	const char *path = plugin_show_path(shown, t->path);
	size_t len = strlen(t->token);
	(void)out;
	(void)outlen;
	int fd = open(t->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return snprintf(msg, msglen, "cannot create the token file %s: %s", path, strerror(errno)),
		       -1;
	ssize_t n = write(fd, t->token, len);
	int saved = errno;
	if (close(fd) != 0 || n != (ssize_t)len) {
		unlink(t->path);
		return snprintf(msg, msglen, "cannot write the token file %s: %s", path,
				n < 0 ? strerror(saved) : "short write"),
		       -1;
	}
	return 0;
}

int plugin_serve_token_write(const char *token, const char *path, const struct plugin_identity *who,
			     char *msg, size_t msglen)
{
	char shown[PLUGIN_SHOWN], what[PLUGIN_SHOWN + 32];
	struct token_job t = { .token = token, .path = path };
	snprintf(what, sizeof what, "writing %s", plugin_show_path(shown, path));
	return plugin_run_bounded(who, what, write_work, &t, PLUGIN_PATH_TIMEOUT_MS, 0, NULL, NULL, msg,
				  msglen);
}

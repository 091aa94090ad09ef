/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c - where the plugin's messages go.
 *
 * On the submitting side the user's terminal is our stderr. In a task,
 * task_init runs in the task's process just before exec, so stderr is the
 * job's output file: a user reads why a job failed where they look, and the
 * message is logged by slurmstepd too.
 *
 * Every message passes llmp_show_line on its way out: Slurm's logger and a
 * job's output file write a message as they get it, so a newline in a value
 * the user chose (an environment variable, a path, a host name) would start
 * a line of theirs in slurmd's log. The values themselves are shown with
 * llmp_show where the message is made; this is the guarantee for all.
 */
#include "plugin.h"

#include <stdarg.h>
#include <stdio.h>

#include "common/fail.h" /* llmp_show_line */

/* The longest line said: a note of the chooser's (model_layout.h) with room to spare. */
#define PLUGIN_LINE_MAX 2048

void plugin_user_message(const char *fmt, ...)
{
	char msg[PLUGIN_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, PLUGIN_NAME ": %s\n", llmp_show_line(msg));
}

void plugin_task_message(const char *fmt, ...)
{
	char msg[PLUGIN_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	llmp_show_line(msg);
	fprintf(stderr, PLUGIN_NAME ": %s\n", msg);
	fflush(stderr);
	slurm_info(PLUGIN_NAME ": %s", msg);
}

void plugin_log_error(const char *fmt, ...)
{
	char msg[PLUGIN_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	slurm_error(PLUGIN_NAME ": %s", llmp_show_line(msg));
}

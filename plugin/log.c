/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c - where the plugin's messages go.
 *
 * On the submitting side the user's terminal is our stderr. In a task,
 * task_init runs in the task's own process just before exec, so stderr is
 * the job's output file: a user reads why a job failed where they look,
 * and the message is logged by slurmstepd too.
 */
#include "plugin.h"

#include <stdarg.h>
#include <stdio.h>

void plugin_user_message(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(PLUGIN_NAME ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void plugin_task_message(const char *fmt, ...)
{
	char msg[LLMP_MSG_MAX + 64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, PLUGIN_NAME ": %s\n", msg);
	fflush(stderr);
	slurm_info(PLUGIN_NAME ": %s", msg);
}

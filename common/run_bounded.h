/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * run_bounded.h - run a Slurm command (scontrol, scancel) and wait for it
 * under a deadline. A controller that does not answer must not hold the
 * caller: the plugin in a job's epilog, a rank whose driver is gone, or
 * `llmp job-end` at the end of a batch script. Shared by those three.
 */
#ifndef LLMP_RUN_BOUNDED_H
#define LLMP_RUN_BOUNDED_H

#include <stddef.h>

struct llmp_run_how {
	char *const *env; /* the child's environment; NULL: the caller's */
	int search_path;  /* argv[0] looked up in PATH; 0: argv[0] is the program's path */
	int quiet;        /* stdin and stdout on /dev/null (stderr stays the caller's) */
	double timeout_s; /* past it the child is killed and the run fails */
};

/*
 * Runs argv as *how says and waits for it. 0 when it exited with status 0;
 * -1 otherwise, with a sentence naming argv[0] in why: it could not be
 * started, it gave no answer within the deadline (then it was killed and
 * reaped), or it failed with its exit status (128 + N for signal N).
 */
int llmp_run_bounded(char *const *argv, const struct llmp_run_how *how, char *why, size_t len);

#endif /* LLMP_RUN_BOUNDED_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/* job_run_plan.c - which nodes the next run uses (job_run_plan.h). */
#include "job_run_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool job_run_state_is_bad(const char *state)
{
	static const char *const bad[] = { "down", "drain", "fail" }; /* drained, draining, failing too */
	size_t n = strlen(state);
	if (n && state[n - 1] == '*')
		return true; /* the controller has not heard from it */
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (strncmp(state, bad[i], strlen(bad[i])) == 0)
			return true;
	return false;
}

void job_run_choice_free(struct job_run_choice *c)
{
	free(c->active);
	free(c->spares);
	memset(c, 0, sizeof *c);
}

int job_run_choose(const char *const *nodes, size_t n, const bool *excluded, const char *batch_host,
		   size_t want, struct job_run_choice *c, char *msg, size_t msglen)
{
	memset(c, 0, sizeof *c);
	c->active = malloc((n ? n : 1) * sizeof *c->active);
	c->spares = malloc((n ? n : 1) * sizeof *c->spares);
	if (!c->active || !c->spares) {
		job_run_choice_free(c);
		return snprintf(msg, msglen, "out of memory"), -1;
	}
	/* The healthy nodes in the job's order, the batch host moved to the front. */
	size_t healthy = 0, *order = c->spares; /* spares is free until the end: used as scratch */
	for (size_t i = 0; i < n; i++)
		if (!excluded[i] && batch_host && strcmp(nodes[i], batch_host) == 0)
			order[healthy++] = i;
	for (size_t i = 0; i < n; i++)
		if (!excluded[i] && !(batch_host && strcmp(nodes[i], batch_host) == 0))
			order[healthy++] = i;
	if (healthy == 0) {
		job_run_choice_free(c);
		return snprintf(msg, msglen, "none of the job's %zu node%s is healthy", n, n == 1 ? "" : "s"),
		       -1;
	}
	c->nactive = healthy < want ? healthy : want;
	c->smaller = healthy < want;
	memcpy(c->active, order, c->nactive * sizeof *order);
	c->nspares = healthy - c->nactive;
	memmove(c->spares, order + c->nactive, c->nspares * sizeof *order);
	return 0;
}

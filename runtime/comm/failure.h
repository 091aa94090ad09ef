/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * failure.h - turning a dead or silent member into an error on every member.
 *
 * The member that notices a failure (UCX says the peer is gone, or the
 * peer did not answer within the timeout) tells all other members whom it
 * blames. Timeouts cascade: a member waiting behind a stuck one times out
 * too, blaming its innocent neighbour. So after a timeout a member listens
 * a moment for the others' reports and follows the chain of blame (A
 * blames B, but B itself blamed C, so C) to the member that reported
 * nothing: the one that actually stopped.
 */
#ifndef LLMP_FAILURE_H
#define LLMP_FAILURE_H

#include "rt.h"

enum rt_failure {
	RT_FAILED_TIMEOUT,  /* the peer did not answer in time */
	RT_FAILED_PEER,     /* UCX reported the peer gone */
	RT_FAILED_REPORTED, /* another member reported a failure */
	RT_FAILED_LENGTH,   /* the peer sent another size: arguments differ */
	RT_FAILED_UCX       /* any other transport error */
};

/*
 * After a timeout, how long to listen for the others' reports. A wait
 * gives up this much before timeout_s, so that the error comes within it.
 */
double rt_failure_grace(const llmp_ctx *ctx);

/* Keep a receive posted for failure reports on comm. */
llmp_status rt_listen_reports(llmp_comm *comm);
void rt_unlisten_reports(llmp_comm *comm);

/* Has a report arrived (it is recorded)? */
bool rt_report_arrived(llmp_comm *comm);

/*
 * Break comm after a failure seen while talking to member `peer` (comm
 * rank; UINT32_MAX for a report), tell the others, work out the culprit
 * and set the context's message. Requests must already be dropped.
 * expected/got are the sizes for RT_FAILED_LENGTH; detail is UCX's text.
 */
llmp_status rt_fail_comm(llmp_comm *comm, const char *op, enum rt_failure kind, uint32_t peer,
			 size_t expected, size_t got, const char *detail);

#endif /* LLMP_FAILURE_H */

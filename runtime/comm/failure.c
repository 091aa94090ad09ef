/* SPDX-License-Identifier: BSD-3-Clause */
/* failure.c - failure reports between members, and who is to blame. */
#include "failure.h"
#include "wireup.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "transport.h"

/* Longest wait, after a timeout, for the others' reports. */
#define GRACE_MAX_S 2.0

double rt_failure_grace(const llmp_ctx *ctx)
{
	return ctx->timeout_s / 5 < GRACE_MAX_S ? ctx->timeout_s / 5 : GRACE_MAX_S;
}

static uint64_t report_tag(const llmp_comm *comm, uint32_t src)
{
	return rt_tag(comm->kind, true, RT_TAG_ABORT_SEQ, src);
}

llmp_status rt_listen_reports(llmp_comm *comm)
{
	uint64_t mask = ~((UINT64_C(1) << RT_TAG_SRC_BITS) - 1); /* from any member */
	ucp_request_param_t prm = { .op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL };
	void *r = ucp_tag_recv_nbx(comm->ctx->worker, comm->report_in, sizeof comm->report_in,
				   report_tag(comm, 0), mask, &prm);
	if (UCS_PTR_IS_ERR(r))
		return rt_fail(comm->ctx, LLMP_ERR_TRANSPORT, "posting the failure-report receive: %s",
			       ucs_status_string(UCS_PTR_STATUS(r)));
	comm->report_req = r;
	return LLMP_OK;
}

void rt_unlisten_reports(llmp_comm *comm)
{
	if (comm->report_req) {
		ucp_request_cancel(comm->ctx->worker, comm->report_req);
		rt_tx_wait_request(comm->ctx, comm->report_req, rt_now() + RT_NOTIFY_MAX_S);
		comm->report_req = NULL;
	}
	free(comm->reports);
	comm->reports = NULL;
	comm->nreports = 0;
}

bool rt_report_arrived(llmp_comm *comm)
{
	if (!comm->report_req || ucp_request_check_status(comm->report_req) == UCS_INPROGRESS)
		return false;
	ucs_status_t s = ucp_request_check_status(comm->report_req);
	ucp_request_free(comm->report_req);
	comm->report_req = NULL;
	if (s == UCS_OK) {
		if (!comm->reports)
			comm->reports = calloc(comm->size, sizeof *comm->reports);
		if (comm->reports && comm->nreports < comm->size) {
			comm->reports[comm->nreports][0] = (uint32_t)comm->report_in[1];
			comm->reports[comm->nreports][1] = (uint32_t)comm->report_in[0];
			comm->nreports++;
		}
	}
	rt_listen_reports(comm); /* for the next one; a failure here only loses reports */
	return s == UCS_OK;
}

/* Tell every other member (but the culprit) whom this rank blames. */
static void send_reports(llmp_comm *comm, uint32_t culprit)
{
	llmp_ctx *ctx = comm->ctx;
	double deadline = rt_now() + RT_NOTIFY_MAX_S;
	comm->report_out[0] = culprit;
	comm->report_out[1] = ctx->rank;
	for (uint32_t m = 0; m < comm->size; m++) {
		uint32_t w = rt_world_rank(comm, m);
		ucp_ep_h ep;
		if (m == comm->rank || w == culprit || ctx->peers[w].failed)
			continue;
		if (rt_tx_peer_ep(comm, m, &ep) != LLMP_OK)
			continue;
		ucp_request_param_t prm = { .op_attr_mask = 0 };
		void *r = ucp_tag_send_nbx(ep, comm->report_out, sizeof comm->report_out,
					   report_tag(comm, comm->rank), &prm);
		if (!UCS_PTR_IS_ERR(r))
			rt_tx_wait_request(ctx, r, deadline);
	}
}

/* Gather reports until `seconds` have passed. */
static void listen_for(llmp_comm *comm, double seconds)
{
	double until = rt_now() + seconds;
	while (rt_now() < until) {
		if (!ucp_worker_progress(comm->ctx->worker) && !rt_report_arrived(comm))
			sched_yield();
	}
	while (rt_report_arrived(comm))
		;
}

/* Follow the blame from `suspect`: if it blamed someone else, that one, and so on. */
static uint32_t follow_blame(const llmp_comm *comm, uint32_t suspect, uint32_t *reporter)
{
	for (uint32_t hops = 0; hops < comm->nreports; hops++) {
		uint32_t next = suspect;
		for (uint32_t i = 0; i < comm->nreports; i++)
			if (comm->reports[i][0] == suspect && comm->reports[i][1] != suspect) {
				next = comm->reports[i][1];
				*reporter = suspect;
				break;
			}
		if (next == suspect)
			break;
		suspect = next;
	}
	return suspect;
}

static const char *name_of(const llmp_comm *comm, uint32_t world_rank, char *buf, size_t len)
{
	uint32_t m = rt_comm_rank_of(comm, world_rank);
	if (m == UINT32_MAX)
		snprintf(buf, len, "rank %u", world_rank);
	else
		rt_member_name(comm, m, buf, len);
	return buf;
}

llmp_status rt_fail_comm(llmp_comm *comm, const char *op, enum rt_failure kind, uint32_t peer,
			 size_t expected, size_t got, const char *detail)
{
	llmp_ctx *ctx = comm->ctx;
	uint32_t suspect = peer != UINT32_MAX ? rt_world_rank(comm, peer) : UINT32_MAX;
	uint32_t reporter = ctx->rank;
	double grace = rt_failure_grace(ctx);
	char who[64], by[64], waited[64];
	const char *cname = llmp_comm_name(comm);
	llmp_status st;

	comm->broken = true;
	if (kind != RT_FAILED_REPORTED)
		send_reports(comm, suspect);
	listen_for(comm, kind == RT_FAILED_TIMEOUT || kind == RT_FAILED_REPORTED ? grace : 0);

	uint32_t culprit = suspect;
	if (kind == RT_FAILED_REPORTED) {
		/* Blame whom the first report blames, unless it is this rank. */
		for (uint32_t i = 0; i < comm->nreports && culprit == UINT32_MAX; i++)
			if (comm->reports[i][1] != ctx->rank) {
				culprit = comm->reports[i][1];
				reporter = comm->reports[i][0];
			}
		if (culprit == UINT32_MAX && comm->nreports) {
			culprit = ctx->rank;
			reporter = comm->reports[0][0];
		}
	}
	if (kind == RT_FAILED_TIMEOUT || kind == RT_FAILED_REPORTED)
		culprit = follow_blame(comm, culprit, &reporter);
	ctx->failed_host[0] = '\0';
	if (culprit < ctx->world && culprit != ctx->rank && kind != RT_FAILED_LENGTH) {
		struct rt_peer *p = &ctx->peers[culprit];
		if (!p->failed)
			snprintf(p->why, sizeof p->why, "stopped answering (%s on %s)", op, cname);
		p->failed = true;
		/* what the job's driver takes out first (llmp job run) */
		rt_wireup_peer_host(ctx, culprit, ctx->failed_host, sizeof ctx->failed_host);
	}

	name_of(comm, culprit, who, sizeof who);
	name_of(comm, reporter, by, sizeof by);
	if (culprit == ctx->rank) {
		st = rt_fail(ctx, LLMP_ERR_PEER, "%s on %s: %s reports that this rank did not answer in time",
			     op, cname, by);
	} else if (kind == RT_FAILED_TIMEOUT && culprit == suspect) {
		st = rt_fail(ctx, LLMP_ERR_TIMEOUT, "%s on %s: %s did not answer within %.1f s", op, cname,
			     who, ctx->timeout_s);
	} else if (kind == RT_FAILED_TIMEOUT || kind == RT_FAILED_REPORTED) {
		if (kind == RT_FAILED_TIMEOUT)
			st = rt_fail(ctx, LLMP_ERR_TIMEOUT,
				     "%s on %s: %s failed or stopped answering (reported by %s; this "
				     "rank timed out after %.1f s waiting for %s)",
				     op, cname, who, by, ctx->timeout_s,
				     name_of(comm, suspect, waited, sizeof waited));
		else
			st = rt_fail(ctx, LLMP_ERR_PEER,
				     "%s on %s: %s failed or stopped answering (reported by %s)", op, cname,
				     who, by);
	} else if (kind == RT_FAILED_PEER) {
		st = rt_fail(ctx, LLMP_ERR_PEER, "%s on %s: %s failed: %s", op, cname, who,
			     ctx->peers[culprit].why);
	} else if (kind == RT_FAILED_LENGTH) {
		st = rt_fail(ctx, LLMP_ERR_MISMATCH,
			     "%s on %s: %s sent %zu bytes where %zu were expected: members disagree "
			     "on count or dtype",
			     op, cname, who, got, expected);
	} else {
		st = rt_fail(ctx, LLMP_ERR_TRANSPORT, "%s on %s: with %s: %s", op, cname, who,
			     detail ? detail : "transport error");
	}
	snprintf(comm->failure, sizeof comm->failure, "%s", ctx->errmsg);
	return st;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* transport.c - UCX tag messages with timeouts, failure detection and reports. */
#include "transport.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"
#include "idle.h"
#include "liveness.h"
#include "wireup.h"

/* How long to spend closing endpoints at the end. */
#define CLOSE_MAX_S 5.0
/* Polls without progress before looking at the clock and yielding the core (and timing the wait). */
#define IDLE_POLLS RT_METRICS_SPIN

static void peer_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
	struct rt_peer *peer = arg;
	(void)ep;
	if (!peer->failed)
		snprintf(peer->why, sizeof peer->why, "%s", ucs_status_string(status));
	peer->failed = true;
}

llmp_status rt_tx_init(llmp_ctx *ctx, void **addr, size_t *addrlen)
{
	ucp_config_t *config;
	ucs_status_t s = ucp_config_read(NULL, NULL, &config);
	if (s != UCS_OK)
		return rt_fail(ctx, LLMP_ERR_TRANSPORT, "ucp_config_read: %s", ucs_status_string(s));
	ucp_params_t params = {
		.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS,
		.features = UCP_FEATURE_TAG,
		.estimated_num_eps = 16,
	};
	s = ucp_init(&params, config, &ctx->ucp);
	ucp_config_release(config);
	if (s != UCS_OK)
		return rt_fail(ctx, LLMP_ERR_TRANSPORT, "ucp_init: %s", ucs_status_string(s));

	ucp_worker_params_t wparams = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SERIALIZED,
	};
	s = ucp_worker_create(ctx->ucp, &wparams, &ctx->worker);
	if (s != UCS_OK)
		return rt_fail(ctx, LLMP_ERR_TRANSPORT, "ucp_worker_create: %s", ucs_status_string(s));

	ucp_worker_attr_t attr = { .field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS };
	s = ucp_worker_query(ctx->worker, &attr);
	if (s != UCS_OK)
		return rt_fail(ctx, LLMP_ERR_TRANSPORT, "ucp_worker_query: %s", ucs_status_string(s));

	rt_machine_id(ctx->machine_id, sizeof ctx->machine_id);
	ctx->peers = calloc(ctx->world, sizeof *ctx->peers);
	if (!ctx->peers) {
		ucp_worker_release_address(ctx->worker, attr.address);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "peer table for %u ranks", ctx->world);
	}
	*addr = attr.address;
	*addrlen = attr.address_length;
	rt_log(ctx, RT_LOG_COMM, RT_LOG_DEBUG, "UCX: worker up, its address %zu bytes; this machine %s",
	       attr.address_length, ctx->machine_id);
	return LLMP_OK;
}

void rt_tx_release_address(llmp_ctx *ctx, void *addr)
{
	ucp_worker_release_address(ctx->worker, addr);
}

void rt_tx_wait_request(llmp_ctx *ctx, void *req, double deadline)
{
	if (!UCS_PTR_IS_PTR(req))
		return;
	while (ucp_request_check_status(req) == UCS_INPROGRESS && rt_now() < deadline)
		if (!ucp_worker_progress(ctx->worker))
			sched_yield();
	ucp_request_free(req);
}

void rt_tx_fini(llmp_ctx *ctx)
{
	if (ctx->peers) {
		/*
		 * A send is complete when its buffer may be reused, not when it
		 * has arrived: closing in flush mode delivers what is still in
		 * flight. A failed peer's endpoint can only be closed by force.
		 */
		double deadline = rt_now() + (ctx->timeout_s < CLOSE_MAX_S ? ctx->timeout_s : CLOSE_MAX_S);
		for (uint32_t r = 0; r < ctx->world; r++) {
			struct rt_peer *p = &ctx->peers[r];
			if (!p->ep)
				continue;
			ucp_request_param_t prm = {
				.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
				.flags = p->failed ? UCP_EP_CLOSE_FLAG_FORCE : 0,
			};
			rt_tx_wait_request(ctx, ucp_ep_close_nbx(p->ep, &prm), deadline);
			p->ep = NULL;
		}
		free(ctx->peers);
		ctx->peers = NULL;
	}
	if (ctx->worker)
		ucp_worker_destroy(ctx->worker);
	if (ctx->ucp)
		ucp_cleanup(ctx->ucp);
	ctx->worker = NULL;
	ctx->ucp = NULL;
}

llmp_status rt_tx_peer_ep(llmp_comm *comm, uint32_t peer, ucp_ep_h *ep)
{
	llmp_ctx *ctx = comm->ctx;
	uint32_t w = rt_world_rank(comm, peer);
	struct rt_peer *p = &ctx->peers[w];
	char name[64];

	if (p->failed)
		return rt_fail(ctx, LLMP_ERR_PEER, "%s on %s failed earlier: %s",
			       rt_member_name(comm, peer, name, sizeof name), llmp_comm_name(comm), p->why);
	if (!p->ep) {
		pmix_value_t *addr;
		char process[160];
		llmp_status st = rt_wireup_peer_process(ctx, w, process, sizeof process);
		if (st == LLMP_OK)
			st = rt_wireup_peer_address(ctx, w, &addr);
		if (st != LLMP_OK)
			return st;
		/* liveness.h: on this machine, shared memory and a pid check; elsewhere UCX watches. */
		bool local = rt_same_machine(process, ctx->machine_id, &p->pid);
		ucp_ep_params_t params = {
			.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
				      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER,
			.address = (const ucp_address_t *)addr->data.bo.bytes,
			.err_mode = local ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER,
			.err_handler = { .cb = peer_failed, .arg = p },
		};
		ucs_status_t s = ucp_ep_create(ctx->worker, &params, &p->ep);
		rt_wireup_release(addr);
		if (s != UCS_OK) {
			p->ep = NULL;
			return rt_fail(ctx, LLMP_ERR_TRANSPORT, "connecting to %s: %s",
				       rt_member_name(comm, peer, name, sizeof name), ucs_status_string(s));
		}
		ctx->stats.endpoints++;
		rt_log(ctx, RT_LOG_COMM, RT_LOG_TRACE, "UCX: endpoint to %s of %s opened (%s)",
		       rt_member_name(comm, peer, name, sizeof name), llmp_comm_name(comm),
		       local ? "this machine: error mode none, watched by pid"
			     : "another machine: error mode peer");
	}
	*ep = p->ep;
	return LLMP_OK;
}

llmp_status rt_tx_isend(llmp_comm *comm, uint32_t peer, uint64_t tag, const void *buf, size_t bytes,
			rt_req *req)
{
	ucp_ep_h ep;
	memset(req, 0, sizeof *req);
	req->comm_peer = peer;
	llmp_status st = rt_tx_peer_ep(comm, peer, &ep);
	if (st != LLMP_OK)
		return st;
	ucp_request_param_t prm = { .op_attr_mask = 0 };
	void *r = ucp_tag_send_nbx(ep, buf, bytes, tag, &prm);
	if (UCS_PTR_IS_ERR(r)) {
		char name[64];
		return rt_fail(comm->ctx, LLMP_ERR_TRANSPORT, "send to %s: %s",
			       rt_member_name(comm, peer, name, sizeof name),
			       ucs_status_string(UCS_PTR_STATUS(r)));
	}
	req->ucx = r;
	comm->metrics.bytes_sent += bytes;
	return LLMP_OK;
}

llmp_status rt_tx_irecv(llmp_comm *comm, uint32_t peer, uint64_t tag, void *buf, size_t bytes, rt_req *req)
{
	ucp_ep_h ep;
	memset(req, 0, sizeof *req);
	req->comm_peer = peer;
	req->recv = true;
	req->bytes = bytes;
	req->info.length = bytes; /* replaced when a message completes the receive */
	/*
	 * The endpoint is not needed to receive; it is how a dead sender gets
	 * noticed. So failing to open one is no failure of the receive, and
	 * neither is a sender already marked failed: a finished rank need not
	 * wait for its last receivers, and what it sent before it left waits
	 * in this worker, not in the endpoint. The receive is posted either
	 * way; rt_tx_wait decides, once nothing more can arrive.
	 */
	struct rt_peer *p = &comm->ctx->peers[rt_world_rank(comm, peer)];
	if (!p->ep && !p->failed) {
		char saved[LLMP_MSG_MAX];
		memcpy(saved, comm->ctx->errmsg, sizeof saved);
		if (rt_tx_peer_ep(comm, peer, &ep) != LLMP_OK)
			memcpy(comm->ctx->errmsg, saved, sizeof saved);
	}
	ucp_request_param_t prm = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO,
		.recv_info.tag_info = &req->info,
	};
	void *r = ucp_tag_recv_nbx(comm->ctx->worker, buf, bytes, tag, UINT64_MAX, &prm);
	if (UCS_PTR_IS_ERR(r)) {
		char name[64];
		return rt_fail(comm->ctx, LLMP_ERR_TRANSPORT, "receive from %s: %s",
			       rt_member_name(comm, peer, name, sizeof name),
			       ucs_status_string(UCS_PTR_STATUS(r)));
	}
	req->ucx = r;
	comm->metrics.bytes_recvd += bytes;
	return LLMP_OK;
}

void rt_tx_drop(llmp_ctx *ctx, rt_req *reqs, size_t n)
{
	double deadline = rt_now() + RT_NOTIFY_MAX_S;
	for (size_t i = 0; i < n; i++) {
		if (!reqs[i].ucx)
			continue;
		if (reqs[i].recv)
			ucp_request_cancel(ctx->worker, reqs[i].ucx);
		rt_tx_wait_request(ctx, reqs[i].ucx, reqs[i].recv ? deadline : rt_now());
		reqs[i].ucx = NULL;
	}
}

void rt_tx_cancel(llmp_ctx *ctx, rt_req *req)
{
	if (!req->ucx)
		return;
	ucp_request_cancel(ctx->worker, req->ucx);
	ucp_request_free(req->ucx);
	req->ucx = NULL;
}

void rt_tx_progress(llmp_ctx *ctx)
{
	ucp_worker_progress(ctx->worker);
}

bool rt_tx_moves_cuda(const llmp_ctx *ctx)
{
	ucp_context_attr_t attr = { .field_mask = UCP_ATTR_FIELD_MEMORY_TYPES };
	return ctx->ucp && ucp_context_query(ctx->ucp, &attr) == UCS_OK &&
	       (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA));
}

static llmp_status fail(llmp_comm *comm, const char *op, rt_req *reqs, size_t n, enum rt_failure kind,
			const rt_req *at, const char *detail)
{
	rt_tx_drop(comm->ctx, reqs, n);
	return rt_fail_comm(comm, op, kind, at ? at->comm_peer : UINT32_MAX, at ? at->bytes : 0,
			    at ? at->info.length : 0, detail);
}

/* ------------------------------------------------------------------ wait */

/*
 * One pass over the requests: 1 while some are pending, 0 when all are
 * done, -1 on failure. *last: the peer of the last request completed.
 */
static int poll_requests(rt_req *reqs, size_t n, size_t *failed, ucs_status_t *why, uint32_t *last)
{
	int pending = 0;
	for (size_t i = 0; i < n; i++) {
		rt_req *q = &reqs[i];
		if (q->ucx) {
			ucs_status_t s = q->recv ? ucp_tag_recv_request_test(q->ucx, &q->info)
						 : ucp_request_check_status(q->ucx);
			if (s == UCS_INPROGRESS) {
				pending = 1;
				continue;
			}
			ucp_request_free(q->ucx);
			q->ucx = NULL;
			*last = q->comm_peer;
			if (s != UCS_OK) {
				*failed = i;
				*why = s;
				return -1;
			}
		}
		if (q->recv && q->info.length != q->bytes) {
			*failed = i;
			*why = UCS_ERR_MESSAGE_TRUNCATED;
			return -1;
		}
	}
	return pending;
}

bool rt_member_gone(llmp_comm *comm, uint32_t member)
{
	struct rt_peer *p = &comm->ctx->peers[rt_world_rank(comm, member)];
	if (!p->pid || rt_pid_alive(p->pid))
		return false;
	snprintf(p->why, sizeof p->why, "its process (pid %ld) exited", (long)p->pid);
	p->failed = true;
	return true;
}

/*
 * A pending request whose peer has failed; n if none. With check_pids, a
 * peer on this machine whose process is gone (liveness.h) counts as failed.
 */
static size_t find_failed_peer(llmp_comm *comm, const rt_req *reqs, size_t n, bool check_pids)
{
	for (size_t i = 0; i < n; i++) {
		if (!reqs[i].ucx)
			continue;
		if (comm->ctx->peers[rt_world_rank(comm, reqs[i].comm_peer)].failed ||
		    (check_pids && rt_member_gone(comm, reqs[i].comm_peer)))
			return i;
	}
	return n;
}

/*
 * Progress the worker until it has been quiet for RT_DRAIN_QUIET_S (at
 * most RT_DRAIN_MAX_S), so that everything already on its way in has been
 * taken in.
 *
 * Why: a peer that did its part and left looks, to UCX, like one that died
 * (its connections close: "Endpoint timeout" over TCP), and its process is
 * gone to the pid check. Its last messages were sent before that, but they
 * may not be read yet: over TCP they come on a connection of their own,
 * which the poll may reach after the one that reported the close; through
 * shared memory they sit in a FIFO. A receive pending on such a peer is a
 * failure only once they have been taken in and it still is not complete.
 */
static void drain_worker(llmp_ctx *ctx)
{
	double t = rt_now(), end = t + RT_DRAIN_MAX_S, quiet_since = t;
	while (t < end && t - quiet_since < RT_DRAIN_QUIET_S) {
		if (ucp_worker_progress(ctx->worker))
			quiet_since = rt_now();
		else
			sched_yield();
		t = rt_now();
	}
}

llmp_status rt_tx_wait(llmp_comm *comm, const char *op, rt_req *reqs, size_t n)
{
	llmp_ctx *ctx = comm->ctx;
	/*
	 * The clock is read only once the wait is stuck (the first look): a
	 * wait that ends within IDLE_POLLS reads none, which pays for the
	 * call's two reads in metrics.h. The timeout runs from then. A wait
	 * still stuck at the second look is timed (metrics.h), from the first:
	 * so one that ends soon after the first costs no extra clock read.
	 */
	double deadline = 0, next_liveness_check = 0, stuck_since = 0;
	unsigned idle = 0, looks = 0;
	uint32_t last = UINT32_MAX;
	bool dozing = false;

	for (;;) {
		unsigned progressed = ucp_worker_progress(ctx->worker);
		size_t bad = 0;
		ucs_status_t why = UCS_OK;
		int state = poll_requests(reqs, n, &bad, &why, &last);
		if (state == 0) {
			if (looks > 1) /* metrics.h: a wait for the peer that completed it */
				rt_metrics_waited(&comm->metrics, last, rt_now() - stuck_since);
			return LLMP_OK;
		}
		if (state < 0) {
			struct rt_peer *p = &ctx->peers[rt_world_rank(comm, reqs[bad].comm_peer)];
			enum rt_failure kind = why == UCS_ERR_MESSAGE_TRUNCATED ? RT_FAILED_LENGTH
					       : p->failed                      ? RT_FAILED_PEER
										: RT_FAILED_UCX;
			return fail(comm, op, reqs, n, kind, &reqs[bad], ucs_status_string(why));
		}
		if (rt_report_arrived(comm))
			return fail(comm, op, reqs, n, RT_FAILED_REPORTED, NULL, NULL);
		if (progressed)
			idle = 0;
		/*
		 * The clock and the pids are looked at only now and then, when
		 * idle; at every idle poll once the wait sleeps between polls.
		 */
		bool look = !progressed && (++idle % IDLE_POLLS == 0 || dozing);
		double t = look ? rt_now() : 0;
		looks += look;
		if (look && stuck_since == 0) {
			stuck_since = t;
			deadline = t + ctx->timeout_s - rt_failure_grace(ctx);
			next_liveness_check = t + RT_LIVENESS_PERIOD_S;
		}
		bool check_pids = look && t > next_liveness_check;
		if (check_pids)
			next_liveness_check = t + RT_LIVENESS_PERIOD_S;
		size_t gone = find_failed_peer(comm, reqs, n, check_pids);
		if (gone < n) {
			/* Each request is given one drain: after it, its peer's failure stands. */
			if (reqs[gone].drained)
				return fail(comm, op, reqs, n, RT_FAILED_PEER, &reqs[gone], NULL);
			drain_worker(ctx);
			for (size_t i = gone; i < n; i++)
				if (reqs[i].ucx && ctx->peers[rt_world_rank(comm, reqs[i].comm_peer)].failed)
					reqs[i].drained = true;
			continue;
		}
		if (!look)
			continue;
		if (t > deadline) {
			for (size_t i = 0; i < n; i++)
				if (reqs[i].ucx)
					return fail(comm, op, reqs, n, RT_FAILED_TIMEOUT, &reqs[i], NULL);
		}
		/* More ranks than cores is common in tests: let the others run (idle.h). */
		dozing = rt_idle_sleep_ns(t - stuck_since) > 0;
		rt_idle(t - stuck_since);
	}
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport.h - point-to-point messages between members of a communicator,
 * over UCX's tag API.
 *
 * One UCX worker per context; an endpoint to a peer is made the first time
 * a communicator talks to it (its address comes from the PMIx exchange of
 * init), so a rank only ever connects to the members of its own groups.
 *
 * Every wait has the context's timeout. A wait fails, naming the peer, when
 * that peer does not answer in time, when UCX reports it gone, or when
 * another member reports a failure; the communicator is then broken and the
 * other reachable members are told, so nobody is left waiting.
 */
#ifndef LLMP_TRANSPORT_H
#define LLMP_TRANSPORT_H

#include "rt.h"

/*
 * Tags: | kind:5 | p2p:1 | sequence:34 | source comm rank:24 |
 * The kind tells the communicator (a rank belongs to one group of each
 * kind); the sequence tells the operation, so a late message of one
 * operation never matches another; the source tells the sender, since all
 * traffic arrives on one worker. UCX keeps messages from one sender with
 * one tag in order, which the algorithms rely on within an operation.
 */
#define RT_TAG_SRC_BITS 24
#define RT_TAG_SEQ_BITS 34
#define RT_TAG_SEQ_MASK ((UINT64_C(1) << RT_TAG_SEQ_BITS) - 1)
#define RT_TAG_P2P (UINT64_C(1) << (RT_TAG_SRC_BITS + RT_TAG_SEQ_BITS))
#define RT_TAG_ABORT_SEQ RT_TAG_SEQ_MASK /* p2p sequence reserved for failure reports */

static inline uint64_t rt_tag(int kind, bool p2p, uint64_t seq, uint32_t src)
{
	return ((uint64_t)kind << (RT_TAG_SRC_BITS + RT_TAG_SEQ_BITS + 1)) | (p2p ? RT_TAG_P2P : 0) |
	       ((seq & RT_TAG_SEQ_MASK) << RT_TAG_SRC_BITS) | src;
}

/* One outstanding send or receive. */
typedef struct rt_req {
	void *ucx;          /* UCX request; NULL once complete */
	uint32_t comm_peer; /* the other member, by comm rank */
	bool recv;
	bool drained; /* its peer failed, and the worker was drained since */
	size_t bytes; /* expected length of a receive */
	ucp_tag_recv_info_t info;
} rt_req;

/* Open UCX (context, worker) and give the worker address to publish. */
llmp_status rt_tx_init(llmp_ctx *ctx, void **addr, size_t *addrlen);
void rt_tx_release_address(llmp_ctx *ctx, void *addr);
/* Close endpoints (flushing what was sent, bounded by the timeout) and UCX. */
void rt_tx_fini(llmp_ctx *ctx);

llmp_status rt_tx_isend(llmp_comm *comm, uint32_t peer, uint64_t tag, const void *buf, size_t bytes,
			rt_req *req);
llmp_status rt_tx_irecv(llmp_comm *comm, uint32_t peer, uint64_t tag, void *buf, size_t bytes, rt_req *req);

/*
 * Wait for all of reqs. On failure, every request is cancelled or released,
 * comm is marked broken, the other members are told, and the message names
 * the peer and what `op` was doing.
 */
llmp_status rt_tx_wait(llmp_comm *comm, const char *op, rt_req *reqs, size_t n);

/* Cancel what is pending; UCX releases each request once it has let go of it. */
void rt_tx_drop(llmp_ctx *ctx, rt_req *reqs, size_t n);

/*
 * Cancel one pending request and hand it back to UCX, which frees it once
 * it has let go of it; req->ucx is NULL after. Nothing is waited for.
 */
void rt_tx_cancel(llmp_ctx *ctx, rt_req *req);

/*
 * One round of the worker's progress: what arrived is matched, sends take
 * their next step. For layers with a wait loop of their own (coll/shm.c,
 * ckpt/ckpt_read.c), which must keep UCX moving while they wait.
 */
void rt_tx_progress(llmp_ctx *ctx);

/* Whether the transport can move CUDA device memory (UCX built with CUDA). */
bool rt_tx_moves_cuda(const llmp_ctx *ctx);

/* The endpoint to a member, made on first use from its published address. */
llmp_status rt_tx_peer_ep(llmp_comm *comm, uint32_t peer, ucp_ep_h *ep);

/* Progress until a UCX request completes or deadline passes, then release it. */
void rt_tx_wait_request(llmp_ctx *ctx, void *req, double deadline);

/* How often a stuck wait looks whether its peers on this machine still run. */
#define RT_LIVENESS_PERIOD_S 0.1

/*
 * Whether member's process, on this machine, is gone (liveness.h); if so
 * the peer is marked failed, with why. False for a peer elsewhere.
 */
bool rt_member_gone(llmp_comm *comm, uint32_t member);

/*
 * Before a pending request fails because its peer failed or left, the worker
 * is progressed until quiet for this long (at most RT_DRAIN_MAX_S): what the
 * peer sent before it left is taken in first (transport.c, drain_worker).
 */
#define RT_DRAIN_QUIET_S 0.02
#define RT_DRAIN_MAX_S 0.25

/* How long failure handling spends telling others and cancelling. */
#define RT_NOTIFY_MAX_S 0.5

#endif /* LLMP_TRANSPORT_H */

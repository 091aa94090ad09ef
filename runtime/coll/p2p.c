/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p2p.c - send and receive between two members (pipeline stages).
 *
 * Each ordered pair of members numbers its messages, and the number is
 * part of the tag: a receive matches exactly the message sent in the same
 * position, whatever else is in flight between the two.
 */
#include <stdlib.h>

#include "coll.h"

static llmp_status check_peer(llmp_comm *comm, const char *op, uint32_t peer)
{
	if (peer >= comm->size)
		return rt_fail(comm->ctx, LLMP_ERR_RANGE, "%s on %s: peer %u, but it has %u members", op,
			       llmp_comm_name(comm), peer, comm->size);
	if (peer == comm->rank)
		return rt_fail(comm->ctx, LLMP_ERR_ARG, "%s on %s: peer %u is this rank", op,
			       llmp_comm_name(comm), peer);
	if (!comm->p2p_sent) {
		comm->p2p_sent = calloc(comm->size, sizeof *comm->p2p_sent);
		comm->p2p_recvd = calloc(comm->size, sizeof *comm->p2p_recvd);
		if (!comm->p2p_sent || !comm->p2p_recvd) {
			free(comm->p2p_sent);
			free(comm->p2p_recvd);
			comm->p2p_sent = comm->p2p_recvd = NULL;
			return rt_fail(comm->ctx, LLMP_ERR_NOMEM, "%s: message counters", op);
		}
	}
	return LLMP_OK;
}

/* Check a p2p call; *bytes gets its size. */
static llmp_status begin(llmp_comm *comm, const char *op, const void *buf, size_t count, llmp_dtype dtype,
			 uint32_t peer, size_t *bytes)
{
	if (!comm)
		return LLMP_ERR_ARG;
	rt_call call;
	llmp_status st = rt_check_args(&call, comm, op, buf, buf, count, dtype, LLMP_SUM, false);
	if (st != LLMP_OK)
		return st;
	if ((st = check_peer(comm, op, peer)) != LLMP_OK)
		return st;
	*bytes = count * call.esize;
	return LLMP_OK;
}

static uint64_t send_tag(llmp_comm *comm, uint32_t peer)
{
	return rt_tag(comm->kind, true, comm->p2p_sent[peer]++, comm->rank);
}

static uint64_t recv_tag(llmp_comm *comm, uint32_t peer)
{
	return rt_tag(comm->kind, true, comm->p2p_recvd[peer]++, peer);
}

static llmp_status send_call(llmp_comm *comm, const void *buf, size_t count, llmp_dtype dtype, uint32_t peer)
{
	size_t bytes;
	rt_req req;
	llmp_status st = begin(comm, "send", buf, count, dtype, peer, &bytes);
	if (st == LLMP_OK)
		st = rt_tx_isend(comm, peer, send_tag(comm, peer), buf, bytes, &req);
	if (st == LLMP_OK)
		st = rt_tx_wait(comm, "send", &req, 1);
	return st;
}

llmp_status llmp_send(llmp_comm *comm, const void *buf, size_t count, llmp_dtype dtype, uint32_t peer)
{
	if (!comm)
		return LLMP_ERR_ARG;
	rt_metrics_begin(&comm->metrics, count);
	llmp_status st = send_call(comm, buf, count, dtype, peer);
	rt_metrics_end(&comm->metrics);
	return st;
}

static llmp_status recv_call(llmp_comm *comm, void *buf, size_t count, llmp_dtype dtype, uint32_t peer)
{
	size_t bytes;
	rt_req req;
	llmp_status st = begin(comm, "recv", buf, count, dtype, peer, &bytes);
	if (st == LLMP_OK)
		st = rt_tx_irecv(comm, peer, recv_tag(comm, peer), buf, bytes, &req);
	if (st == LLMP_OK)
		st = rt_tx_wait(comm, "recv", &req, 1);
	return st;
}

llmp_status llmp_recv(llmp_comm *comm, void *buf, size_t count, llmp_dtype dtype, uint32_t peer)
{
	if (!comm)
		return LLMP_ERR_ARG;
	rt_metrics_begin(&comm->metrics, count);
	llmp_status st = recv_call(comm, buf, count, dtype, peer);
	rt_metrics_end(&comm->metrics);
	return st;
}

static llmp_status sendrecv_call(llmp_comm *comm, const void *sendbuf, size_t sendcount, uint32_t dst,
				 void *recvbuf, size_t recvcount, uint32_t src, llmp_dtype dtype)
{
	size_t sbytes, rbytes;
	rt_req reqs[2];
	llmp_status st = begin(comm, "sendrecv", sendbuf, sendcount, dtype, dst, &sbytes);
	if (st == LLMP_OK)
		st = begin(comm, "sendrecv", recvbuf, recvcount, dtype, src, &rbytes);
	if (st == LLMP_OK)
		st = rt_tx_irecv(comm, src, recv_tag(comm, src), recvbuf, rbytes, &reqs[0]);
	if (st == LLMP_OK) {
		st = rt_tx_isend(comm, dst, send_tag(comm, dst), sendbuf, sbytes, &reqs[1]);
		if (st != LLMP_OK) {
			rt_tx_cancel(comm->ctx, &reqs[0]);
			return st;
		}
		st = rt_tx_wait(comm, "sendrecv", reqs, 2);
	}
	return st;
}

llmp_status llmp_sendrecv(llmp_comm *comm, const void *sendbuf, size_t sendcount, uint32_t dst, void *recvbuf,
			  size_t recvcount, uint32_t src, llmp_dtype dtype)
{
	if (!comm)
		return LLMP_ERR_ARG;
	rt_metrics_begin(&comm->metrics, sendcount > recvcount ? sendcount : recvcount);
	llmp_status st = sendrecv_call(comm, sendbuf, sendcount, dst, recvbuf, recvcount, src, dtype);
	rt_metrics_end(&comm->metrics);
	return st;
}

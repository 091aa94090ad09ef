/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_device.h - the device path: NCCL communicators for the groups a
 * rank belongs to (doc/llmp.3, DEVICE PATH).
 *
 * LLMP_DEVICE chooses it at llmp_init: "auto" (the default) when libllmp
 * was built with nccl.h, the process sees a GPU and NCCL loads; "nccl"
 * always (an error at init when NCCL cannot be loaded); "off" never. With
 * it, llmp_init creates NCCL's unique id of every group this rank is the
 * lowest member of and publishes it in its one PMIx fence: no fence per
 * group. llmp_device_connect then makes the communicators.
 */
#ifndef LLMP_DEVICE_H
#define LLMP_DEVICE_H

#include <stdbool.h>

#include "llmp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct llmp_device_info {
	bool enabled;         /* device buffers go through NCCL */
	char why_not[256];    /* when not enabled: why ("LLMP_DEVICE=off", "no GPU", NCCL's load error) */
	int nccl_version;     /* e.g. 22809; 0 when NCCL is not loaded */
	unsigned groups;      /* distinct groups (member sets) this rank is in, the world included */
	unsigned ids_created; /* unique ids this rank created: the groups it is the lowest member of */
	unsigned ids_fetched; /* ids read from other ranks after the fence */
	unsigned comms;       /* NCCL communicators made by llmp_device_connect */
	double connect_seconds;
	/*
	 * Whether the UCX in use moves CUDA memory (ucp_context_query): what
	 * GPUDirect RDMA between nodes and cuda_ipc inside one would need. Debian's
	 * UCX does not; a site's UCX built with CUDA does (configure --with-ucx).
	 */
	bool ucx_cuda;
	/*
	 * After llmp_device_connect: whether every operation has a deadline,
	 * the context's timeout (LLMP_TIMEOUT), kept with a CUDA event recorded
	 * after it on its stream; that needs the CUDA driver. When not: why,
	 * and failures are found through NCCL's errors and the members'
	 * processes only.
	 */
	bool deadline;
	char deadline_why[256];
} llmp_device_info;

llmp_status llmp_device_get_info(const llmp_ctx *ctx, llmp_device_info *info);

/*
 * Make the NCCL communicator of every group this rank belongs to, on the
 * CUDA device current in the calling thread, all at once and non-blocking,
 * each named "llmp.<group>.<number>" (NCCL's commName). Collective over the
 * job: every rank calls it. A communicator not ready within the context's
 * timeout is aborted and the call fails with LLMP_ERR_TIMEOUT naming its
 * group; NCCL's own failure (no GPU, no driver) is LLMP_ERR_DEVICE with
 * NCCL's reason. Calling it again after success does nothing.
 */
llmp_status llmp_device_connect(llmp_ctx *ctx);

/*
 * Collectives on device buffers, as llmp.h's on host buffers (counts in
 * elements, per member for reduce-scatter and allgather; root a member's
 * place in comm), through NCCL on stream (a cudaStream_t; NULL: the
 * default stream). They enqueue and return: the result is there when the
 * stream gets to it. Every member calls them in the same order. The
 * arithmetic is NCCL's (16-bit floats rounded at each step of its
 * algorithm, not once as on the host).
 *
 * A communicator that fails later, a member whose process on this machine
 * dies, or an operation the stream has not passed within the context's
 * timeout (a member stuck or missing) is found by the context's watchdog
 * thread: every communicator of the rank is aborted (work waiting on the
 * stream ends) and every later call returns LLMP_ERR_DEVICE, LLMP_ERR_PEER
 * or LLMP_ERR_TIMEOUT naming the group, the rank or the operation. The
 * first call on a stream needs the CUDA context of llmp_device_connect
 * current in its thread (the events of the deadline are made in it).
 *
 * Each operation's GPU time, between a timed CUDA event before it and one
 * after it, is added to comm's time in calls (llmp_comm_get_stats).
 * LLMP_DEVICE_TIMING, read at llmp_init, chooses which are timed: "on" (the
 * default) every one, "sampled" those of 16384 elements or more and a
 * random 1 in 64 of the smaller ones, counted 64 times, "off" none. Small
 * calls cost the host least with "off" or "sampled": an operation not timed
 * gets one event without timing after it, its deadline's, and none before.
 */
llmp_status llmp_device_allreduce(llmp_comm *comm, const void *send, void *recv, size_t count,
				  llmp_dtype dtype, llmp_op op, void *stream);
llmp_status llmp_device_reduce_scatter(llmp_comm *comm, const void *send, void *recv, size_t count,
				       llmp_dtype dtype, llmp_op op, void *stream);
llmp_status llmp_device_allgather(llmp_comm *comm, const void *send, void *recv, size_t count,
				  llmp_dtype dtype, void *stream);
llmp_status llmp_device_broadcast(llmp_comm *comm, const void *send, void *recv, size_t count,
				  llmp_dtype dtype, uint32_t root, void *stream);

/*
 * Pipeline transfers of device buffers: NCCL's send and receive over the
 * communicator's group (peer: a member's place in comm), enqueued on
 * stream. The calls between llmp_device_group_start and _end form one NCCL
 * group, started together: a schedule step's sends and receives, which then
 * cannot deadlock on their order. NCCL connects to a peer in the first
 * group that talks to it: the first step is slower. llmp_device_sendrecv is
 * one send and one receive in a group of their own.
 */
llmp_status llmp_device_group_start(llmp_ctx *ctx);
llmp_status llmp_device_group_end(llmp_ctx *ctx);
llmp_status llmp_device_send(llmp_comm *comm, const void *buf, size_t count, llmp_dtype dtype, uint32_t peer,
			     void *stream);
llmp_status llmp_device_recv(llmp_comm *comm, void *buf, size_t count, llmp_dtype dtype, uint32_t peer,
			     void *stream);
llmp_status llmp_device_sendrecv(llmp_comm *comm, const void *sendbuf, size_t sendcount, uint32_t dst,
				 void *recvbuf, size_t recvcount, uint32_t src, llmp_dtype dtype,
				 void *stream);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_DEVICE_H */

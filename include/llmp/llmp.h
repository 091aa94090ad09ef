/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp.h - libllmp, the runtime a training program links.
 *
 * A context (llmp_ctx) is one process's membership in a job: it learns its
 * rank, the world and the 4D layout from PMIx and the plugin's environment,
 * publishes its transport address, and joins the rest of the job with one
 * collecting PMIx fence. Communicators (llmp_comm) are the rank's own groups
 * of the layout (tp, pp, dp, ... as Megatron-Core names them) plus the world;
 * each is made on first use, from the layout alone, without any message.
 *
 * Every call returns an llmp_status; llmp_strerror() names the kind of
 * failure and llmp_errmsg() the culprit (which rank, which argument, which
 * group). Nothing here calls abort() or exit().
 *
 * Threads: llmp_strerror() and the llmp_dtype/llmp_op helpers are safe from
 * any thread. Every other call on a context, or on a communicator of it,
 * must be serialised by the caller (one thread at a time, any thread), as
 * MPI_THREAD_SERIALIZED. A process has one context at a time: init
 * publishes under fixed PMIx keys. llmp_init is collective over the job
 * (every rank calls it); after llmp_finalize a process may init again,
 * together with every other rank.
 *
 * Buffers: every data argument may in principle be host or device memory;
 * the runtime asks the CUDA driver (only if the process has loaded it) what
 * a pointer is. This version moves host memory only and returns
 * LLMP_ERR_UNSUPPORTED for device memory; NCCL and GPUDirect RDMA come
 * behind the same calls.
 */
#ifndef LLMP_H
#define LLMP_H

#include <stddef.h>
#include <stdint.h>

#include "llmp_dtype.h"
#include "llmp_plan.h"
#include "llmp_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct llmp_ctx llmp_ctx;
typedef struct llmp_comm llmp_comm;

/* --------------------------------------------------------------- version */

/* The version of these headers: major * 10000 + minor * 100 + patch. */
#define LLMP_VERSION_MAJOR 0
#define LLMP_VERSION_MINOR 1
#define LLMP_VERSION_PATCH 0
#define LLMP_VERSION (LLMP_VERSION_MAJOR * 10000 + LLMP_VERSION_MINOR * 100 + LLMP_VERSION_PATCH)

/*
 * The LLMP_VERSION of the library loaded, which may differ from the headers
 * the program was built with (doc/abi.md says what stays compatible).
 * Safe from any thread, before llmp_init.
 */
unsigned llmp_version(void);

/* ------------------------------------------------------------------ init */

typedef struct llmp_init_opts {
	/*
	 * sizeof(llmp_init_opts) as the program was built (llmp_init_opts_default
	 * sets it), so that fields can be appended (doc/abi.md). 0: this
	 * first version's size.
	 */
	size_t size;
	/*
	 * The layout, in the --llm-parallel grammar. NULL: the plugin's
	 * LLMP_PARALLEL from the environment, else every size 1 (dp = world).
	 * Given while the plugin's LLMP_PARALLEL is set, the two must agree.
	 */
	const char *spec;
	/*
	 * Seconds any one operation may wait for a peer before it fails with
	 * LLMP_ERR_TIMEOUT naming that peer. 0: LLMP_TIMEOUT from the
	 * environment, else 300.
	 */
	double timeout_s;
	/*
	 * Message size in bytes from which allreduce uses the ring
	 * (reduce-scatter + allgather) rather than recursive doubling.
	 * 0: LLMP_RING_THRESHOLD from the environment, else 64 KiB.
	 */
	size_t ring_threshold;
	/*
	 * Message size in bytes from which a collective on a communicator
	 * whose members all run on this machine goes through a shared-memory
	 * segment rather than UCX (allreduce, reduce_scatter and allgather
	 * count their whole buffer; broadcast its message). SIZE_MAX: never.
	 * 0: LLMP_SHM_THRESHOLD from the environment (bytes, or "off"), else
	 * 8 KiB.
	 */
	size_t shm_threshold;
} llmp_init_opts;

/* Fill opts with the defaults above (all zero / NULL) and its size. */
void llmp_init_opts_default(llmp_init_opts *opts);

/*
 * Join the job. opts may be NULL for the defaults. Under srun --mpi=pmix,
 * prterun or mpirun the launcher's PMIx server gives rank and world; with no
 * launcher the process is a PMIx singleton, rank 0 of a world of 1.
 * On failure *ctx is still set when it could be allocated, so that
 * llmp_errmsg(*ctx) says why; free it with llmp_finalize().
 */
llmp_status llmp_init(const llmp_init_opts *opts, llmp_ctx **ctx);

/*
 * Leave the job and free the context and its communicators. Not
 * collective on the host path: a rank may leave while others still run, as
 * long as none of them still waits on it. Once llmp_device_connect has
 * succeeded (and unless the device path failed since), it waits, up to the
 * timeout, for every rank to reach llmp_finalize: the device watchdog of a
 * rank still at work takes a neighbour whose process is gone for a dead
 * one. NULL is accepted.
 */
llmp_status llmp_finalize(llmp_ctx *ctx);

/* Why the last failed call on ctx failed: names the culprit. Never NULL. */
const char *llmp_errmsg(const llmp_ctx *ctx);

uint32_t llmp_rank(const llmp_ctx *ctx); /* rank in the world */
uint32_t llmp_world_size(const llmp_ctx *ctx);
uint32_t llmp_local_rank(const llmp_ctx *ctx); /* rank among the node's ranks */
uint32_t llmp_local_size(const llmp_ctx *ctx);
const llmp_plan *llmp_layout(const llmp_ctx *ctx); /* owned by ctx */

/* What init and the communicators cost; for reports and tests. */
typedef struct llmp_stats {
	unsigned init_fences; /* PMIx fences init used (a constant: 1) */
	unsigned comms;       /* communicators made so far */
	unsigned endpoints;   /* UCX endpoints opened so far (to distinct peers) */
	unsigned shm_comms;   /* communicators with a shared-memory segment */
	double init_seconds;  /* wall time of llmp_init */
} llmp_stats;
llmp_status llmp_get_stats(const llmp_ctx *ctx, llmp_stats *stats);

/* --------------------------------------------------------- communicators */

/*
 * The rank's group of this kind. A middle pipeline stage is in no
 * embedding group: LLMP_ERR_RANGE and *comm = NULL. The communicator
 * belongs to ctx; repeated calls return the same one.
 */
llmp_status llmp_comm_get(llmp_ctx *ctx, enum llmp_group group, llmp_comm **comm);
/* Every rank of the job. */
llmp_status llmp_comm_world(llmp_ctx *ctx, llmp_comm **comm);

uint32_t llmp_comm_size(const llmp_comm *comm);
uint32_t llmp_comm_rank(const llmp_comm *comm);
/* World rank of the member at comm_rank; UINT32_MAX if there is none. */
uint32_t llmp_comm_world_rank(const llmp_comm *comm, uint32_t comm_rank);
/* "tp", ..., "position-embedding", or "world". */
const char *llmp_comm_name(const llmp_comm *comm);

/*
 * What a communicator's calls cost this rank, counted since it was made
 * (doc/llmp.3, doc/metrics-json.md). Bytes are those this rank handed to
 * the transport or wrote into a shared-memory slot for the others (sent)
 * and those it took from them (received), as the algorithm in use moves
 * them. A wait is timed once it has lasted a few dozen polls (about a
 * microsecond) and is blamed on the member that completed it last: on one
 * machine the member that arrived last; over UCX the direct peer, which is
 * the slow member or one waiting for it. The time inside calls is exact
 * for calls of 16,384 elements or more and for calls that waited; for
 * smaller ones a random 1 in 64 is timed and counted 64 times (two clock
 * reads on every call would cost 10% of an 8-byte allreduce).
 */
typedef struct llmp_comm_stats {
	uint64_t ops; /* calls: collectives, barriers, sends, receives */
	uint64_t bytes_sent;
	uint64_t bytes_received;
	/* Time inside those calls: small calls that did not wait estimated from a sample (above). */
	double seconds;
	double wait_seconds; /* of which waiting for another member */
	uint64_t waits;      /* calls that waited */
	/* The member (comm rank) waited for longest in all; UINT32_MAX: none yet. */
	uint32_t last_member;
	uint64_t last_member_times;      /* calls that waited for it last */
	double last_member_wait_seconds; /* and how long they waited */
} llmp_comm_stats;
llmp_status llmp_comm_get_stats(const llmp_comm *comm, llmp_comm_stats *stats);

/* For one member (comm rank): the calls that waited for it last, and their waits. */
llmp_status llmp_comm_member_waits(const llmp_comm *comm, uint32_t member, uint64_t *times, double *seconds);

/* ----------------------------------------------------------- collectives */
/*
 * Blocking, and collective over the communicator: every member calls the
 * same collectives in the same order with the same count, dtype, op and
 * root. Counts are in elements. In place when the send buffer is the
 * receive buffer (allreduce, broadcast) or the rank's own block of it
 * (allgather: sendbuf == recvbuf + rank * count; reduce-scatter:
 * recvbuf == sendbuf + rank * count).
 *
 * A failure (timeout, dead peer) is reported on every member that can
 * still be reached, naming the peer; the communicator is then unusable
 * (LLMP_ERR_STATE), because members no longer agree on what was sent.
 */

/* recvbuf[i] = op over members of sendbuf[i], for i < count. */
llmp_status llmp_allreduce(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			   llmp_dtype dtype, llmp_op op);

/* sendbuf holds size * count elements; member r gets block r, reduced. */
llmp_status llmp_reduce_scatter(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
				llmp_dtype dtype, llmp_op op);

/* recvbuf (size * count elements) gets member r's sendbuf as block r. */
llmp_status llmp_allgather(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			   llmp_dtype dtype);

/* recvbuf on every member gets root's sendbuf (sendbuf is read on root only). */
llmp_status llmp_broadcast(llmp_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			   llmp_dtype dtype, uint32_t root);

/* Returns once every member has entered it. */
llmp_status llmp_barrier(llmp_comm *comm);

/* --------------------------------------------------- point to point */
/*
 * Between two members of a communicator, by comm rank (pipeline stages
 * use the pp communicator). Messages between the same pair arrive in the
 * order sent; counts and dtypes must match on both sides. A blocking send
 * of a large message waits for the receive: two ranks that exchange use
 * llmp_sendrecv.
 */
llmp_status llmp_send(llmp_comm *comm, const void *buf, size_t count, llmp_dtype dtype, uint32_t peer);
llmp_status llmp_recv(llmp_comm *comm, void *buf, size_t count, llmp_dtype dtype, uint32_t peer);
/* Send to dst and receive from src at once (dst and src may be the same). */
llmp_status llmp_sendrecv(llmp_comm *comm, const void *sendbuf, size_t sendcount, uint32_t dst, void *recvbuf,
			  size_t recvcount, uint32_t src, llmp_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_H */

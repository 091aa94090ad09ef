/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt.h - the runtime's internal structures, shared by its files.
 *
 * A context owns the wire-up (PMIx), the transport (one UCX worker, one
 * endpoint per peer actually talked to) and the communicators made so far.
 * Nothing here is visible to programs: llmp.h is the API.
 */
#ifndef LLMP_RT_H
#define LLMP_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <pmix.h>
#include <ucp/api/ucp.h>

#include <llmp/llmp.h>

#include "log.h"
#include "memtype.h"
#include "metrics.h"

#define RT_DEFAULT_TIMEOUT_S 300.0
#define RT_DEFAULT_RING_THRESHOLD ((size_t)64 << 10)
#define RT_DEFAULT_SHM_THRESHOLD ((size_t)8 << 10)
#define RT_DEFAULT_SHM_CHUNK ((size_t)256 << 10)

/* The world communicator's kind, after the planner's group kinds. */
#define RT_COMM_WORLD LLMP_NGROUPS
#define RT_NCOMMS (LLMP_NGROUPS + 1)

/* What the context knows about one peer it has talked to. */
struct rt_peer {
	ucp_ep_h ep;  /* NULL until first needed */
	bool failed;  /* UCX reported the peer gone, or it timed out */
	pid_t pid;    /* on this machine: its process, watched while waiting; else 0 */
	char why[96]; /* how it failed, for messages */
};

struct llmp_comm {
	llmp_ctx *ctx;
	int kind; /* enum llmp_group, or RT_COMM_WORLD */
	uint32_t size;
	uint32_t rank;      /* this rank's place in members */
	uint32_t *members;  /* world ranks; NULL for the world (identity) */
	uint64_t seq;       /* collectives started on this communicator */
	uint64_t *p2p_sent; /* per peer: messages sent (allocated on first p2p) */
	uint64_t *p2p_recvd;
	bool broken;        /* a failure left members out of step */
	bool shm_tried;     /* shm.h: a segment was tried; NULL shm then means UCX for good */
	struct rt_shm *shm; /* shm.h: the segment, when every member is on this machine */
	/* Set with shm by coll/shm.c, which alone knows how to unmap it; called by rt_comm_free. */
	void (*shm_free)(struct llmp_comm *comm);
	void *scratch; /* grows to the largest temporary an algorithm needed */
	size_t scratch_bytes;
	/* Failure reports (failure.c): a receive always posted for the next one. */
	void *report_req;
	uint64_t report_in[2];  /* culprit world rank, reporter world rank */
	uint64_t report_out[2]; /* the same, when this rank reports */
	uint32_t (*reports)[2]; /* received so far: {reporter, culprit} */
	uint32_t nreports;
	char failure[LLMP_MSG_MAX]; /* why the communicator broke */
	struct rt_metrics metrics;  /* metrics.h: calls, bytes, time, waits (comm.c) */
};

struct llmp_ctx {
	char errmsg[LLMP_MSG_MAX];
	uint32_t rank, world, local_rank, local_size;
	llmp_plan *plan;
	char layout[LLMP_SPEC_MAX_LEN + 32]; /* canonical text, compared across ranks */
	char placement[48];                  /* LLMP_PLACEMENT, compared with it; "block" without */
	double timeout_s;
	size_t ring_threshold;
	size_t shm_threshold; /* SIZE_MAX: never */
	size_t shm_chunk;
	struct rt_log_conf log; /* log.h: LLMP_DEBUG, what rt_log prints */

	bool owns_process; /* this is the process's one context (runtime/init/init.c) */

	/* wire-up */
	bool pmix_up;
	pmix_proc_t me;
	/* LLMP_PLACEMENT=topology:...: ranks are the plugin's, not PMIx's (wireup.c) */
	bool renumbered;
	uint32_t *proc_of_rank; /* PMIx rank of each rank; NULL: the same */

	/* transport */
	ucp_context_h ucp;
	ucp_worker_h worker;
	struct rt_peer *peers; /* world entries, zeroed until used */
	char machine_id[96];   /* liveness.h: peers with the same one share this kernel */
	/* The host of the member the last failure blamed (failure.c), as that member
	 * published it (Slurm's node name); "" when none was blamed or it is unknown. */
	char failed_host[64];

	llmp_comm *comms[RT_NCOMMS];
	char *slots; /* where pipelined segments land (coll.c) */
	llmp_stats stats;

	/* The device path (runtime/device/): NULL when off, and why in device_why. */
	struct rt_device *device;
	char device_why[256];

	/* CUDA driver's pointer query, if the process has loaded the driver (memtype.h). */
	rt_pointer_attr_fn cu_pointer_get_attribute;
};

/* rt.c: record why a call failed (printf-style) and return status. */
llmp_status rt_fail(llmp_ctx *ctx, llmp_status status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Seconds on a monotonic clock. */
double rt_now(void);

/* "rank 5 (tp rank 1)": a member named both ways, for messages. */
const char *rt_member_name(const llmp_comm *comm, uint32_t comm_rank, char *buf, size_t len);

/* comm.c */
uint32_t rt_world_rank(const llmp_comm *comm, uint32_t comm_rank);
/* The comm rank of a world rank; UINT32_MAX if it is not a member. */
uint32_t rt_comm_rank_of(const llmp_comm *comm, uint32_t world_rank);
void rt_comm_free(llmp_comm *comm);
/* Scratch space of at least bytes, kept for the next call. */
llmp_status rt_scratch(llmp_comm *comm, size_t bytes, void **buf);

/* memtype.c: LLMP_OK for host memory, LLMP_ERR_UNSUPPORTED (message set) for device memory. */
void rt_memtype_init(llmp_ctx *ctx);
llmp_status rt_check_host(llmp_ctx *ctx, const void *buf, const char *what);

#endif /* LLMP_RT_H */

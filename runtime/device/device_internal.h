/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device_internal.h - the device path's state, shared by its files:
 * device.c (the ids, the communicators), device_coll.c (collectives on
 * device buffers), device_p2p.c, watchdog.c (failures found while no call
 * waits) and inflight.c (each operation's deadline and GPU time).
 */
#ifndef LLMP_RT_DEVICE_INTERNAL_H
#define LLMP_RT_DEVICE_INTERNAL_H

#include "config.h" /* LLMP_HAVE_NCCL */

#include <pthread.h>
#include <stdio.h>

#include "device.h"

/*
 * How device operations are timed (LLMP_DEVICE_TIMING, inflight.c): every
 * one (on, the default), a random 1 in RT_METRICS_SAMPLE of the small ones
 * and every large one (sampled), or none (off). Every operation keeps its
 * deadline in all three.
 */
enum rt_device_timing { RT_TIMING_ON, RT_TIMING_SAMPLED, RT_TIMING_OFF };

#ifdef LLMP_HAVE_NCCL
#include "cuda_api.h"
#include "nccl_api.h"

#define KINDS (LLMP_NGROUPS + 1) /* every group kind, then the world */

struct rt_device_group {
	bool member;     /* this rank is in a group of this kind of two or more (or the world of one) */
	int same_as;     /* an earlier kind with the same members here, else -1 */
	uint32_t root;   /* the lowest member, which makes the id */
	uint32_t number; /* the group's number among its kind's */
	uint32_t size;   /* members */
	uint32_t rank;   /* this rank's place among them */
	uint32_t *members;
	ncclUniqueId id;
	ncclComm_t comm;
};

/*
 * The events around an operation: start recorded before it on its stream,
 * end after it. An operation that is not timed has an end alone, made
 * without timing (start NULL): what its deadline needs.
 */
struct rt_event_pair {
	rt_cu_event start, end;
};

/* An operation enqueued on a stream, and its events (inflight.c). */
struct rt_inflight_op {
	struct rt_event_pair ev;
	double since;     /* when it was enqueued (rt_now) */
	void *stream;     /* where: the streams run their operations in order */
	int kind;         /* its group kind */
	uint32_t weight;  /* operations its GPU time stands for: 1, or RT_METRICS_SAMPLE when sampled */
	const char *name; /* "llmp_device_allreduce" */
	llmp_comm *comm;  /* whose counters get its GPU time */
	bool done;        /* the stream has passed it (found out of order), its time counted */
	bool tracked;     /* counted in its stream's rt_stream_pending, else in untracked */
};

/* A stream with operations in the ring that it has not passed, and how many (inflight.c). */
struct rt_stream_pending {
	void *stream;
	size_t ops; /* 0: a free slot */
};

/* A stream used inside llmp_device_group_start/_end: start recorded at its first operation, end at the group's end. */
struct rt_grouped {
	void *stream;
	int kind;
	uint32_t weight;
	const char *name;
	llmp_comm *comm;
	struct rt_event_pair ev;
};
#define RT_GROUPED_STREAMS_MAX 16

/* The deadline and the GPU time per device operation (inflight.c); all under the device lock. */
struct rt_inflight {
	bool on;                      /* the CUDA driver loaded: operations have a deadline */
	enum rt_device_timing timing; /* which are timed too */
	char why[LLMP_MSG_MAX];       /* when not on: why */
	struct rt_cuda cu;            /* the driver's event calls */
	rt_cu_ctx ctx;                /* the program's context, where the events live */
	struct rt_inflight_op *ring;  /* pending, oldest first: ring[head], ... */
	size_t head, nops, cap;
	struct rt_event_pair *spare; /* timed event pairs ready for reuse (cap of them at most) */
	size_t nspare;
	rt_cu_event *spare_end; /* untimed end events ready for reuse (cap at most) */
	size_t nspare_end;
	struct rt_event_pair started; /* the operation under way: start recorded, not yet enqueued */
	llmp_comm *started_comm;      /* and its communicator */
	uint32_t started_weight;
	bool has_started;
	struct rt_grouped grouped[RT_GROUPED_STREAMS_MAX];
	size_t ngrouped;
	/* The streams of the operations not yet passed, so that a look can stop once it found each behind. */
	struct rt_stream_pending streams[RT_GROUPED_STREAMS_MAX];
	size_t nstreams;  /* slots used, free ones among them */
	size_t untracked; /* operations not passed on streams beyond the table, or CU_STREAM_PER_THREAD */
};

struct rt_device {
	struct rt_nccl nccl;
	struct rt_inflight inflight;
	enum rt_device_timing timing; /* LLMP_DEVICE_TIMING, read at llmp_init */
	int group_depth;              /* llmp_device_group_start calls not yet ended */
	double timeout_s;             /* the context's: each operation's deadline */
	struct rt_device_group g[KINDS];
	unsigned groups, ids_created, ids_fetched, comms;
	bool connected;
	double connect_seconds;
	/* The watchdog (watchdog.c): set once a communicator failed; every later call fails with it. */
	pthread_mutex_t lock;
	pthread_t watchdog;
	bool watching, stop;
	llmp_status failed;
	char why[LLMP_MSG_MAX];
	struct rt_watched *watched; /* members on this machine, by process (watchdog.c) */
	size_t nwatched;
};

static inline const char *kind_name(int k)
{
	return k == LLMP_NGROUPS ? "world" : llmp_group_name((enum llmp_group)k);
}

/* "llmp.nccl.tp": where a group's root puts its id. */
static inline void id_key(int k, char *buf, size_t len)
{
	snprintf(buf, len, "llmp.nccl.%s", kind_name(k));
}

/*
 * The rank's device state, ready for a call named `name`: NULL, with ctx's
 * message and *st, when the path is off or llmp_device_connect has not run.
 */
struct rt_device *rt_device_ready(llmp_ctx *ctx, const char *name, llmp_status *st);

/* NCCL's type for an llmp_dtype; false for none (device_coll.c). */
bool rt_nccl_type(llmp_dtype dtype, ncclDataType_t *out);

/*
 * The deadline and GPU time per operation (inflight.c), each called with
 * d->lock held but _check, which takes it. _init loads the driver (or says
 * why not); _started, just before an operation of count elements is
 * enqueued on stream, decides whether it is timed and if so records its
 * start event (inside a group: at the stream's first operation of the
 * group), and an error there enqueues nothing; _enqueued records its
 * end event and watches it (inside a group: _group_ended, per stream);
 * _abandoned takes back the start of an operation NCCL refused; _check,
 * from the watchdog, adds the GPU time of the operations the streams have
 * passed to their communicators and fails the device path for one pending
 * past timeout_s.
 */
void rt_inflight_init(struct rt_device *d);
void rt_inflight_fini(struct rt_device *d);
llmp_status rt_inflight_started(llmp_ctx *ctx, struct rt_device *d, llmp_comm *comm, const char *name,
				size_t count, void *stream);
llmp_status rt_inflight_enqueued(llmp_ctx *ctx, struct rt_device *d, const char *name, void *stream);
void rt_inflight_abandoned(struct rt_device *d);
llmp_status rt_inflight_group_ended(llmp_ctx *ctx, struct rt_device *d);
void rt_inflight_check(struct rt_device *d, double timeout_s);

/* The watchdog: started by llmp_device_connect, stopped by rt_device_fini. */
llmp_status rt_watchdog_start(llmp_ctx *ctx, struct rt_device *d);
void rt_watchdog_stop(struct rt_device *d);
/* Record a failure (the first one wins) and abort every communicator; the status recorded. */
llmp_status rt_device_fail(struct rt_device *d, llmp_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#else
/* A device call of a libllmp built without nccl.h: LLMP_ERR_UNSUPPORTED, saying so. */
llmp_status rt_device_not_built(llmp_ctx *ctx, const char *name);
#endif /* LLMP_HAVE_NCCL */

#endif /* LLMP_RT_DEVICE_INTERNAL_H */

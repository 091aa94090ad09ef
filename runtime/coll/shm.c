/* SPDX-License-Identifier: BSD-3-Clause */
/* shm.c - the shared-memory segment of a communicator on one machine, and the collectives through it. */
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/comm/failure.h"
#include "runtime/comm/idle.h"
#include "runtime/comm/liveness.h"
#include "kernels/reduce.h"
#include "runtime/comm/wireup.h"

/*
 * Rounds in flight. With two, a member may fill its slot for the next
 * round while slower members still read the last one.
 */
#define DEPTH 2
#define MAGIC UINT64_C(0x316d6873706d6c6c) /* "llmpshm1" */
/* Polls of a counter before a wait starts yielding and checking the clock. */
#define SPIN_POLLS 2048
#define LINE 64

/* The collectives that run here, as a call describes itself to the others. */
enum shm_coll { SHM_ALLREDUCE, SHM_REDUCE_SCATTER, SHM_ALLGATHER, SHM_BROADCAST };
static const char *const coll_names[] = { "allreduce", "reduce_scatter", "allgather", "broadcast" };

/*
 * What a member says about the call a round belongs to; on a call's first
 * round every member checks that all said the same. Later rounds say
 * bytes = UINT64_MAX.
 */
struct call_desc {
	uint64_t bytes; /* the call's buffer, as llmp bench counts it */
	uint32_t coll, dtype, op, root;
};

/* One member's progress, on a cache line of its own; only that member writes it. */
struct member_line {
	_Atomic uint64_t posted;  /* rounds whose chunk is in its slot */
	_Atomic uint64_t reduced; /* rounds whose slice it has reduced, in its slot */
	_Atomic uint64_t done;    /* rounds it has finished reading */
	struct call_desc call[DEPTH];
} __attribute__((aligned(LINE)));

struct header {
	uint64_t magic;
	uint64_t chunk;
	uint32_t members;
	uint32_t depth;
} __attribute__((aligned(LINE)));

struct rt_shm {
	char *base;
	size_t bytes;
	size_t chunk; /* bytes of a member's buffer per round */
	uint32_t members;
	struct member_line *lines;
	char *slots;    /* DEPTH x members x chunk */
	uint64_t round; /* rounds run on this segment so far (the same on every member) */
};

enum counter { POSTED, REDUCED, DONE };

static _Atomic uint64_t *counter_of(struct rt_shm *s, uint32_t member, enum counter c)
{
	struct member_line *l = &s->lines[member];
	return c == POSTED ? &l->posted : c == REDUCED ? &l->reduced : &l->done;
}

static char *slot_of(struct rt_shm *s, uint32_t member, uint64_t round)
{
	return s->slots + ((round % DEPTH) * s->members + member) * s->chunk;
}

/* ------------------------------------------------------------- the segment */

static size_t segment_bytes(uint32_t members, size_t chunk)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t b = sizeof(struct header) + members * sizeof(struct member_line) +
		   (size_t)DEPTH * members * chunk;
	return (b + page - 1) / page * page;
}

static struct rt_shm *map_segment(int fd, size_t bytes, uint32_t members, size_t chunk, int *err)
{
	struct rt_shm *s = calloc(1, sizeof *s);
	void *p = s ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (p == MAP_FAILED) {
		*err = s ? errno : ENOMEM;
		free(s);
		return NULL;
	}
	s->base = p;
	s->bytes = bytes;
	s->chunk = chunk;
	s->members = members;
	s->lines = (struct member_line *)(s->base + sizeof(struct header));
	s->slots = (char *)(s->lines + members);
	return s;
}

static void unmap_segment(struct rt_shm *s)
{
	if (s) {
		munmap(s->base, s->bytes);
		free(s);
	}
}

/* Member 0: a new named segment, its pages reserved (so a full /dev/shm is an error here, not a SIGBUS later). */
static struct rt_shm *create_segment(const char *name, size_t bytes, uint32_t members, size_t chunk, int *err)
{
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		*err = errno;
		return NULL;
	}
	struct rt_shm *s = NULL;
	if (ftruncate(fd, (off_t)bytes) != 0)
		*err = errno;
	else if ((*err = posix_fallocate(fd, 0, (off_t)bytes)) == 0)
		s = map_segment(fd, bytes, members, chunk, err);
	close(fd);
	if (!s) {
		shm_unlink(name);
		return NULL;
	}
	struct header *h = (struct header *)s->base;
	h->magic = MAGIC;
	h->chunk = chunk;
	h->members = members;
	h->depth = DEPTH;
	return s;
}

static struct rt_shm *attach_segment(const char *name, size_t bytes, uint32_t members, size_t chunk, int *err)
{
	int fd = shm_open(name, O_RDWR, 0);
	if (fd < 0) {
		*err = errno;
		return NULL;
	}
	struct stat st;
	struct rt_shm *s = NULL;
	if (fstat(fd, &st) != 0)
		*err = errno;
	else if ((size_t)st.st_size != bytes)
		*err = EINVAL;
	else
		s = map_segment(fd, bytes, members, chunk, err);
	close(fd);
	const struct header *h = s ? (const struct header *)s->base : NULL;
	if (h && (h->magic != MAGIC || h->chunk != chunk || h->members != members || h->depth != DEPTH)) {
		*err = EINVAL;
		unmap_segment(s);
		s = NULL;
	}
	return s;
}

/* Whether every member runs on this machine; notes their pids for the liveness checks. */
static bool all_on_this_machine(llmp_comm *comm)
{
	llmp_ctx *ctx = comm->ctx;
	char saved[LLMP_MSG_MAX], process[160];
	bool local = true;
	memcpy(saved, ctx->errmsg, sizeof saved);
	for (uint32_t m = 0; m < comm->size && local; m++) {
		uint32_t w = rt_world_rank(comm, m);
		pid_t pid;
		if (m == comm->rank)
			continue;
		local = rt_wireup_peer_process(ctx, w, process, sizeof process) == LLMP_OK &&
			rt_same_machine(process, ctx->machine_id, &pid);
		if (local && !ctx->peers[w].pid)
			ctx->peers[w].pid = pid;
	}
	memcpy(ctx->errmsg, saved, sizeof saved);
	return local;
}

/* Member 0 to the others, first: whether the segment exists, and where. */
struct offer {
	int32_t err;
	uint32_t pad;
	uint64_t bytes;
	char name[64];
};

/*
 * Make (member 0) or map (the others) the segment, and agree on the
 * outcome. Only a failed message is an error; a segment that could not
 * be made or mapped leaves comm on UCX.
 */
static llmp_status setup(rt_call *call)
{
	llmp_comm *comm = call->comm;
	llmp_ctx *ctx = comm->ctx;
	uint32_t n = comm->size;
	size_t chunk = ctx->shm_chunk;
	struct offer offer = { .bytes = segment_bytes(n, chunk) };
	struct rt_shm *s = NULL;
	int32_t err = 0, verdict = 0;
	llmp_status st = LLMP_OK;

	if (comm->rank == 0) {
		static _Atomic unsigned made;
		snprintf(offer.name, sizeof offer.name, "/llmp.%ld.%d.%u", (long)getpid(), comm->kind,
			 atomic_fetch_add(&made, 1));
		int e = 0;
		s = create_segment(offer.name, offer.bytes, n, chunk, &e);
		offer.err = s ? 0 : e;
		for (uint32_t m = 1; m < n && st == LLMP_OK; m++)
			st = rt_exchange(call, &offer, sizeof offer, m, NULL, 0, UINT32_MAX);
		verdict = s && st == LLMP_OK;
		for (uint32_t m = 1; m < n && st == LLMP_OK && s; m++) {
			st = rt_exchange(call, NULL, 0, UINT32_MAX, &err, sizeof err, m);
			verdict = verdict && err == 0;
		}
		if (s)
			shm_unlink(offer.name); /* every member has it mapped, or gave up */
		for (uint32_t m = 1; m < n && st == LLMP_OK && s; m++)
			st = rt_exchange(call, &verdict, sizeof verdict, m, NULL, 0, UINT32_MAX);
	} else {
		st = rt_exchange(call, NULL, 0, UINT32_MAX, &offer, sizeof offer, 0);
		if (st == LLMP_OK && offer.err == 0) {
			offer.name[sizeof offer.name - 1] = '\0';
			int e = 0;
			s = attach_segment(offer.name, offer.bytes, n, chunk, &e);
			err = s ? 0 : e;
			st = rt_exchange(call, &err, sizeof err, 0, NULL, 0, UINT32_MAX);
			if (st == LLMP_OK)
				st = rt_exchange(call, NULL, 0, UINT32_MAX, &verdict, sizeof verdict, 0);
		}
	}
	if (st == LLMP_OK && verdict) {
		comm->shm = s;
		comm->shm_free = rt_shm_free;
		ctx->stats.shm_comms++;
	} else {
		unmap_segment(s);
	}
	if (st == LLMP_OK && verdict)
		rt_log(ctx, RT_LOG_COLL, RT_LOG_DEBUG,
		       "%s: a shared-memory segment of %zu bytes for its %u members", llmp_comm_name(comm),
		       (size_t)offer.bytes, n);
	else if (st == LLMP_OK) {
		int mine = comm->rank == 0 ? offer.err : err;
		rt_log(ctx, RT_LOG_COLL, RT_LOG_DEBUG,
		       "%s: no shared-memory segment of %zu bytes for its %u members (%s): it stays on UCX",
		       llmp_comm_name(comm), (size_t)offer.bytes, n,
		       mine        ? strerror(mine)
		       : offer.err ? "member 0 could not create it"
				   : "a member could not map it");
	}
	return st;
}

bool rt_shm_ready(rt_call *call, size_t bytes, llmp_status *st)
{
	llmp_comm *comm = call->comm;
	*st = LLMP_OK;
	if (comm->size < 2 || bytes < comm->ctx->shm_threshold)
		return false;
	/* reduce-scatter puts a piece of every member's block in a chunk */
	if (comm->ctx->shm_chunk / comm->size < LINE)
		return false;
	if (comm->shm_tried)
		return comm->shm != NULL;
	comm->shm_tried = true;
	if (!all_on_this_machine(comm)) {
		rt_log(comm->ctx, RT_LOG_COLL, RT_LOG_DEBUG,
		       "%s: its members are on more than one machine: no shared-memory segment, UCX",
		       llmp_comm_name(comm));
		return false;
	}
	*st = setup(call);
	return *st == LLMP_OK && comm->shm != NULL;
}

void rt_shm_free(llmp_comm *comm)
{
	unmap_segment(comm->shm);
	comm->shm = NULL;
}

/* ------------------------------------------------------------------ waits */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * Until member m's counter c reaches value. Spins first (the common case:
 * the others are a few microseconds behind); then, yielding the core
 * between polls, watches the clock, failure reports and m's process.
 * A wait still spinning after RT_METRICS_SPIN polls is timed from then
 * (*stuck_since, if not set yet), and m is noted in *waited_for.
 */
static llmp_status wait_one(rt_call *call, enum counter c, uint64_t value, uint32_t m, double *stuck_since,
			    uint32_t *waited_for)
{
	llmp_comm *comm = call->comm;
	llmp_ctx *ctx = comm->ctx;
	_Atomic uint64_t *counter = counter_of(comm->shm, m, c);
	unsigned polls = 0;
	double deadline = 0, next_liveness_check = 0, slow_since = 0;

	while (atomic_load_explicit(counter, memory_order_acquire) < value) {
		if (++polls < SPIN_POLLS) {
			if (polls == RT_METRICS_SPIN) {
				*waited_for = m;
				if (*stuck_since == 0)
					*stuck_since = rt_now();
			}
			cpu_relax();
			continue;
		}
		double t = rt_now();
		if (deadline == 0) {
			slow_since = t;
			deadline = t + ctx->timeout_s - rt_failure_grace(ctx);
			next_liveness_check = t + RT_LIVENESS_PERIOD_S;
		}
		rt_tx_progress(ctx);
		/*
		 * A member's failure report can overtake the store it saw (it
		 * went on, found the call wrong and said so while this rank
		 * slept between its load and here): the counter is looked at
		 * again, so that the call's own check names what is wrong. A
		 * report stays: later waits of this call fail on it at once.
		 */
		if ((rt_report_arrived(comm) || comm->nreports > 0) &&
		    atomic_load_explicit(counter, memory_order_acquire) < value)
			return rt_fail_comm(comm, call->op_name, RT_FAILED_REPORTED, UINT32_MAX, 0, 0, NULL);
		if (t > next_liveness_check) {
			/* m may have done its part and left since the load above. */
			if (rt_member_gone(comm, m) &&
			    atomic_load_explicit(counter, memory_order_acquire) < value)
				return rt_fail_comm(comm, call->op_name, RT_FAILED_PEER, m, 0, 0, NULL);
			next_liveness_check = t + RT_LIVENESS_PERIOD_S;
		}
		if (t > deadline)
			return rt_fail_comm(comm, call->op_name, RT_FAILED_TIMEOUT, m, 0, 0, NULL);
		/* More ranks than cores is common in tests: let the others run (comm/idle.h). */
		rt_idle(t - slow_since);
	}
	return LLMP_OK;
}

/*
 * Until the counter c of every member (or of `from` alone, unless it is
 * UINT32_MAX) reaches value. The last member this waited for is the last
 * to arrive: metrics.h blames it for the whole wait.
 */
static llmp_status wait_members(rt_call *call, enum counter c, uint64_t value, uint32_t from)
{
	llmp_comm *comm = call->comm;
	llmp_status st = LLMP_OK;
	double stuck_since = 0;
	uint32_t last = UINT32_MAX;
	if (from != UINT32_MAX)
		st = wait_one(call, c, value, from, &stuck_since, &last);
	for (uint32_t m = 0; from == UINT32_MAX && m < comm->size && st == LLMP_OK; m++)
		if (m != comm->rank)
			st = wait_one(call, c, value, m, &stuck_since, &last);
	if (st == LLMP_OK && stuck_since > 0)
		rt_metrics_waited(&comm->metrics, last, rt_now() - stuck_since);
	return st;
}

static llmp_status wait_all(rt_call *call, enum counter c, uint64_t value)
{
	return wait_members(call, c, value, UINT32_MAX);
}

static void publish(struct rt_shm *s, uint32_t me, enum counter c, uint64_t value)
{
	atomic_store_explicit(counter_of(s, me, c), value, memory_order_release);
}

/* On a call's first round: every member made the same call (collective, size, dtype, op, root). */
static llmp_status check_calls(rt_call *call, uint64_t round)
{
	llmp_comm *comm = call->comm;
	struct rt_shm *s = comm->shm;
	const struct call_desc *mine = &s->lines[comm->rank].call[round % DEPTH];
	for (uint32_t m = 0; m < comm->size; m++) {
		const struct call_desc *d = &s->lines[m].call[round % DEPTH];
		char detail[160];
		if (d->coll != mine->coll) {
			snprintf(detail, sizeof detail, "it called %s where this rank called %s",
				 d->coll < sizeof coll_names / sizeof coll_names[0] ? coll_names[d->coll]
										    : "?",
				 coll_names[mine->coll]);
		} else if (d->bytes != mine->bytes) {
			return rt_fail_comm(comm, call->op_name, RT_FAILED_LENGTH, m, mine->bytes, d->bytes,
					    NULL);
		} else if (d->dtype != mine->dtype || d->op != mine->op || d->root != mine->root) {
			snprintf(detail, sizeof detail,
				 "it called with %s, %s, root %u where this rank used %s, %s, root %u",
				 llmp_dtype_name((llmp_dtype)d->dtype), llmp_op_name((llmp_op)d->op), d->root,
				 llmp_dtype_name((llmp_dtype)mine->dtype), llmp_op_name((llmp_op)mine->op),
				 mine->root);
		} else {
			continue;
		}
		return rt_fail_comm(comm, call->op_name, RT_FAILED_UCX, m, 0, 0, detail);
	}
	return LLMP_OK;
}

/* ----------------------------------------------------------------- rounds */

/*
 * Round *k begins: once every member is done with round k - DEPTH, its
 * slot is free; the call is described beside it.
 */
static llmp_status round_begin(rt_call *call, struct call_desc desc, uint64_t *k, char **slot)
{
	llmp_comm *comm = call->comm;
	struct rt_shm *s = comm->shm;
	*k = s->round++;
	if (*k >= DEPTH) {
		llmp_status st = wait_all(call, DONE, *k - DEPTH + 1);
		if (st != LLMP_OK)
			return st;
	}
	s->lines[comm->rank].call[*k % DEPTH] = desc;
	*slot = slot_of(s, comm->rank, *k);
	return LLMP_OK;
}

/*
 * This member's slot is filled: say so, and wait until every member's is
 * (only `from`'s after a call's first round, when from != UINT32_MAX).
 */
static llmp_status round_posted(rt_call *call, uint64_t k, bool first, uint32_t from)
{
	llmp_comm *comm = call->comm;
	publish(comm->shm, comm->rank, POSTED, k + 1);
	llmp_status st = wait_members(call, POSTED, k + 1, first ? UINT32_MAX : from);
	if (st == LLMP_OK && first)
		st = check_calls(call, k);
	return st;
}

/*
 * acc = x_0 op x_1 op ... op x_{n-1}, in member order, where x_j is `elems`
 * at byte `off` of member j's slot for round k, and x_me is at mine.
 * Every element is reduced by one member, so all get the same bits. acc is
 * this member's own part of its slot, which no one else reads.
 */
static void reduce_slots(rt_call *call, uint64_t k, char *acc, size_t off, const char *mine, size_t elems)
{
	llmp_comm *comm = call->comm;
	struct rt_shm *s = comm->shm;
	uint32_t n = comm->size, me = comm->rank;
	for (uint32_t j = 1; j < n && elems > 0; j++) {
		const char *a = j > 1 ? acc : me == 0 ? mine : slot_of(s, 0, k) + off;
		const char *b = j == me ? mine : slot_of(s, j, k) + off;
		kern_reduce(acc, a, b, elems, call->dtype, call->op);
	}
	if (elems > 0 && call->op == LLMP_AVG)
		kern_reduce_divide(acc, elems, call->dtype, n);
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* ------------------------------------------------------------ collectives */

/*
 * One chunk of allreduce, split in one slice per member: member r reduces
 * slice r from every slot into its own, where the others copy it from.
 */
static llmp_status allreduce_round(rt_call *call, const char *send, char *recv, size_t bytes,
				   struct call_desc desc)
{
	llmp_comm *comm = call->comm;
	struct rt_shm *s = comm->shm;
	uint32_t n = comm->size, me = comm->rank;
	rt_blocks bl = rt_blocks_of(bytes / call->esize, n, call->esize);
	uint64_t k;
	char *mine;
	llmp_status st = round_begin(call, desc, &k, &mine);
	if (st != LLMP_OK)
		return st;
	for (uint32_t j = 0; j < n; j++)
		if (j != me)
			memcpy(mine + rt_block_offset(&bl, j), send + rt_block_offset(&bl, j),
			       rt_block_elems(&bl, j) * call->esize);
	if ((st = round_posted(call, k, desc.bytes != UINT64_MAX, UINT32_MAX)) != LLMP_OK)
		return st;
	size_t off = rt_block_offset(&bl, me), elems = rt_block_elems(&bl, me);
	/* metrics.h: the chunk written for the others; their part of my slice, then their slices, read */
	comm->metrics.bytes_sent += bytes;
	comm->metrics.bytes_recvd += (n - 1) * elems * call->esize + (bytes - elems * call->esize);
	reduce_slots(call, k, mine + off, off, send + off, elems);
	memcpy(recv + off, mine + off, elems * call->esize);
	publish(s, me, REDUCED, k + 1);

	if ((st = wait_all(call, REDUCED, k + 1)) != LLMP_OK)
		return st;
	for (uint32_t j = 0; j < n; j++)
		if (j != me)
			memcpy(recv + rt_block_offset(&bl, j), slot_of(s, j, k) + rt_block_offset(&bl, j),
			       rt_block_elems(&bl, j) * call->esize);
	publish(s, me, DONE, k + 1);
	return LLMP_OK;
}

llmp_status rt_shm_allreduce(rt_call *call, const void *sendbuf, void *recvbuf, size_t count)
{
	size_t bytes = count * call->esize, chunk = call->comm->shm->chunk;
	struct call_desc desc = { bytes, SHM_ALLREDUCE, (uint32_t)call->dtype, (uint32_t)call->op, 0 };
	llmp_status st = LLMP_OK;
	for (size_t off = 0; off < bytes && st == LLMP_OK; off += chunk, desc.bytes = UINT64_MAX)
		st = allreduce_round(call, (const char *)sendbuf + off, (char *)recvbuf + off,
				     min_size(bytes - off, chunk), desc);
	return st;
}

/*
 * Each round takes `piece` bytes at offset `off` of every block: member r
 * puts its pieces of the other blocks in its slot (piece j at j * piece),
 * then reduces piece r of every slot straight into recvbuf.
 */
llmp_status rt_shm_reduce_scatter(rt_call *call, const void *sendbuf, void *recvbuf, size_t count)
{
	llmp_comm *comm = call->comm;
	struct rt_shm *s = comm->shm;
	uint32_t n = comm->size, me = comm->rank;
	size_t block = count * call->esize, piece = s->chunk / n / call->esize * call->esize;
	struct call_desc desc = { block * n, SHM_REDUCE_SCATTER, (uint32_t)call->dtype, (uint32_t)call->op,
				  0 };
	const char *send = sendbuf;
	llmp_status st = LLMP_OK;

	for (size_t off = 0; off < block && st == LLMP_OK; off += piece, desc.bytes = UINT64_MAX) {
		size_t len = min_size(block - off, piece);
		uint64_t k;
		char *mine;
		if ((st = round_begin(call, desc, &k, &mine)) != LLMP_OK)
			break;
		for (uint32_t j = 0; j < n; j++)
			if (j != me)
				memcpy(mine + j * piece, send + j * block + off, len);
		if ((st = round_posted(call, k, desc.bytes != UINT64_MAX, UINT32_MAX)) != LLMP_OK)
			break;
		comm->metrics.bytes_sent += (n - 1) * len;  /* my pieces of the others' blocks */
		comm->metrics.bytes_recvd += (n - 1) * len; /* the others' pieces of mine */
		/* In place, recvbuf is this member's block of sendbuf: reduce aside, then copy. */
		char *acc = mine + me * piece;
		reduce_slots(call, k, acc, me * piece, send + me * block + off, len / call->esize);
		memcpy((char *)recvbuf + off, acc, len);
		publish(s, me, DONE, k + 1);
	}
	return st;
}

/*
 * Rounds that only copy. Each source copies a chunk of its data into its
 * slot; every other member copies each source's slot to where that
 * source's data belongs. from == UINT32_MAX: every member is a source,
 * member j's data at recv + j * stride (allgather); else `from` alone, its
 * data at recv (stride 0: broadcast).
 */
static llmp_status copy_rounds(rt_call *call, struct call_desc desc, char *recv, size_t bytes, size_t stride,
			       uint32_t from)
{
	llmp_comm *comm = call->comm;
	struct rt_shm *s = comm->shm;
	uint32_t n = comm->size, me = comm->rank;
	llmp_status st = LLMP_OK;

	for (size_t off = 0; off < bytes && st == LLMP_OK; off += s->chunk, desc.bytes = UINT64_MAX) {
		size_t len = min_size(bytes - off, s->chunk);
		uint64_t k;
		char *mine;
		if ((st = round_begin(call, desc, &k, &mine)) != LLMP_OK)
			break;
		if (from == UINT32_MAX || from == me) {
			memcpy(mine, recv + me * stride + off, len);
			comm->metrics.bytes_sent += len;
		}
		if ((st = round_posted(call, k, desc.bytes != UINT64_MAX, from)) != LLMP_OK)
			break;
		for (uint32_t j = 0; j < n; j++)
			if (j != me && (from == UINT32_MAX || from == j))
				memcpy(recv + j * stride + off, slot_of(s, j, k), len);
		comm->metrics.bytes_recvd += from == UINT32_MAX ? (n - 1) * len : from != me ? len : 0;
		publish(s, me, DONE, k + 1);
	}
	return st;
}

/* recvbuf already holds this member's block (allgather.c put it there). */
llmp_status rt_shm_allgather(rt_call *call, void *recvbuf, size_t count)
{
	size_t block = count * call->esize;
	struct call_desc desc = { block * call->comm->size, SHM_ALLGATHER, (uint32_t)call->dtype, 0, 0 };
	return copy_rounds(call, desc, recvbuf, block, block, UINT32_MAX);
}

/* recvbuf holds the data on the root already (broadcast.c copied it). */
llmp_status rt_shm_broadcast(rt_call *call, void *recvbuf, size_t count, uint32_t root)
{
	size_t bytes = count * call->esize;
	struct call_desc desc = { bytes, SHM_BROADCAST, (uint32_t)call->dtype, 0, root };
	return copy_rounds(call, desc, recvbuf, bytes, 0, root);
}

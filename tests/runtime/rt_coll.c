/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_coll.c - the collective sweep: every collective, op, dtype and a range
 * of counts, in place and out of place, on the world and on every group the
 * rank belongs to; each result checked against rt_values.c.
 *
 * Every member of a communicator runs the same sequence of calls on it, and
 * the test id of a call depends only on the communicator's kind and the
 * call's place in that sequence, so all members agree on every input.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"
#include "rt_values.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY_BYTES 64
#define CANARY 0xc3
#define GARBAGE 0xa5
#define WORLD_KIND LLMP_NGROUPS

/* One communicator being swept. */
typedef struct sweep {
	const chk_args *args;
	llmp_comm *comm;
	const char *name;
	uint32_t n, me;
	uint32_t *wranks; /* world rank of each comm rank, from llmp_comm_world_rank */
	int kind;         /* enum llmp_group, or WORLD_KIND */
	uint64_t serial;  /* calls made in this sweep */
	bool large;       /* run the large count on this communicator */
	bool broken;      /* a call failed: the communicator is unusable */
	double in_calls;  /* seconds spent inside libllmp */
} sweep;

static uint64_t next_test(sweep *s)
{
	return ((uint64_t)(s->kind + 1) << 40) | s->serial++;
}

/* ---------------------------------------------------------- buffers */

/* bytes of data followed by a canary; never NULL (count 0 still gets a buffer). */
static void *buf_alloc(size_t bytes, int fill)
{
	unsigned char *p = malloc(bytes + CANARY_BYTES);
	if (!p) {
		fprintf(stderr, "rt_check: out of memory (%zu bytes)\n", bytes);
		exit(2);
	}
	memset(p, fill, bytes);
	memset(p + bytes, CANARY, CANARY_BYTES);
	return p;
}

static bool canary_intact(const void *p, size_t bytes)
{
	const unsigned char *c = (const unsigned char *)p + bytes;
	for (size_t i = 0; i < CANARY_BYTES; i++)
		if (c[i] != CANARY)
			return false;
	return true;
}

/* Compare count elements; report the first few wrong ones; one check. */
static void check_elems(const chk_case *c, const void *got, const void *exp, size_t first, size_t count)
{
	size_t esz = chk_dtype_size((llmp_dtype)c->dtype), bad = 0;
	for (size_t i = 0; i < count; i++) {
		const char *g = (const char *)got + i * esz, *e = (const char *)exp + i * esz;
		if (!chk_elem_equal((llmp_dtype)c->dtype, g, e)) {
			if (bad++ < 3)
				chk_wrong_elem(c, first + i, g, e, NULL);
		}
	}
	if (bad > 3)
		report_wrong("... %zu of %zu elements wrong in that %s", bad, count, c->what);
	report_done(bad == 0);
}

static void check_canary(const chk_case *c, const void *p, size_t bytes, const char *which)
{
	report_expect(canary_intact(p, bytes), "%s group=%s dtype=%s count=%zu: wrote past the end of %s",
		      c->what, c->group, chk_dtype_name(c->dtype), c->count, which);
}

static void check_unchanged(const chk_case *c, const void *p, const void *copy, size_t bytes)
{
	report_expect(memcmp(p, copy, bytes) == 0, "%s group=%s op=%s dtype=%s count=%zu: sendbuf modified",
		      c->what, c->group, chk_op_name(c->op), chk_dtype_name(c->dtype), c->count);
}

/* The call's status; its time (since t0) counted as time inside libllmp. */
static bool status_ok(sweep *s, const chk_case *c, llmp_status st, llmp_ctx *ctx, double t0)
{
	s->in_calls += chk_now() - t0;
	if (st == LLMP_OK)
		return true;
	report_done(false);
	chk_wrong_status(c, st, llmp_errmsg(ctx));
	s->broken = true;
	return false;
}

static void *dup_bytes(const void *p, size_t bytes)
{
	void *q = buf_alloc(bytes, 0);
	memcpy(q, p, bytes);
	return q;
}

/* --------------------------------------------------------- collectives */

static void run_allreduce(sweep *s, llmp_ctx *ctx, llmp_dtype dt, int op, size_t count, bool inplace)
{
	size_t esz = chk_dtype_size(dt), bytes = count * esz;
	chk_gen g = { dt, op, s->n, next_test(s) };
	chk_case c = { "allreduce", s->name, op, (int)dt, count, inplace, -1 };
	llmp_status st;
	double t0;
	void *send = buf_alloc(bytes, 0), *copy, *recv, *exp;

	chk_input_fill(&g, s->wranks[s->me], s->me, send, 0, count);
	copy = dup_bytes(send, bytes);
	recv = inplace ? send : buf_alloc(bytes, GARBAGE);
	t0 = chk_now();
	st = llmp_allreduce(s->comm, send, recv, count, dt, (llmp_op)op);
	if (status_ok(s, &c, st, ctx, t0)) {
		exp = buf_alloc(bytes, 0);
		chk_expected_reduce(&g, s->wranks, 0, count, exp);
		check_elems(&c, recv, exp, 0, count);
		check_canary(&c, recv, bytes, "recvbuf");
		if (!inplace)
			check_unchanged(&c, send, copy, bytes);
		free(exp);
	}
	if (!inplace)
		free(recv);
	free(send);
	free(copy);
}

static void run_reduce_scatter(sweep *s, llmp_ctx *ctx, llmp_dtype dt, int op, size_t count, bool inplace)
{
	size_t esz = chk_dtype_size(dt), total = (size_t)s->n * count, bytes = count * esz;
	chk_gen g = { dt, op, s->n, next_test(s) };
	chk_case c = { "reduce_scatter", s->name, op, (int)dt, count, inplace, -1 };
	llmp_status st;
	double t0;
	void *send = buf_alloc(total * esz, 0), *copy, *recv, *exp;

	chk_input_fill(&g, s->wranks[s->me], s->me, send, 0, total);
	copy = dup_bytes(send, total * esz);
	recv = inplace ? (char *)send + (size_t)s->me * bytes : buf_alloc(bytes, GARBAGE);
	t0 = chk_now();
	st = llmp_reduce_scatter(s->comm, send, recv, count, dt, (llmp_op)op);
	if (status_ok(s, &c, st, ctx, t0)) {
		size_t first = (size_t)s->me * count;
		exp = buf_alloc(bytes, 0);
		chk_expected_reduce(&g, s->wranks, first, count, exp);
		check_elems(&c, recv, exp, first, count);
		if (inplace) {
			check_canary(&c, send, total * esz, "sendbuf");
		} else {
			check_canary(&c, recv, bytes, "recvbuf");
			check_unchanged(&c, send, copy, total * esz);
		}
		free(exp);
	}
	if (!inplace)
		free(recv);
	free(send);
	free(copy);
}

static void run_allgather(sweep *s, llmp_ctx *ctx, llmp_dtype dt, size_t count, bool inplace)
{
	size_t esz = chk_dtype_size(dt), total = (size_t)s->n * count, bytes = count * esz;
	chk_gen g = { dt, CHK_COPY, s->n, next_test(s) };
	chk_case c = { "allgather", s->name, -1, (int)dt, count, inplace, -1 };
	llmp_status st;
	double t0;
	void *recv = buf_alloc(total * esz, GARBAGE), *send, *copy, *exp;

	send = inplace ? (char *)recv + (size_t)s->me * bytes : buf_alloc(bytes, 0);
	chk_input_fill(&g, s->wranks[s->me], s->me, send, 0, count);
	copy = dup_bytes(send, bytes);
	t0 = chk_now();
	st = llmp_allgather(s->comm, send, recv, count, dt);
	if (status_ok(s, &c, st, ctx, t0)) {
		exp = buf_alloc(total * esz, 0);
		for (uint32_t r = 0; r < s->n; r++)
			chk_input_fill(&g, s->wranks[r], r, (char *)exp + (size_t)r * bytes, 0, count);
		check_elems(&c, recv, exp, 0, total);
		check_canary(&c, recv, total * esz, "recvbuf");
		if (!inplace)
			check_unchanged(&c, send, copy, bytes);
		free(exp);
	}
	if (!inplace)
		free(send);
	free(recv);
	free(copy);
}

static void run_broadcast(sweep *s, llmp_ctx *ctx, llmp_dtype dt, size_t count, uint32_t root, bool inplace)
{
	size_t esz = chk_dtype_size(dt), bytes = count * esz;
	chk_gen g = { dt, CHK_COPY, s->n, next_test(s) };
	chk_case c = { "broadcast", s->name, -1, (int)dt, count, inplace, root };
	llmp_status st;
	double t0;
	void *recv = buf_alloc(bytes, GARBAGE), *send, *copy, *exp;

	/* sendbuf is read on the root only: elsewhere it holds garbage */
	send = inplace ? recv : buf_alloc(bytes, GARBAGE);
	if (s->me == root)
		chk_input_fill(&g, s->wranks[root], root, send, 0, count);
	copy = dup_bytes(send, bytes);
	t0 = chk_now();
	st = llmp_broadcast(s->comm, send, recv, count, dt, root);
	if (status_ok(s, &c, st, ctx, t0)) {
		exp = buf_alloc(bytes, 0);
		chk_input_fill(&g, s->wranks[root], root, exp, 0, count);
		check_elems(&c, recv, exp, 0, count);
		check_canary(&c, recv, bytes, "recvbuf");
		if (!inplace && s->me == root)
			check_unchanged(&c, send, copy, bytes);
		free(exp);
	}
	if (!inplace)
		free(send);
	free(recv);
	free(copy);
}

static void run_barrier(sweep *s, llmp_ctx *ctx)
{
	chk_case c = { "barrier", s->name, -1, -1, 0, false, -1 };
	llmp_status st;
	double t0;
	t0 = chk_now();
	st = llmp_barrier(s->comm);
	if (status_ok(s, &c, st, ctx, t0))
		report_done(true);
}

/*
 * A barrier returns only once every member entered it: the last member
 * enters 0.4 s late, and every other member must have waited for it.
 */
static void run_barrier_waits(sweep *s, llmp_ctx *ctx)
{
	const double delay = 0.4, least = 0.2;
	chk_case c = { "barrier (late member)", s->name, -1, -1, 0, false, -1 };
	llmp_status st;
	double t0;

	run_barrier(s, ctx);
	if (s->broken || s->n < 2)
		return;
	if (s->me == s->n - 1)
		chk_sleep(delay);
	t0 = chk_now();
	st = llmp_barrier(s->comm);
	if (!status_ok(s, &c, st, ctx, t0))
		return;
	if (s->me != s->n - 1)
		report_expect(
			chk_now() - t0 >= least,
			"barrier group=%s returned after %.3f s, before its last member entered (%.1f s late)",
			s->name, chk_now() - t0, delay);
}

/* -------------------------------------------------------- random pass */

static double random_tolerance(llmp_dtype dt, uint32_t n)
{
	double unit = dt == LLMP_FLOAT32 ? 0x1p-24 : 0x1p-53;
	return (n + 2) * unit;
}

/*
 * Seeded values with every bit of the significand in use: the reduction
 * order now matters, so sums and products are compared within (n + 2) units
 * of rounding of the sum of magnitudes; min and max still bitwise.
 */
static void run_random_allreduce(sweep *s, llmp_ctx *ctx, llmp_dtype dt, int op, size_t count)
{
	size_t esz = chk_dtype_size(dt), bytes = count * esz, bad = 0;
	uint64_t test = next_test(s);
	chk_case c = { "allreduce (random)", s->name, op, (int)dt, count, false, -1 };
	llmp_status st;
	double t0;
	void *send = buf_alloc(bytes, 0), *recv = buf_alloc(bytes, GARBAGE);
	unsigned seed = s->args->seed;

	for (size_t i = 0; i < count; i++)
		chk_store_real(dt, (char *)send + i * esz,
			       chk_random_input(dt, seed, test, s->wranks[s->me], i, op));
	t0 = chk_now();
	st = llmp_allreduce(s->comm, send, recv, count, dt, (llmp_op)op);
	if (status_ok(s, &c, st, ctx, t0)) {
		for (size_t i = 0; i < count; i++) {
			long double acc = 0, mag = 0;
			for (uint32_t m = 0; m < s->n; m++) {
				long double x = chk_random_input(dt, seed, test, s->wranks[m], i, op);
				if (m == 0)
					acc = x;
				else if (op == LLMP_SUM || op == LLMP_AVG)
					acc += x;
				else if (op == LLMP_PROD)
					acc *= x;
				else if (op == LLMP_MIN)
					acc = x < acc ? x : acc;
				else
					acc = x > acc ? x : acc;
				mag += fabsl(x);
			}
			if (op == LLMP_AVG) {
				acc /= s->n;
				mag /= s->n;
			}
			if (op == LLMP_PROD)
				mag = fabsl(acc);
			double got = chk_load_real(dt, (char *)recv + i * esz);
			bool ok = (op == LLMP_MIN || op == LLMP_MAX)
					  ? got == (double)acc
					  : fabsl((long double)got - acc) <= random_tolerance(dt, s->n) * mag;
			if (!ok && bad++ < 3) {
				unsigned char e[8];
				chk_store_real(dt, e, (double)acc);
				chk_wrong_elem(&c, i, (char *)recv + i * esz, e, "beyond rounding tolerance");
			}
		}
		report_done(bad == 0);
		check_canary(&c, recv, bytes, "recvbuf");
	}
	free(send);
	free(recv);
}

/* ------------------------------------------------------------- sweep */

/* The element counts; the large one above the 64 KiB ring threshold. */
static size_t sweep_counts(const chk_args *args, size_t counts[8])
{
	size_t n = 0;
	counts[n++] = 0;
	counts[n++] = 1;
	if (!args->quick)
		counts[n++] = 2;
	counts[n++] = 7;
	if (!args->quick)
		counts[n++] = 1021;
	counts[n++] = args->large;
	return n;
}

/* The whole matrix: every op, in place and out of place, every root. */
static void sweep_count(sweep *s, llmp_ctx *ctx, llmp_dtype dt, size_t count)
{
	for (int op = 0; op < LLMP_NOPS && !s->broken; op++) {
		run_allreduce(s, ctx, dt, op, count, false);
		if (!s->broken)
			run_allreduce(s, ctx, dt, op, count, true);
	}
	for (int op = 0; op < LLMP_NOPS && !s->broken; op++) {
		run_reduce_scatter(s, ctx, dt, op, count, false);
		if (!s->broken)
			run_reduce_scatter(s, ctx, dt, op, count, true);
	}
	if (!s->broken)
		run_allgather(s, ctx, dt, count, false);
	if (!s->broken)
		run_allgather(s, ctx, dt, count, true);
	for (uint32_t root = 0; root < s->n && !s->broken; root++) {
		run_broadcast(s, ctx, dt, count, root, false);
		if (!s->broken)
			run_broadcast(s, ctx, dt, count, root, true);
	}
}

/*
 * The large count, where the ring and pipelined paths run: fewer variants
 * (the small counts cover every combination), since checking costs
 * count * members hashes per call. reduce-scatter and allgather move the
 * large total split n ways.
 */
static void sweep_large(sweep *s, llmp_ctx *ctx, llmp_dtype dt, size_t count)
{
	size_t block = count / s->n ? count / s->n : 1;

	for (int op = 0; op < LLMP_NOPS && !s->broken; op++)
		run_allreduce(s, ctx, dt, op, count, false);
	if (!s->broken)
		run_allreduce(s, ctx, dt, LLMP_SUM, count, true);
	if (!s->broken)
		run_reduce_scatter(s, ctx, dt, LLMP_SUM, block, false);
	if (!s->broken)
		run_reduce_scatter(s, ctx, dt, LLMP_MAX, block, false);
	if (!s->broken)
		run_reduce_scatter(s, ctx, dt, LLMP_SUM, block, true);
	if (!s->broken)
		run_allgather(s, ctx, dt, block, false);
	if (!s->broken)
		run_allgather(s, ctx, dt, block, true);
	if (!s->broken)
		run_broadcast(s, ctx, dt, count, s->n - 1, false);
	if (!s->broken)
		run_broadcast(s, ctx, dt, count, 0, true);
}

static void sweep_dtype(sweep *s, llmp_ctx *ctx, llmp_dtype dt)
{
	size_t counts[8], ncounts = sweep_counts(s->args, counts);

	for (size_t k = 0; k < ncounts && !s->broken; k++) {
		if (counts[k] != s->args->large)
			sweep_count(s, ctx, dt, counts[k]);
		else if (s->large)
			sweep_large(s, ctx, dt, counts[k]);
	}
}

static void sweep_comm(sweep *s, llmp_ctx *ctx)
{
	double t0 = chk_now();
	unsigned long before = report_wrong_count();

	for (int dt = 0; dt < LLMP_NDTYPES && !s->broken; dt++)
		sweep_dtype(s, ctx, (llmp_dtype)dt);
	for (int dt = LLMP_FLOAT32; dt <= LLMP_FLOAT64 && !s->broken; dt++) {
		for (int op = 0; op < LLMP_NOPS && !s->broken; op++) {
			run_random_allreduce(s, ctx, (llmp_dtype)dt, op, 1);
			if (!s->broken)
				run_random_allreduce(s, ctx, (llmp_dtype)dt, op, 1021);
		}
		if (s->large && !s->broken)
			run_random_allreduce(s, ctx, (llmp_dtype)dt, LLMP_SUM, s->args->large);
	}
	if (!s->broken)
		run_barrier_waits(s, ctx);
	report_note("swept %s (size %u, comm rank %u%s): %llu calls, %.2f s (%.2f s in libllmp), %lu wrong",
		    s->name, s->n, s->me,
		    s->large ? "" : ", no large count: one member, or the members of an earlier group",
		    (unsigned long long)s->serial, chk_now() - t0, s->in_calls,
		    report_wrong_count() - before);
}

/* ------------------------------------------------------- the communicators */

/*
 * What the communicator says about itself against the layout: size, rank,
 * members and name as the planner has them, and the same handle each time.
 */
static bool check_comm_shape(llmp_ctx *ctx, llmp_comm *comm, int kind, uint32_t *wranks)
{
	uint32_t me = llmp_rank(ctx), n = llmp_comm_size(comm), cr = llmp_comm_rank(comm);
	const char *name = llmp_comm_name(comm);
	const char *want = kind == WORLD_KIND ? "world" : llmp_group_name((enum llmp_group)kind);
	bool ok = true;

	ok &= report_expect(name && strcmp(name, want) == 0, "comm name %s, expected %s",
			    name ? name : "(null)", want);
	ok &= report_expect(n >= 1 && cr < n, "comm %s: rank %u of size %u", want, cr, n);
	for (uint32_t r = 0; r < n; r++)
		wranks[r] = llmp_comm_world_rank(comm, r);
	ok &= report_expect(n == 0 || wranks[cr] == me,
			    "comm %s: comm rank %u is world rank %u, not this rank %u", want, cr,
			    n ? wranks[cr] : 0, me);
	ok &= report_expect(llmp_comm_world_rank(comm, n) == UINT32_MAX,
			    "comm %s: world rank of member %u (one past the end) is not UINT32_MAX", want, n);

	if (kind == WORLD_KIND) {
		ok &= report_expect(n == llmp_world_size(ctx), "world comm size %u, world %u", n,
				    llmp_world_size(ctx));
		for (uint32_t r = 0; r < n; r++)
			ok &= report_expect(wranks[r] == r, "world comm member %u is world rank %u", r,
					    wranks[r]);
		return ok;
	}

	uint32_t members[4096], m = 0, index = 0;
	llmp_status st = llmp_plan_group_of(llmp_layout(ctx), (enum llmp_group)kind, me, members, 4096, &m,
					    &index);
	ok &= report_expect(st == LLMP_OK && m == n, "comm %s: size %u, the layout says %u (%s)", want, n, m,
			    llmp_strerror(st));
	for (uint32_t r = 0; ok && r < n; r++)
		ok &= report_expect(wranks[r] == members[r],
				    "comm %s: member %u is world rank %u, the layout says %u", want, r,
				    wranks[r], members[r]);
	llmp_comm *again = NULL;
	st = llmp_comm_get(ctx, (enum llmp_group)kind, &again);
	ok &= report_expect(st == LLMP_OK && again == comm,
			    "comm %s: a second llmp_comm_get gave another handle", want);
	return ok;
}

/* Has an earlier communicator of this sweep the same members? */
static bool seen_before(uint32_t **seen, uint32_t *seen_n, int nseen, const uint32_t *w, uint32_t n)
{
	for (int i = 0; i < nseen; i++)
		if (seen_n[i] == n && memcmp(seen[i], w, n * sizeof *w) == 0)
			return true;
	return false;
}

void chk_sweep_all(llmp_ctx *ctx, const chk_args *args)
{
	uint32_t *seen[LLMP_NGROUPS + 1], seen_n[LLMP_NGROUPS + 1];
	int nseen = 0;

	/* the world first, then every kind of group in the enum's order */
	for (int i = 0; i <= LLMP_NGROUPS; i++) {
		int kind = i == 0 ? WORLD_KIND : i - 1;
		llmp_comm *comm = NULL;
		llmp_status st = kind == WORLD_KIND ? llmp_comm_world(ctx, &comm)
						    : llmp_comm_get(ctx, (enum llmp_group)kind, &comm);
		const char *name = kind == WORLD_KIND ? "world" : llmp_group_name((enum llmp_group)kind);
		if (st == LLMP_ERR_RANGE && kind != WORLD_KIND) {
			/* in no group of this kind: the layout must agree */
			uint32_t m = 1, index = 0, members[1];
			llmp_plan_group_of(llmp_layout(ctx), (enum llmp_group)kind, llmp_rank(ctx), members,
					   1, &m, &index);
			report_expect(comm == NULL && m == 0,
				      "llmp_comm_get(%s) said not a member, the layout says %u members", name,
				      m);
			report_note("not in a %s group", name);
			continue;
		}
		if (st != LLMP_OK || !comm) {
			report_expect(false, "llmp_comm_get(%s): %s: %s", name, llmp_strerror(st),
				      llmp_errmsg(ctx));
			continue;
		}
		uint32_t n = llmp_comm_size(comm);
		uint32_t *wranks = calloc(n + 1, sizeof *wranks);
		if (!wranks || !check_comm_shape(ctx, comm, kind, wranks)) {
			free(wranks);
			continue;
		}
		sweep s = { args, comm, name, n, llmp_comm_rank(comm), wranks, kind, 0, true, false, 0.0 };
		/* the large count once per set of members that talk (or once alone) */
		s.large = !seen_before(seen, seen_n, nseen, wranks, n) && (n > 1 || kind == WORLD_KIND);
		sweep_comm(&s, ctx);
		seen[nseen] = wranks;
		seen_n[nseen++] = n;
		if (s.broken) {
			/* the others may now wait on this rank: stop rather than hang */
			report_note("stopping the sweep: %s is unusable after a failed call", name);
			break;
		}
	}
	for (int i = 0; i < nseen; i++)
		free(seen[i]);
}

int chk_cmd_coll(const chk_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_status st = chk_init(args, &ctx);
	if (st != LLMP_OK) {
		report_expect(false, "llmp_init: %s: %s", llmp_strerror(st),
			      ctx ? llmp_errmsg(ctx) : "(no context)");
		llmp_finalize(ctx);
		return report_summary();
	}
	chk_sweep_all(ctx, args);
	llmp_stats stats;
	if (llmp_get_stats(ctx, &stats) == LLMP_OK)
		report_note("shared-memory communicators: %u", stats.shm_comms);
	st = llmp_finalize(ctx);
	report_expect(st == LLMP_OK, "llmp_finalize: %s", llmp_strerror(st));
	return report_summary();
}

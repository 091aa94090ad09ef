/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_p2p.c - point to point along a group, as pipeline stages use it.
 *
 * Stage s (comm rank s) sends "activations" to s + 1 and receives
 * "gradients" back, several messages in a row of different sizes and
 * dtypes (0 elements and a large one included); the contents name the
 * sender and the message number, so a message delivered out of order or
 * to the wrong place is caught. Then a burst the receiver only starts to
 * read late (messages queue up unexpected), a ring shift and a pairwise
 * exchange with llmp_sendrecv, with different counts each way.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"
#include "rt_values.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One direction's message sequence: element counts and dtypes. */
static const size_t msg_counts[] = { 7, 0, 1, 1021, 300007, 2, 65536, 0, 13, 4099 };
static const llmp_dtype msg_dtypes[] = { LLMP_FLOAT32, LLMP_INT64, LLMP_UINT8, LLMP_BFLOAT16, LLMP_FLOAT32,
					 LLMP_FLOAT64, LLMP_UINT8, LLMP_INT32, LLMP_FLOAT16,  LLMP_INT32 };
#define NMSGS (sizeof msg_counts / sizeof msg_counts[0])

typedef struct stages {
	llmp_ctx *ctx;
	llmp_comm *comm;
	const char *name;
	uint32_t n, me;
	uint32_t *wranks;
	bool broken;
} stages;

/* The test id of message k of a phase: the same on sender and receiver. */
static uint64_t msg_test(unsigned phase, size_t k)
{
	return 0x9e37000000ull + ((uint64_t)phase << 16) + k;
}

static bool ok_status(stages *p, const chk_case *c, llmp_status st)
{
	if (st == LLMP_OK)
		return true;
	report_done(false);
	chk_wrong_status(c, st, llmp_errmsg(p->ctx));
	p->broken = true;
	return false;
}

static void *filled(const stages *p, uint32_t sender, unsigned phase, size_t k, llmp_dtype dt, size_t count)
{
	chk_gen g = { dt, CHK_COPY, p->n, msg_test(phase, k) };
	void *buf = malloc(count * chk_dtype_size(dt) + 1);
	if (!buf) {
		fprintf(stderr, "rt_check: out of memory\n");
		exit(2);
	}
	chk_input_fill(&g, p->wranks[sender], sender, buf, 0, count);
	return buf;
}

static void check_message(const stages *p, const chk_case *c, const void *got, uint32_t sender,
			  unsigned phase, size_t k)
{
	llmp_dtype dt = (llmp_dtype)c->dtype;
	size_t esz = chk_dtype_size(dt), bad = 0;
	void *exp = filled(p, sender, phase, k, dt, c->count);
	for (size_t i = 0; i < c->count; i++) {
		const char *g = (const char *)got + i * esz, *e = (const char *)exp + i * esz;
		if (!chk_elem_equal(dt, g, e) && bad++ < 3)
			chk_wrong_elem(c, i, g, e, "message out of order or corrupted");
	}
	if (bad > 3)
		report_wrong("... %zu of %zu elements wrong", bad, c->count);
	report_done(bad == 0);
	free(exp);
}

static void send_msg(stages *p, uint32_t to, unsigned phase, size_t k)
{
	llmp_dtype dt = msg_dtypes[k % NMSGS];
	size_t count = msg_counts[k % NMSGS];
	chk_case c = { "p2p send", p->name, -1, (int)dt, count, false, to };
	void *buf = filled(p, p->me, phase, k, dt, count);
	if (ok_status(p, &c, llmp_send(p->comm, buf, count, dt, to)))
		report_done(true);
	free(buf);
}

static void recv_msg(stages *p, uint32_t from, unsigned phase, size_t k)
{
	llmp_dtype dt = msg_dtypes[k % NMSGS];
	size_t count = msg_counts[k % NMSGS];
	chk_case c = { "p2p recv", p->name, -1, (int)dt, count, false, from };
	void *buf = malloc(count * chk_dtype_size(dt) + 1);
	if (!buf)
		exit(2);
	memset(buf, 0xa5, count * chk_dtype_size(dt));
	if (ok_status(p, &c, llmp_recv(p->comm, buf, count, dt, from)))
		check_message(p, &c, buf, from, phase, k);
	free(buf);
}

/* Activations forward (phase 1), then gradients backward (phase 2). */
static void forward_backward(stages *p)
{
	for (size_t k = 0; k < NMSGS && !p->broken; k++) {
		if (p->me > 0)
			recv_msg(p, p->me - 1, 1, k);
		if (p->me + 1 < p->n && !p->broken)
			send_msg(p, p->me + 1, 1, k);
	}
	for (size_t k = 0; k < NMSGS && !p->broken; k++) {
		if (p->me + 1 < p->n)
			recv_msg(p, p->me + 1, 2, k);
		if (p->me > 0 && !p->broken)
			send_msg(p, p->me - 1, 2, k);
	}
}

/*
 * Stage 0 sends 2 * NMSGS messages to stage 1, which starts to receive
 * only 0.3 s later: the small ones arrive before their receive is posted.
 */
static void burst(stages *p)
{
	if (p->me == 0) {
		for (size_t k = 0; k < 2 * NMSGS && !p->broken; k++)
			send_msg(p, 1, 3, k);
	} else if (p->me == 1) {
		chk_sleep(0.3);
		for (size_t k = 0; k < 2 * NMSGS && !p->broken; k++)
			recv_msg(p, 0, 3, k);
	}
}

/* sendrecv of phase's message to dst, from src; the counts differ by sender. */
static void exchange(stages *p, uint32_t dst, uint32_t src, unsigned phase, size_t base)
{
	const llmp_dtype dt = LLMP_INT32;
	size_t scount = base + 37 * p->me, rcount = base + 37 * src;
	chk_case c = { "p2p sendrecv", p->name, -1, (int)dt, rcount, false, src };
	void *send = filled(p, p->me, phase, 0, dt, scount);
	void *recv = malloc(rcount * sizeof(int32_t) + 1);
	if (!recv)
		exit(2);
	memset(recv, 0xa5, rcount * sizeof(int32_t));
	/* the sender's message depends only on the sender: check with k = 0 */
	if (ok_status(p, &c, llmp_sendrecv(p->comm, send, scount, dst, recv, rcount, src, dt)))
		check_message(p, &c, recv, src, phase, 0);
	free(send);
	free(recv);
}

static void sendrecv_patterns(stages *p)
{
	const size_t bases[] = { 0, 5, 300007 };
	for (size_t b = 0; b < 3 && !p->broken; b++) {
		/* ring shift: everyone sends right and receives from the left at once */
		exchange(p, (p->me + 1) % p->n, (p->me + p->n - 1) % p->n, (unsigned)(10 + b), bases[b]);
		/* pairs (0,1), (2,3), ...: dst and src the same; the odd last one sits out */
		uint32_t partner = p->me ^ 1u;
		if (!p->broken && partner < p->n)
			exchange(p, partner, partner, (unsigned)(20 + b), bases[b]);
	}
}

int chk_cmd_p2p(const chk_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_comm *comm = NULL;
	llmp_status st = chk_init(args, &ctx);
	int kind;

	if (st != LLMP_OK) {
		report_expect(false, "llmp_init: %s: %s", llmp_strerror(st), ctx ? llmp_errmsg(ctx) : "");
		llmp_finalize(ctx);
		return report_summary();
	}
	kind = strcmp(args->group, "world") == 0 ? -1 : llmp_group_from_name(args->group);
	if (kind == -1 && strcmp(args->group, "world") != 0) {
		fprintf(stderr, "rt_check: --group %s: no such group\n", args->group);
		llmp_finalize(ctx);
		return 2;
	}
	st = kind < 0 ? llmp_comm_world(ctx, &comm) : llmp_comm_get(ctx, (enum llmp_group)kind, &comm);
	if (!report_expect(st == LLMP_OK && comm, "llmp_comm_get(%s): %s: %s", args->group, llmp_strerror(st),
			   llmp_errmsg(ctx))) {
		llmp_finalize(ctx);
		return report_summary();
	}
	stages p = {
		ctx, comm, llmp_comm_name(comm), llmp_comm_size(comm), llmp_comm_rank(comm), NULL, false
	};
	/* a test that cannot send anything would pass vacuously: refuse it */
	if (!report_expect(p.n >= 2, "the %s group has %u member: p2p needs a layout where it has 2 or more",
			   args->group, p.n)) {
		llmp_finalize(ctx);
		return report_summary();
	}
	p.wranks = calloc(p.n, sizeof *p.wranks);
	if (!p.wranks)
		return 2;
	for (uint32_t r = 0; r < p.n; r++)
		p.wranks[r] = llmp_comm_world_rank(comm, r);

	double t0 = chk_now();
	forward_backward(&p);
	if (!p.broken)
		burst(&p);
	if (!p.broken)
		sendrecv_patterns(&p);
	report_note("p2p along %s (stage %u of %u): %.2f s", p.name, p.me, p.n, chk_now() - t0);
	/* everyone done before anyone leaves */
	if (!p.broken) {
		st = llmp_barrier(comm);
		report_expect(st == LLMP_OK, "final barrier: %s: %s", llmp_strerror(st), llmp_errmsg(ctx));
	}
	free(p.wranks);
	st = llmp_finalize(ctx);
	report_expect(st == LLMP_OK, "llmp_finalize: %s", llmp_strerror(st));
	return report_summary();
}

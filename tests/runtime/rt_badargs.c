/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_badargs.c - every call with a bad argument returns an error status
 * (never LLMP_OK), says why in llmp_errmsg when it has a context to say it
 * in, and never crashes; and the communicator still works afterwards,
 * since a bad argument is caught before anything is sent.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"

#include <stdio.h>
#include <string.h>

/* A call that must fail: status not OK, and a message on ctx if there is one. */
static void refused(llmp_ctx *ctx, const char *call, llmp_status st)
{
	const char *msg = ctx ? llmp_errmsg(ctx) : NULL;
	if (!report_expect(st != LLMP_OK, "%s returned LLMP_OK", call))
		return;
	if (ctx)
		report_expect(msg && *msg, "%s returned %s with an empty llmp_errmsg", call,
			      llmp_strerror(st));
	report_note("%s -> %s: %s", call, llmp_strerror(st), msg ? msg : "(no context)");
}

/* llmp_init refuses a malformed layout and one that does not fit the world. */
static void bad_inits(void)
{
	static const struct {
		const char *spec;
		llmp_status want;
	} cases[] = {
		{ "tp=x", LLMP_ERR_SPEC },
		{ "tp=2,tp=4", LLMP_ERR_SPEC },
		{ "xp=2", LLMP_ERR_SPEC },
		{ "tp=4096", LLMP_ERR_LAYOUT }, /* more than any world this test runs in */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		llmp_init_opts opts;
		llmp_ctx *ctx = NULL;
		char call[96];
		llmp_init_opts_default(&opts);
		opts.spec = cases[i].spec;
		llmp_status st = llmp_init(&opts, &ctx);
		snprintf(call, sizeof call, "llmp_init(spec=%s)", cases[i].spec);
		refused(ctx, call, st);
		report_expect(st == cases[i].want, "%s returned %s, expected %s", call, llmp_strerror(st),
			      llmp_strerror(cases[i].want));
		llmp_finalize(ctx);
	}
	refused(NULL, "llmp_init(opts, NULL)", llmp_init(NULL, NULL));

	/* The size the options carry (doc/abi.md): 0 reads as version 1, the rest as it says. */
	static const struct {
		size_t size;
		llmp_status want;
		const char *words;
	} sizes[] = {
		{ 0, LLMP_ERR_SPEC, "tp=x" }, /* read: the spec is refused, not the size */
		{ sizeof(size_t), LLMP_ERR_ARG, "llmp_init_opts.size is 8, smaller than any version" },
		{ sizeof(llmp_init_opts) + 8, LLMP_ERR_ARG, "newer llmp header" },
	};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		llmp_init_opts opts = { .size = sizes[i].size, .spec = "tp=x" };
		llmp_ctx *ctx = NULL;
		char call[96];
		llmp_status st = llmp_init(&opts, &ctx);
		snprintf(call, sizeof call, "llmp_init(size=%zu, spec=tp=x)", sizes[i].size);
		refused(ctx, call, st);
		report_expect(st == sizes[i].want && ctx && strstr(llmp_errmsg(ctx), sizes[i].words),
			      "%s returned %s (%s), expected %s saying '%s'", call, llmp_strerror(st),
			      ctx ? llmp_errmsg(ctx) : "no context", llmp_strerror(sizes[i].want),
			      sizes[i].words);
		llmp_finalize(ctx);
	}
}

static void bad_context_calls(llmp_ctx *ctx)
{
	llmp_stats s;
	llmp_comm *c = NULL;

	refused(NULL, "llmp_get_stats(NULL, &s)", llmp_get_stats(NULL, &s));
	refused(ctx, "llmp_get_stats(ctx, NULL)", llmp_get_stats(ctx, NULL));
	refused(NULL, "llmp_comm_get(NULL, tp, &c)", llmp_comm_get(NULL, LLMP_GROUP_TP, &c));
	refused(ctx, "llmp_comm_get(ctx, tp, NULL)", llmp_comm_get(ctx, LLMP_GROUP_TP, NULL));
	refused(ctx, "llmp_comm_get(ctx, LLMP_NGROUPS, &c)", llmp_comm_get(ctx, LLMP_NGROUPS, &c));
	refused(ctx, "llmp_comm_get(ctx, -1, &c)", llmp_comm_get(ctx, (enum llmp_group) - 1, &c));
	refused(NULL, "llmp_comm_world(NULL, &c)", llmp_comm_world(NULL, &c));
	refused(ctx, "llmp_comm_world(ctx, NULL)", llmp_comm_world(ctx, NULL));
	report_expect(llmp_errmsg(NULL) != NULL, "llmp_errmsg(NULL) returned NULL");
	report_expect(llmp_strerror((llmp_status)1000) != NULL, "llmp_strerror(1000) returned NULL");
}

static void bad_collectives(llmp_ctx *ctx, llmp_comm *w)
{
	float a[64] = { 0 }, b[64 * 64];
	uint32_t n = llmp_comm_size(w);
	const llmp_dtype bad_dt[] = { LLMP_NDTYPES, (llmp_dtype)-1 };
	const llmp_op bad_op[] = { LLMP_NOPS, (llmp_op)-1 };

	refused(NULL, "allreduce(NULL comm)", llmp_allreduce(NULL, a, b, 1, LLMP_FLOAT32, LLMP_SUM));
	refused(ctx, "allreduce(sendbuf NULL, count 1)",
		llmp_allreduce(w, NULL, b, 1, LLMP_FLOAT32, LLMP_SUM));
	refused(ctx, "allreduce(recvbuf NULL, count 1)",
		llmp_allreduce(w, a, NULL, 1, LLMP_FLOAT32, LLMP_SUM));
	for (int i = 0; i < 2; i++) {
		refused(ctx, "allreduce(bad dtype)", llmp_allreduce(w, a, b, 1, bad_dt[i], LLMP_SUM));
		refused(ctx, "allreduce(bad op)", llmp_allreduce(w, a, b, 1, LLMP_FLOAT32, bad_op[i]));
		refused(ctx, "reduce_scatter(bad dtype)",
			llmp_reduce_scatter(w, b, a, 1, bad_dt[i], LLMP_SUM));
		refused(ctx, "reduce_scatter(bad op)",
			llmp_reduce_scatter(w, b, a, 1, LLMP_FLOAT32, bad_op[i]));
		refused(ctx, "allgather(bad dtype)", llmp_allgather(w, a, b, 1, bad_dt[i]));
		refused(ctx, "broadcast(bad dtype)", llmp_broadcast(w, a, b, 1, bad_dt[i], 0));
	}
	refused(NULL, "reduce_scatter(NULL comm)",
		llmp_reduce_scatter(NULL, b, a, 1, LLMP_FLOAT32, LLMP_SUM));
	refused(ctx, "reduce_scatter(sendbuf NULL)",
		llmp_reduce_scatter(w, NULL, a, 1, LLMP_FLOAT32, LLMP_SUM));
	refused(ctx, "reduce_scatter(recvbuf NULL)",
		llmp_reduce_scatter(w, b, NULL, 1, LLMP_FLOAT32, LLMP_SUM));
	refused(NULL, "allgather(NULL comm)", llmp_allgather(NULL, a, b, 1, LLMP_FLOAT32));
	refused(ctx, "allgather(sendbuf NULL)", llmp_allgather(w, NULL, b, 1, LLMP_FLOAT32));
	refused(ctx, "allgather(recvbuf NULL)", llmp_allgather(w, a, NULL, 1, LLMP_FLOAT32));
	refused(NULL, "broadcast(NULL comm)", llmp_broadcast(NULL, a, b, 1, LLMP_FLOAT32, 0));
	refused(ctx, "broadcast(recvbuf NULL)", llmp_broadcast(w, a, NULL, 1, LLMP_FLOAT32, 0));
	refused(ctx, "broadcast(root = size)", llmp_broadcast(w, a, b, 1, LLMP_FLOAT32, n));
	refused(ctx, "broadcast(root = UINT32_MAX)", llmp_broadcast(w, a, b, 1, LLMP_FLOAT32, UINT32_MAX));
	refused(NULL, "barrier(NULL comm)", llmp_barrier(NULL));
}

static void bad_p2p(llmp_ctx *ctx, llmp_comm *w)
{
	float a[16] = { 0 }, b[16];
	uint32_t n = llmp_comm_size(w), me = llmp_comm_rank(w), other = (me + 1) % n;

	refused(NULL, "send(NULL comm)", llmp_send(NULL, a, 1, LLMP_FLOAT32, other));
	refused(ctx, "send(buf NULL, count 1)", llmp_send(w, NULL, 1, LLMP_FLOAT32, other));
	refused(ctx, "send(bad dtype)", llmp_send(w, a, 1, LLMP_NDTYPES, other));
	refused(ctx, "send(peer = size)", llmp_send(w, a, 1, LLMP_FLOAT32, n));
	refused(ctx, "send(to self)", llmp_send(w, a, 1, LLMP_FLOAT32, me));
	refused(NULL, "recv(NULL comm)", llmp_recv(NULL, b, 1, LLMP_FLOAT32, other));
	refused(ctx, "recv(buf NULL, count 1)", llmp_recv(w, NULL, 1, LLMP_FLOAT32, other));
	refused(ctx, "recv(bad dtype)", llmp_recv(w, b, 1, LLMP_NDTYPES, other));
	refused(ctx, "recv(peer = size)", llmp_recv(w, b, 1, LLMP_FLOAT32, n));
	refused(ctx, "recv(from self)", llmp_recv(w, b, 1, LLMP_FLOAT32, me));
	refused(NULL, "sendrecv(NULL comm)", llmp_sendrecv(NULL, a, 1, other, b, 1, other, LLMP_FLOAT32));
	refused(ctx, "sendrecv(dst = size)", llmp_sendrecv(w, a, 1, n, b, 1, other, LLMP_FLOAT32));
	refused(ctx, "sendrecv(src = size)", llmp_sendrecv(w, a, 1, other, b, 1, n, LLMP_FLOAT32));
	refused(ctx, "sendrecv(sendbuf NULL)", llmp_sendrecv(w, NULL, 1, other, b, 1, other, LLMP_FLOAT32));
	refused(ctx, "sendrecv(recvbuf NULL)", llmp_sendrecv(w, a, 1, other, NULL, 1, other, LLMP_FLOAT32));
	refused(ctx, "sendrecv(bad dtype)", llmp_sendrecv(w, a, 1, other, b, 1, other, LLMP_NDTYPES));
}

int chk_cmd_badargs(const chk_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_comm *world = NULL;
	llmp_status st;

	if (!args->skip_bad_init)
		bad_inits();
	st = chk_init(args, &ctx);
	if (!report_expect(st == LLMP_OK, "llmp_init: %s: %s", llmp_strerror(st),
			   ctx ? llmp_errmsg(ctx) : "")) {
		llmp_finalize(ctx);
		return report_summary();
	}
	bad_context_calls(ctx);
	st = llmp_comm_world(ctx, &world);
	if (report_expect(st == LLMP_OK && world, "llmp_comm_world: %s", llmp_strerror(st))) {
		uint32_t n = llmp_comm_size(world);
		report_expect(llmp_comm_world_rank(world, n) == UINT32_MAX,
			      "llmp_comm_world_rank(world, size) is not UINT32_MAX");
		bad_collectives(ctx, world);
		bad_p2p(ctx, world);
		/* still usable: the bad calls sent nothing */
		int32_t one = 1, sum = 0;
		st = llmp_allreduce(world, &one, &sum, 1, LLMP_INT32, LLMP_SUM);
		report_expect(st == LLMP_OK && sum == (int32_t)n,
			      "allreduce after the bad calls: %s, sum %d of %u ranks: %s", llmp_strerror(st),
			      sum, n, llmp_errmsg(ctx));
	}
	report_expect(llmp_finalize(NULL) == LLMP_OK, "llmp_finalize(NULL) is not accepted");
	st = llmp_finalize(ctx);
	report_expect(st == LLMP_OK, "llmp_finalize: %s", llmp_strerror(st));
	return report_summary();
}

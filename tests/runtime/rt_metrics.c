/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_metrics.c - llmp_comm_get_stats against bytes computed here: each
 * collective's bytes per rank from the algorithm libllmp uses over UCX
 * (recursive doubling below the ring threshold, the ring above it, the
 * ring allgather), worked out independently of the runtime; and, with
 * --sleep S, a rank (--victim) slowed on purpose: the others wait about S
 * per call and blame it, it waits for nobody. Time inside calls: counted
 * for every call of TIMED_COUNT elements or more, and for a random sample
 * of the smaller ones (doc/metrics-json.md), seen over many.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOW_CALLS 6

/* Calls of this many elements or more are always timed; smaller ones one in 64 on average. */
#define TIMED_COUNT 16384
#define SMALL_CALLS 4096 /* none timed: a chance of (63/64)^4096, about 1e-28 */

static llmp_comm_stats stats_of(llmp_comm *comm)
{
	llmp_comm_stats s;
	llmp_status st = llmp_comm_get_stats(comm, &s);
	report_expect(st == LLMP_OK, "llmp_comm_get_stats on %s: %s", llmp_comm_name(comm),
		      llmp_strerror(st));
	return s;
}

/* Bytes each way of recursive doubling of `bytes` on member r of n (runtime/coll/allreduce.c's scheme). */
static uint64_t doubling_bytes(uint32_t n, uint32_t r, uint64_t bytes, bool sent)
{
	uint32_t pow2 = 1, rounds = 0;
	while (pow2 * 2 <= n) {
		pow2 *= 2;
		rounds++;
	}
	uint32_t extra = n - pow2;
	if (r < 2 * extra && r % 2 == 0)
		return bytes; /* hands its data over (sent), gets the result back (received) */
	uint64_t b = rounds * bytes;
	if (r < 2 * extra)
		b += bytes; /* odd partner: receives the even one's data, sends the result back */
	(void)sent;
	return b;
}

static void expect_delta(llmp_comm *comm, const char *what, size_t count, const llmp_comm_stats *before,
			 uint64_t sent, uint64_t recvd, uint64_t ops)
{
	llmp_comm_stats after = stats_of(comm);
	const char *name = llmp_comm_name(comm);
	report_expect(after.bytes_sent - before->bytes_sent == sent,
		      "%s on %s: %llu bytes sent, expected %llu", what, name,
		      (unsigned long long)(after.bytes_sent - before->bytes_sent), (unsigned long long)sent);
	report_expect(after.bytes_received - before->bytes_received == recvd,
		      "%s on %s: %llu bytes received, expected %llu", what, name,
		      (unsigned long long)(after.bytes_received - before->bytes_received),
		      (unsigned long long)recvd);
	report_expect(after.ops - before->ops == ops, "%s on %s: %llu ops counted, expected %llu", what, name,
		      (unsigned long long)(after.ops - before->ops), (unsigned long long)ops);
	if (count >= TIMED_COUNT)
		report_expect(after.seconds > before->seconds, "%s on %s: no time counted", what, name);
	else
		report_expect(after.seconds >= before->seconds, "%s on %s: time went down", what, name);
}

/* Many small calls: some were sampled, and their time counted. */
static void check_small_calls_timed(llmp_ctx *ctx, llmp_comm *comm)
{
	llmp_comm_stats s = stats_of(comm);
	float x = 1;
	for (int i = 0; i < SMALL_CALLS; i++)
		if (!report_expect(llmp_allreduce(comm, &x, &x, 1, LLMP_FLOAT32, LLMP_MAX) == LLMP_OK,
				   "allreduce: %s", llmp_errmsg(ctx)))
			return;
	llmp_comm_stats after = stats_of(comm);
	report_expect(after.ops - s.ops == SMALL_CALLS, "%llu ops counted for %d calls",
		      (unsigned long long)(after.ops - s.ops), SMALL_CALLS);
	report_expect(after.seconds > s.seconds, "%d small allreduces on %s: no time counted", SMALL_CALLS,
		      llmp_comm_name(comm));
}

/* The byte counts of allreduce (both algorithms) and allgather on comm. */
static void check_bytes(llmp_ctx *ctx, llmp_comm *comm, size_t ring_threshold)
{
	uint32_t n = llmp_comm_size(comm), r = llmp_comm_rank(comm);
	size_t block = ring_threshold / sizeof(float) / n + 1024; /* elements per member: the ring */
	size_t count = block * n;
	float *a = calloc(count, sizeof *a), *b = calloc(count, sizeof *b);
	if (!report_expect(a && b, "out of memory")) {
		free(a);
		free(b);
		return;
	}
	llmp_comm_stats s = stats_of(comm);
	llmp_status st = llmp_allreduce(comm, a, b, 2, LLMP_FLOAT32, LLMP_SUM);
	report_expect(st == LLMP_OK, "allreduce: %s", llmp_errmsg(ctx));
	expect_delta(comm, "allreduce of 8 bytes", 2, &s, doubling_bytes(n, r, 8, true),
		     doubling_bytes(n, r, 8, false), 1);

	s = stats_of(comm);
	st = llmp_allreduce(comm, a, b, count, LLMP_FLOAT32, LLMP_SUM);
	report_expect(st == LLMP_OK, "allreduce: %s", llmp_errmsg(ctx));
	/* reduce-scatter and allgather around the ring: n - 1 blocks out and in, twice */
	uint64_t ring = 2 * (uint64_t)(n - 1) * block * sizeof(float);
	expect_delta(comm, "ring allreduce", count, &s, ring, ring, 1);

	s = stats_of(comm);
	st = llmp_allgather(comm, a, b, block, LLMP_FLOAT32);
	report_expect(st == LLMP_OK, "allgather: %s", llmp_errmsg(ctx));
	uint64_t gathered = (uint64_t)(n - 1) * block * sizeof(float);
	expect_delta(comm, "allgather", block, &s, gathered, gathered, 1);
	report_note("bytes counted on %s (size %u): doubling %llu, ring %llu, allgather %llu",
		    llmp_comm_name(comm), n, (unsigned long long)doubling_bytes(n, r, 8, true),
		    (unsigned long long)ring, (unsigned long long)gathered);
	free(a);
	free(b);
}

/* The victim sleeps before each of SLOW_CALLS allreduces on the world. */
static void check_straggler(llmp_ctx *ctx, const chk_args *args)
{
	llmp_comm *world;
	if (!report_expect(llmp_comm_world(ctx, &world) == LLMP_OK, "world: %s", llmp_errmsg(ctx)))
		return;
	uint32_t me = llmp_rank(ctx), n = llmp_world_size(ctx), victim = args->victim;
	double sleep_s = args->sleep_s;
	if (!report_expect(victim < n, "--victim %u: the world has %u ranks", victim, n))
		return;
	llmp_barrier(world);
	llmp_comm_stats s = stats_of(world);
	float x = 1;
	for (int i = 0; i < SLOW_CALLS; i++) {
		if (me == victim)
			chk_sleep(sleep_s);
		llmp_status st = llmp_allreduce(world, &x, &x, 1, LLMP_FLOAT32, LLMP_MAX);
		report_expect(st == LLMP_OK, "allreduce: %s", llmp_errmsg(ctx));
	}
	llmp_comm_stats after = stats_of(world);
	double waited = after.wait_seconds - s.wait_seconds;
	double expect = SLOW_CALLS * sleep_s;
	report_note("straggler: waited %.3f s in %llu calls; last member %u (%llu times, %.3f s)", waited,
		    (unsigned long long)(after.waits - s.waits), after.last_member,
		    (unsigned long long)after.last_member_times, after.last_member_wait_seconds);
	if (me == victim) {
		report_expect(waited < 0.5 * expect, "the slowed rank waited %.3f s (others' sleep: %.3f s)",
			      waited, expect);
		return;
	}
	report_expect(waited > 0.5 * expect && waited < 2 * expect + 1,
		      "waited %.3f s for the slowed rank %u, expected about %.3f s", waited, victim, expect);
	if (n == 2) /* the one peer: blamed for every wait */
		report_expect(after.last_member == victim && after.last_member_times >= SLOW_CALLS,
			      "last member %u (%llu times), expected %u", after.last_member,
			      (unsigned long long)after.last_member_times, victim);
	uint64_t times;
	double secs;
	report_expect(llmp_comm_member_waits(world, n, &times, &secs) == LLMP_ERR_RANGE,
		      "llmp_comm_member_waits accepted member %u of %u", n, n);
}

int chk_cmd_metrics(const chk_args *args)
{
	chk_args a = *args;
	if (!a.shm_threshold)
		a.shm_threshold = SIZE_MAX; /* the UCX algorithms, whose bytes are worked out above */
	if (!a.ring_threshold)
		a.ring_threshold = 64 << 10;
	llmp_ctx *ctx;
	llmp_status st = chk_init(&a, &ctx);
	if (!report_expect(st == LLMP_OK, "llmp_init: %s: %s", llmp_strerror(st),
			   ctx ? llmp_errmsg(ctx) : "")) {
		llmp_finalize(ctx);
		return report_summary();
	}
	llmp_comm *comm;
	if (llmp_comm_world(ctx, &comm) == LLMP_OK && llmp_comm_size(comm) > 1) {
		check_bytes(ctx, comm, a.ring_threshold);
		check_small_calls_timed(ctx, comm);
	}
	for (int g = 0; g < LLMP_NGROUPS; g++)
		if (llmp_comm_get(ctx, (enum llmp_group)g, &comm) == LLMP_OK && llmp_comm_size(comm) > 1)
			check_bytes(ctx, comm, a.ring_threshold);
	if (args->sleep_s > 0)
		check_straggler(ctx, args);
	llmp_finalize(ctx);
	return report_summary();
}

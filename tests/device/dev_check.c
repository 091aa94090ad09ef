/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_check.c - the device path seen from a program, through the public
 * API only (llmp_device.h): run under srun --mpi=pmix by tests/device.bats.
 *
 *   dev_check [--connect] [--timeout S] [--ops] [--loop S] [--exit-after-connect R] [--late R MS]
 *
 * Each rank prints, after llmp_init:
 *   "rank R: device ENABLED groups G created C fetched F fences N"
 *   "rank R: why-not TEXT"                     (when not enabled)
 *   "rank R: ucx-cuda yes|no"                  (whether UCX moves CUDA memory)
 * and with --connect, after llmp_device_connect:
 *   "rank R: connect STATUS comms K: MESSAGE"
 * --ops then calls each device collective once on the tp group and the
 * world (bf16 average for the reductions, 1000 elements, root 1), and
 * --loop S allreduces on the world for up to S seconds, until a call
 * fails: "rank R: ops STATUS after T s: MESSAGE". The buffers are not
 * device memory: only NCCL's test double (tests/device/fake_nccl.c), which
 * moves nothing, may run these. --exit-after-connect R: rank R leaves at
 * once after connecting (a member that dies). --p2p: a ring step on the
 * world, sending 100 floats to the next rank and receiving from the
 * previous, once through llmp_device_sendrecv and once in a group of
 * llmp_device_send and llmp_device_recv. --late R MS: rank R starts its
 * operations MS milliseconds after the others (which the test double lets
 * finish without it), so they are done and in llmp_finalize, or gone,
 * while it works. --cuda: the operations go on a
 * stream of the CUDA test double (open_cuda), so each one gets a deadline;
 * after connecting, each rank prints "rank R: deadline on|off: WHY".
 * --work-us W (with --cuda, and FAKE_NCCL_WORK_US=W giving each NCCL
 * operation W us of work on the stream): after the operations, the stream
 * synchronised, wait (up to 10 s) until the tp group's and the world's time
 * in calls holds at least W per device operation made on it, as the GPU
 * time of each must, then print "rank R: device time tp ops N seconds S
 * world ops N seconds S". --job: the operations as step 0 of a job
 * (llmp_job.h: LLMP_CHECKPOINT, LLMP_METRICS from the environment), which
 * writes the metrics files; the world's counters then hold its host calls.
 * --count N: the elements of --loop's allreduces (default 1000; from
 * 16384 on, LLMP_DEVICE_TIMING=sampled times every one). --hold-stream
 * (with --cuda): a second stream, and the first one held by a host
 * function from the start until the loop ends (a stream the GPU never gets
 * past, while the other keeps up); --loop's allreduces alternate between
 * them. --world-time: after the loop, each stream synchronised (the held
 * one released) and 200 ms for the watchdog to count, "rank R: world ops N
 * seconds S", the world's counters.
 * A failed llmp_init prints "rank ?: init STATUS: MESSAGE". The exit
 * status is 0 when every call the rank made returned LLMP_OK, else 1;
 * what a test expects is checked by the test, from these lines.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dlfcn.h>
#include <pthread.h>

#include <llmp/llmp.h>
#include <llmp/llmp_device.h>
#include <llmp/llmp_job.h>

/* The stream the operations go on: NULL (the default stream), or --cuda's. */
static void *stream;
/* --cuda: the test double's cuStreamSynchronize. */
static int (*stream_synchronize)(void *);
/* --hold-stream: the second stream, and whether the first is held. */
static void *stream2;
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static bool held;

/* Run on the first stream: it gets past this only once released. */
static void hold(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&hold_lock);
	while (held)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
}

static void release(void)
{
	pthread_mutex_lock(&hold_lock);
	held = false;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
}

/*
 * --cuda: the CUDA test double (tests/device/fake_cuda.c, LLMP_CUDA_LIBRARY)
 * as this program's driver, as a PyTorch program has the real one: a
 * context current in this thread and a stream of the program's own.
 */
static int open_cuda(bool hold_first, char *why, size_t len)
{
	const char *lib = getenv("LLMP_CUDA_LIBRARY");
	void *driver = lib ? dlopen(lib, RTLD_NOW | RTLD_GLOBAL) : NULL;
	int (*init)(unsigned) = NULL, (*device_get)(int *, int) = NULL, (*retain)(void **, int) = NULL,
	    (*push)(void *) = NULL, (*create)(void **, unsigned) = NULL,
	    (*launch)(void *, void (*)(void *), void *) = NULL;
	if (driver) {
		*(void **)&init = dlsym(driver, "cuInit");
		*(void **)&device_get = dlsym(driver, "cuDeviceGet");
		*(void **)&retain = dlsym(driver, "cuDevicePrimaryCtxRetain");
		*(void **)&push = dlsym(driver, "cuCtxPushCurrent_v2");
		*(void **)&create = dlsym(driver, "cuStreamCreate");
		*(void **)&stream_synchronize = dlsym(driver, "cuStreamSynchronize");
		*(void **)&launch = dlsym(driver, "cuLaunchHostFunc");
	}
	if (!init || !device_get || !retain || !push || !create || !stream_synchronize || !launch) {
		snprintf(why, len, "--cuda: LLMP_CUDA_LIBRARY=%s: %s", lib ? lib : "(unset)",
			 driver ? "a driver call is missing" : dlerror());
		return 1;
	}
	int dev = 0, rc = init(0);
	void *ctx = NULL;
	rc = rc ? rc : device_get(&dev, 0);
	rc = rc ? rc : retain(&ctx, dev);
	rc = rc ? rc : push(ctx);
	rc = rc ? rc : create(&stream, 1);
	if (hold_first) {
		held = true;
		rc = rc ? rc : create(&stream2, 1);
		rc = rc ? rc : launch(stream, hold, NULL);
	}
	if (rc)
		snprintf(why, len, "--cuda: the CUDA test double failed with %d", rc);
	return rc;
}

/* The collectives of --ops, then --loop's allreduces; the first failure ends them. */
static llmp_status run_p2p(llmp_ctx *ctx)
{
	static float send[100], recv[100];
	llmp_comm *world = NULL;
	llmp_status st = llmp_comm_world(ctx, &world);
	uint32_t n = st == LLMP_OK ? llmp_comm_size(world) : 1,
		 me = st == LLMP_OK ? llmp_comm_rank(world) : 0;
	uint32_t next = (me + 1) % n, prev = (me + n - 1) % n;
	if (st == LLMP_OK)
		st = llmp_device_sendrecv(world, send, 100, next, recv, 100, prev, LLMP_FLOAT32, stream);
	if (st == LLMP_OK)
		st = llmp_device_group_start(ctx);
	if (st == LLMP_OK) {
		st = llmp_device_send(world, send, 100, LLMP_FLOAT32, next, stream);
		if (st == LLMP_OK)
			st = llmp_device_recv(world, recv, 100, LLMP_FLOAT32, prev, stream);
		llmp_status end = llmp_device_group_end(ctx);
		st = st != LLMP_OK ? st : end;
	}
	if (st == LLMP_OK) /* refused: a peer that is not another member */
		st = llmp_device_send(world, send, 100, LLMP_FLOAT32, me, stream) == LLMP_ERR_ARG
			     ? LLMP_OK
			     : LLMP_ERR_STATE;
	return st;
}

static llmp_status run_ops(llmp_ctx *ctx, bool ops, double loop, size_t count, double *elapsed)
{
	/* Room for a world of 64, and for --count 64000 (NCCL's double reads and writes none of it). */
	static uint16_t send[2 * 1000 * 64], recv[2 * 1000 * 64];
	llmp_comm *tp = NULL, *world = NULL;
	llmp_status st = llmp_comm_world(ctx, &world);
	if (st == LLMP_OK && ops)
		st = llmp_comm_get(ctx, LLMP_GROUP_TP, &tp);
	if (st == LLMP_OK && ops)
		for (int i = 0; i < 2 && st == LLMP_OK; i++) {
			llmp_comm *c = i ? world : tp;
			st = llmp_device_allreduce(c, send, recv, 1000, LLMP_BFLOAT16, LLMP_AVG, stream);
			if (st == LLMP_OK)
				st = llmp_device_reduce_scatter(c, send, recv, 1000, LLMP_BFLOAT16, LLMP_AVG,
								stream);
			if (st == LLMP_OK)
				st = llmp_device_allgather(c, send, recv, 1000, LLMP_BFLOAT16, stream);
			if (st == LLMP_OK)
				st = llmp_device_broadcast(c, send, recv, 1000, LLMP_BFLOAT16, 1, stream);
		}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned long i = 0;
	for (*elapsed = 0; st == LLMP_OK && *elapsed < loop; i++) {
		void *s = stream2 && i % 2 ? stream2 : stream;
		st = llmp_device_allreduce(world, send, recv, count, LLMP_FLOAT32, LLMP_SUM, s);
		struct timespec pause = { 0, 1000000 };
		nanosleep(&pause, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
		*elapsed = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9;
	}
	return st;
}

/* --job: open and resume a job, whose step 0 the operations are. */
static llmp_status open_job(llmp_ctx *ctx, llmp_job **job)
{
	uint64_t next = 0;
	size_t metalen = 0;
	llmp_status st = llmp_job_open(ctx, NULL, job);
	if (st == LLMP_OK)
		st = llmp_job_resume(*job, &next, NULL, 0, &metalen);
	if (st != LLMP_OK)
		printf("rank %u: job %s: %s\n", llmp_rank(ctx), llmp_strerror(st),
		       *job ? llmp_job_errmsg(*job) : llmp_errmsg(ctx));
	return st;
}

static double comm_seconds(llmp_comm *c, uint64_t *ops)
{
	llmp_comm_stats cs = { 0 };
	if (c)
		llmp_comm_get_stats(c, &cs);
	*ops = cs.ops;
	return cs.seconds;
}

/* The tp group's and the world's counters: calls and time in them. */
struct two_counts {
	uint64_t tp_ops, world_ops;
	double tp_s, world_s;
};

static struct two_counts counts_now(llmp_ctx *ctx)
{
	llmp_comm *tp = NULL, *world = NULL;
	struct two_counts c;
	llmp_comm_get(ctx, LLMP_GROUP_TP, &tp);
	llmp_comm_world(ctx, &world);
	c.tp_s = comm_seconds(tp, &c.tp_ops);
	c.world_s = comm_seconds(world, &c.world_ops);
	return c;
}

/*
 * --work-us: each device operation on tp and the world took at least work_us
 * on the stream; once the stream is done, the watchdog counts their GPU time
 * within a few of its 20 ms looks. Wait for it, then a little more, so that
 * a time counted twice shows too; print what was added since `before`
 * (the world holds the job layer's host calls before it).
 */
static void print_device_time(llmp_ctx *ctx, uint32_t rank, double work_us, unsigned tp_ops,
			      unsigned world_ops, struct two_counts before)
{
	struct two_counts c = counts_now(ctx);
	if (stream_synchronize(stream) != 0)
		printf("rank %u: cuStreamSynchronize failed\n", rank);
	for (int i = 0; i < 1000; i++) {
		c = counts_now(ctx);
		if (c.tp_s - before.tp_s >= tp_ops * work_us * 1e-6 &&
		    c.world_s - before.world_s >= world_ops * work_us * 1e-6)
			break;
		struct timespec pause = { 0, 10 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
	struct timespec more = { 0, 200 * 1000 * 1000 };
	nanosleep(&more, NULL);
	c = counts_now(ctx);
	printf("rank %u: device time tp ops %llu seconds %.6f world ops %llu seconds %.6f\n", rank,
	       (unsigned long long)(c.tp_ops - before.tp_ops), c.tp_s - before.tp_s,
	       (unsigned long long)(c.world_ops - before.world_ops), c.world_s - before.world_s);
}

/*
 * --world-time: the world's counters once every stream is done (the held
 * one released) and the watchdog had 200 ms, ten looks, to count.
 */
static void print_world_time(llmp_ctx *ctx, uint32_t rank)
{
	llmp_comm *world = NULL;
	uint64_t ops = 0;
	release();
	if (stream_synchronize(stream) != 0 || (stream2 && stream_synchronize(stream2) != 0))
		printf("rank %u: cuStreamSynchronize failed\n", rank);
	struct timespec pause = { 0, 200 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	llmp_comm_world(ctx, &world);
	double seconds = comm_seconds(world, &ops);
	printf("rank %u: world ops %llu seconds %.6f\n", rank, (unsigned long long)ops, seconds);
}

int main(int argc, char **argv)
{
	bool connect = false, ops = false, p2p = false, cuda = false, job_step = false, hold_first = false,
	     world_time = false;
	double loop = 0, work_us = 0;
	size_t count = 1000;
	long leaver = -1, late = -1, late_ms = 0;
	llmp_init_opts opts;
	llmp_init_opts_default(&opts);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--connect") == 0)
			connect = true;
		else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
			opts.timeout_s = atof(argv[++i]);
		else if (strcmp(argv[i], "--ops") == 0)
			ops = true;
		else if (strcmp(argv[i], "--p2p") == 0)
			p2p = true;
		else if (strcmp(argv[i], "--cuda") == 0)
			cuda = true;
		else if (strcmp(argv[i], "--work-us") == 0 && i + 1 < argc)
			work_us = atof(argv[++i]);
		else if (strcmp(argv[i], "--job") == 0)
			job_step = true;
		else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			count = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--hold-stream") == 0)
			hold_first = true;
		else if (strcmp(argv[i], "--world-time") == 0)
			world_time = true;
		else if (strcmp(argv[i], "--loop") == 0 && i + 1 < argc)
			loop = atof(argv[++i]);
		else if (strcmp(argv[i], "--exit-after-connect") == 0 && i + 1 < argc)
			leaver = atol(argv[++i]);
		else if (strcmp(argv[i], "--late") == 0 && i + 2 < argc) {
			late = atol(argv[++i]);
			late_ms = atol(argv[++i]);
		} else {
			fprintf(stderr,
				"usage: dev_check [--connect] [--timeout S] [--ops] [--loop S] "
				"[--exit-after-connect R] [--late R MS] [--p2p] [--cuda] [--work-us W] "
				"[--job] [--count N] [--hold-stream] [--world-time]\n");
			return 2;
		}
	}
	llmp_ctx *ctx = NULL;
	llmp_job *job = NULL;
	llmp_status st = llmp_init(&opts, &ctx);
	if (st != LLMP_OK) {
		printf("rank ?: init %s: %s\n", llmp_strerror(st), llmp_errmsg(ctx));
		llmp_finalize(ctx);
		return 1;
	}
	uint32_t rank = llmp_rank(ctx);
	llmp_device_info info;
	llmp_stats stats;
	if (llmp_device_get_info(ctx, &info) != LLMP_OK || llmp_get_stats(ctx, &stats) != LLMP_OK) {
		printf("rank %u: llmp_device_get_info or llmp_get_stats failed\n", rank);
		return 1;
	}
	printf("rank %u: device %s groups %u created %u fetched %u fences %u\n", rank,
	       info.enabled ? "on" : "off", info.groups, info.ids_created, info.ids_fetched,
	       stats.init_fences);
	if (!info.enabled)
		printf("rank %u: why-not %s\n", rank, info.why_not);
	printf("rank %u: ucx-cuda %s\n", rank, info.ucx_cuda ? "yes" : "no");
	int rc = 0;
	char why[256];
	if (cuda && open_cuda(hold_first, why, sizeof why) != 0) {
		printf("rank %u: %s\n", rank, why);
		llmp_finalize(ctx);
		return 1;
	}
	if (connect) {
		st = llmp_device_connect(ctx);
		llmp_device_get_info(ctx, &info);
		printf("rank %u: connect %s comms %u: %s\n", rank, st == LLMP_OK ? "ok" : llmp_strerror(st),
		       info.comms, st == LLMP_OK ? "" : llmp_errmsg(ctx));
		if (st == LLMP_OK)
			printf("rank %u: deadline %s: %s\n", rank, info.deadline ? "on" : "off",
			       info.deadline_why);
		rc = st != LLMP_OK;
		fflush(stdout);
		if (st == LLMP_OK && (long)rank == leaver)
			_exit(0); /* gone, without finalize: as a crash would leave it */
		if (st == LLMP_OK && (long)rank == late) {
			struct timespec pause = { late_ms / 1000, late_ms % 1000 * 1000000L };
			nanosleep(&pause, NULL);
		}
		if (st == LLMP_OK && job_step)
			st = open_job(ctx, &job);
		struct two_counts before = counts_now(ctx);
		if (st == LLMP_OK && p2p) {
			st = run_p2p(ctx);
			printf("rank %u: p2p %s: %s\n", rank, st == LLMP_OK ? "ok" : llmp_strerror(st),
			       st == LLMP_OK ? "" : llmp_errmsg(ctx));
			rc = st != LLMP_OK;
		}
		if (st == LLMP_OK && (ops || loop > 0)) {
			double elapsed = 0;
			st = run_ops(ctx, ops, loop, count, &elapsed);
			printf("rank %u: ops %s after %.1f s: %s\n", rank,
			       st == LLMP_OK ? "ok" : llmp_strerror(st), elapsed,
			       st == LLMP_OK ? "" : llmp_errmsg(ctx));
			llmp_comm *tp = NULL;
			llmp_comm_stats cs;
			if (ops && st == LLMP_OK && llmp_comm_get(ctx, LLMP_GROUP_TP, &tp) == LLMP_OK &&
			    llmp_comm_get_stats(tp, &cs) == LLMP_OK)
				printf("rank %u: tp counters: ops %llu sent %llu received %llu\n", rank,
				       (unsigned long long)cs.ops, (unsigned long long)cs.bytes_sent,
				       (unsigned long long)cs.bytes_received);
			rc = st != LLMP_OK;
			if (cuda && world_time)
				print_world_time(ctx, rank);
		}
		if (st == LLMP_OK && cuda && work_us > 0)
			print_device_time(ctx, rank, work_us, ops ? 4 : 0, (ops ? 4 : 0) + (p2p ? 4 : 0),
					  before);
		if (job) {
			llmp_job_action action;
			if (st == LLMP_OK && (st = llmp_job_step_end(job, 0, NULL, 0, &action)) != LLMP_OK)
				printf("rank %u: step_end %s: %s\n", rank, llmp_strerror(st),
				       llmp_job_errmsg(job));
			rc |= llmp_job_finish(job, st) != LLMP_EXIT_DONE;
		}
	}
	fflush(stdout);
	release(); /* a held stream's events are waited for when the context frees them */
	llmp_finalize(ctx);
	return rc;
}

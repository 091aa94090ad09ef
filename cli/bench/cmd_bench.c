/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_bench.c - `llmp bench`: collective bandwidth and latency of libllmp.
 *
 * Launched like any job (srun --mpi=pmix, mpirun, or alone as a world of
 * one). For each collective and group kind it prints a table in
 * nccl-tests' conventions: size, count, type, redop, time, algbw, busbw and
 * #wrong, with busbw = algbw * 2(n-1)/n for allreduce, algbw * (n-1)/n for
 * allgather and reduce-scatter, algbw for broadcast. In the same run it
 * measures single-thread memcpy bandwidth and prints busbw/memcpy.
 *
 * All groups of a kind run at once (every tp group, say), as in training;
 * a time is the slowest rank's average over the iterations.
 *
 * --memory device runs the device path instead (llmp_device.h): buffers in
 * the memory of the GPU LOCAL_RANK picks, the collectives enqueued on one
 * stream, the iterations timed from before the first to after the stream
 * has finished the last (as nccl-tests does); the check copies the inputs
 * to the device and the result back. The driver is loaded with dlopen
 * (bench_cuda.h, over the runtime's driver table). Run on lent H200s
 * against nccl-tests (doc/benchmarks.md).
 */
#define _POSIX_C_SOURCE 200809L

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/half.h"
#include <llmp/llmp.h>
#include <llmp/llmp_device.h>
#include "bench_cuda.h"
#include "bench_gdr.h"
#include "cli/llmp_cli.h"
#include <llmp/llmp_env.h>

#define PROG "llmp bench"

enum coll { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST, NCOLLS };
static const char *const coll_names[NCOLLS] = { "allreduce", "reduce_scatter", "allgather", "broadcast" };

#define GROUP_WORLD LLMP_NGROUPS /* after the planner's kinds */
#define GROUP_ALL (-1)

struct bench_args {
	int coll;  /* enum coll, or -1 for all */
	int group; /* enum llmp_group, GROUP_WORLD or GROUP_ALL */
	uint64_t minbytes, maxbytes, factor, iters, warmup, check, inplace;
	bool device; /* --memory device */
	llmp_dtype dtype;
	llmp_op op;
	const char *spec;
};

/* Everything one measurement needs. */
struct bench {
	const struct bench_args *args;
	llmp_ctx *ctx;
	llmp_comm *world;
	char *send, *recv; /* maxbytes each (allgather receives n times its send) */
	size_t capacity;
	/* --memory device: the buffers the collectives use, in GPU memory; send and recv stage them */
	struct bench_cuda *cuda;
	char *dsend, *drecv;
	struct bench_gdr gdr; /* --memory device: NCCL's GPUDirect RDMA lines against the prediction */
	double memcpy_gbs;
};

static void help(void)
{
	printf("usage: llmp bench [-c COLL] [-g GROUP] [-b MIN] [-e MAX] [-f FACTOR]\n"
	       "                  [-n ITERS] [-w WARMUP] [-d DTYPE] [-o OP] [-C 0|1] [-I 0|1] [-p SPEC]\n\n"
	       "Measure libllmp's collectives; run it with srun --mpi=pmix (or mpirun) like a job.\n"
	       "  -c, --collective C   allreduce, reduce_scatter, allgather, broadcast or all\n"
	       "                       (default allreduce)\n"
	       "  -g, --group G        world, a group of the layout (tp, dp, tp-cp, ...) or all:\n"
	       "                       world and every kind with more than one member (default world)\n"
	       "  -b, --minbytes SIZE  smallest message, e.g. 8, 4K (default 8)\n"
	       "  -e, --maxbytes SIZE  largest message, e.g. 64M (default 64M)\n"
	       "  -f, --stepfactor F   size multiplier between rows (default 2)\n"
	       "  -n, --iters N        timed iterations per size (default 20)\n"
	       "  -w, --warmup N       untimed iterations before them (default 5)\n"
	       "  -d, --dtype T        float32 float64 bfloat16 float16 int32 int64 uint8 (default float32)\n"
	       "  -o, --op OP          sum prod min max avg (default sum)\n"
	       "  -C, --check 0|1      check every result against one computed here (default 1)\n"
	       "  -I, --in-place 0|1   1: the result overwrites the input, as nccl-tests' in-place\n"
	       "                       column (default 0: out of place)\n"
	       "  -p, --parallel SPEC  layout (default: the plugin's LLMP_PARALLEL, else all dp)\n"
	       "  -m, --memory M       host (default) or device: GPU buffers through NCCL, on the GPU\n"
	       "                       LOCAL_RANK picks (llmp_device.h; LLMP_DEVICE must not be off)\n"
	       "                       and, after NCCL's init, its GPUDirect RDMA per HCA against\n"
	       "                       llmp's prediction (NCCL_DEBUG=INFO into a file of its own,\n"
	       "                       unless NCCL_DEBUG is set; doc/gpudirect.md)\n"
	       "Sizes are bytes per rank as in nccl-tests: the buffer reduced (allreduce), the\n"
	       "whole gathered or scattered buffer (allgather, reduce_scatter), the message (broadcast).\n"
	       "Exit status: 0 success, 1 a failed or wrong collective, 2 bad input.\n");
}

static int usage_error(const char *what, const char *text)
{
	fprintf(stderr, PROG ": %s '%s'\n", what, cli_printable(text));
	return CLI_EXIT_USAGE;
}

static int parse_args(int argc, char **argv, struct bench_args *a)
{
	static const struct option options[] = {
		{ "collective", required_argument, NULL, 'c' },
		{ "group", required_argument, NULL, 'g' },
		{ "minbytes", required_argument, NULL, 'b' },
		{ "maxbytes", required_argument, NULL, 'e' },
		{ "stepfactor", required_argument, NULL, 'f' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "op", required_argument, NULL, 'o' },
		{ "check", required_argument, NULL, 'C' },
		{ "parallel", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "in-place", required_argument, NULL, 'I' },
		{ "memory", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	const uint64_t big = UINT64_C(1) << 40;
	int c, v;

	*a = (struct bench_args){ .coll = COLL_ALLREDUCE,
				  .group = GROUP_WORLD,
				  .minbytes = 8,
				  .maxbytes = 64 << 20,
				  .factor = 2,
				  .iters = 20,
				  .warmup = 5,
				  .check = 1,
				  .dtype = LLMP_FLOAT32,
				  .op = LLMP_SUM };
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":c:g:b:e:f:n:w:d:o:C:I:p:m:h", options, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 'c':
			a->coll = -2;
			for (int k = 0; k < NCOLLS; k++)
				if (strcmp(optarg, coll_names[k]) == 0)
					a->coll = k;
			if (strcmp(optarg, "all") == 0)
				a->coll = -1;
			if (a->coll == -2)
				return usage_error("--collective: not a collective:", optarg);
			break;
		case 'g':
			if (strcmp(optarg, "world") == 0)
				a->group = GROUP_WORLD;
			else if (strcmp(optarg, "all") == 0)
				a->group = GROUP_ALL;
			else if ((a->group = llmp_group_from_name(optarg)) < 0)
				return usage_error("--group: not a group name:", optarg);
			break;
		case 'b': bad = cli_parse_size(PROG, "--minbytes", optarg, 1, big, &a->minbytes); break;
		case 'e': bad = cli_parse_size(PROG, "--maxbytes", optarg, 1, big, &a->maxbytes); break;
		case 'f': bad = cli_parse_count(PROG, "--stepfactor", optarg, 2, 1024, &a->factor); break;
		case 'n': bad = cli_parse_count(PROG, "--iters", optarg, 1, 1000000000, &a->iters); break;
		case 'w': bad = cli_parse_count(PROG, "--warmup", optarg, 0, 1000000000, &a->warmup); break;
		case 'C': bad = cli_parse_count(PROG, "--check", optarg, 0, 1, &a->check); break;
		case 'I': bad = cli_parse_count(PROG, "--in-place", optarg, 0, 1, &a->inplace); break;
		case 'd':
			if ((v = llmp_dtype_from_name(optarg)) < 0)
				return usage_error("--dtype: not a dtype:", optarg);
			a->dtype = (llmp_dtype)v;
			break;
		case 'o':
			if ((v = llmp_op_from_name(optarg)) < 0)
				return usage_error("--op: not a reduction:", optarg);
			a->op = (llmp_op)v;
			break;
		case 'p': a->spec = optarg; break;
		case 'm':
			if (strcmp(optarg, "host") != 0 && strcmp(optarg, "device") != 0)
				return usage_error("--memory: expected host or device:", optarg);
			a->device = strcmp(optarg, "device") == 0;
			break;
		case 'h': help(); return -1;
		case ':': return usage_error("missing value for", cli_culprit(argv));
		default: return usage_error("unknown option", cli_culprit(argv));
		}
		if (bad)
			return CLI_EXIT_USAGE;
	}
	if (optind < argc)
		return usage_error("unexpected argument", argv[optind]);
	if (a->device && a->inplace) {
		fprintf(stderr, PROG ": --in-place 1 is for host memory only, so far\n");
		return CLI_EXIT_USAGE;
	}
	if (a->minbytes > a->maxbytes) {
		fprintf(stderr, PROG ": --minbytes is larger than --maxbytes\n");
		return CLI_EXIT_USAGE;
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Best of five single-thread memcpy of `bytes`, in GB/s (1e9 bytes copied per second). */
static double memcpy_bandwidth(char *dst, const char *src, size_t bytes)
{
	double best = 0;
	memcpy(dst, src, bytes); /* fault the pages in */
	for (int i = 0; i < 5; i++) {
		double t = now();
		memcpy(dst, src, bytes);
		t = now() - t;
		if (t > 0 && bytes / t / 1e9 > best)
			best = bytes / t / 1e9;
	}
	return best;
}

/* ---------------------------------------------------------------- checks */

/* A small integer input every rank can recompute: exact in every dtype, sums included. */
static int input_value(uint32_t rank, size_t i, llmp_op op)
{
	if (op == LLMP_PROD)
		return (i + rank) % 5 == 0 ? 2 : 1;
	return (int)((i * 7 + rank * 3) % 11);
}

static void store(llmp_dtype t, void *buf, size_t i, double v)
{
	switch (t) {
	case LLMP_FLOAT32: ((float *)buf)[i] = (float)v; break;
	case LLMP_FLOAT64: ((double *)buf)[i] = v; break;
	case LLMP_BFLOAT16: ((uint16_t *)buf)[i] = kern_f32_to_bf16((float)v); break;
	case LLMP_FLOAT16: ((uint16_t *)buf)[i] = kern_f32_to_f16((float)v); break;
	case LLMP_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case LLMP_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
	default: ((uint8_t *)buf)[i] = (uint8_t)v; break;
	}
}

static double load(llmp_dtype t, const void *buf, size_t i)
{
	switch (t) {
	case LLMP_FLOAT32: return ((const float *)buf)[i];
	case LLMP_FLOAT64: return ((const double *)buf)[i];
	case LLMP_BFLOAT16: return kern_bf16_to_f32(((const uint16_t *)buf)[i]);
	case LLMP_FLOAT16: return kern_f16_to_f32(((const uint16_t *)buf)[i]);
	case LLMP_INT32: return ((const int32_t *)buf)[i];
	case LLMP_INT64: return (double)((const int64_t *)buf)[i];
	default: return ((const uint8_t *)buf)[i];
	}
}

/* The reduction of element i over the members of comm, in double; wraps like the dtype. */
static double expected_reduction(const llmp_comm *comm, size_t i, llmp_op op, llmp_dtype t)
{
	uint32_t n = llmp_comm_size(comm);
	double acc = input_value(llmp_comm_world_rank(comm, 0), i, op);
	for (uint32_t m = 1; m < n; m++) {
		double v = input_value(llmp_comm_world_rank(comm, m), i, op);
		acc = op == LLMP_PROD  ? acc * v
		      : op == LLMP_MIN ? fmin(acc, v)
		      : op == LLMP_MAX ? fmax(acc, v)
				       : acc + v;
	}
	if (t == LLMP_UINT8)
		acc = fmod(acc, 256);
	if (op == LLMP_AVG)
		acc = t == LLMP_INT32 || t == LLMP_INT64 || t == LLMP_UINT8 ? floor(acc / n) : acc / n;
	return acc;
}

static bool close_enough(double got, double want, llmp_dtype t)
{
	double tol = t == LLMP_BFLOAT16  ? 1.0 / 128
		     : t == LLMP_FLOAT16 ? 1.0 / 1024
		     : t == LLMP_FLOAT32 ? 1e-6
					 : 0;
	return fabs(got - want) <= tol * fmax(1, fabs(want));
}

/* Fill the send buffer for one call of coll with `count` elements (per block). */
static void fill_inputs(struct bench *b, const llmp_comm *comm, enum coll coll, size_t count)
{
	const struct bench_args *a = b->args;
	uint32_t me = llmp_rank(b->ctx), n = llmp_comm_size(comm);
	size_t total = coll == COLL_REDUCE_SCATTER ? count * n : count;
	for (size_t i = 0; i < total; i++)
		store(a->dtype, b->send, i, input_value(me, i, a->op));
	if (coll == COLL_BROADCAST)
		for (size_t i = 0; i < total; i++)
			store(a->dtype, b->send, i, (double)((i + llmp_comm_world_rank(comm, 0)) % 100));
}

/* Wrong elements of the result of one call. */
static uint64_t count_wrong(struct bench *b, const llmp_comm *comm, enum coll coll, size_t count)
{
	const struct bench_args *a = b->args;
	uint32_t n = llmp_comm_size(comm), r = llmp_comm_rank(comm);
	uint64_t wrong = 0;
	for (size_t i = 0; i < (coll == COLL_ALLGATHER ? count * n : count); i++) {
		double want;
		if (coll == COLL_ALLREDUCE)
			want = expected_reduction(comm, i, a->op, a->dtype);
		else if (coll == COLL_REDUCE_SCATTER)
			want = expected_reduction(comm, r * count + i, a->op, a->dtype);
		else if (coll == COLL_ALLGATHER)
			want = input_value(llmp_comm_world_rank(comm, (uint32_t)(i / count)), i % count,
					   a->op);
		else
			want = (double)((i + llmp_comm_world_rank(comm, 0)) % 100);
		if (!close_enough(load(a->dtype, b->recv, i), want, a->dtype))
			wrong++;
	}
	return wrong;
}

/* ----------------------------------------------------------------- timing */

/*
 * In place, this rank's block of a blocked buffer: where reduce-scatter
 * leaves its result in the input, and where allgather finds its input in
 * the output (nccl-tests' layout).
 */
static char *own_block(const struct bench *b, char *buf, const llmp_comm *comm, size_t count)
{
	return buf + (size_t)llmp_comm_rank(comm) * count * llmp_dtype_size(b->args->dtype);
}

static llmp_status run_once(struct bench *b, llmp_comm *comm, enum coll coll, size_t count)
{
	const struct bench_args *a = b->args;
	bool in = a->inplace;
	if (b->cuda) { /* enqueued on the stream; out of place */
		void *s = bench_cuda_stream(b->cuda);
		switch (coll) {
		case COLL_ALLREDUCE:
			return llmp_device_allreduce(comm, b->dsend, b->drecv, count, a->dtype, a->op, s);
		case COLL_REDUCE_SCATTER:
			return llmp_device_reduce_scatter(comm, b->dsend, b->drecv, count, a->dtype, a->op,
							  s);
		case COLL_ALLGATHER:
			return llmp_device_allgather(comm, b->dsend, b->drecv, count, a->dtype, s);
		default: return llmp_device_broadcast(comm, b->dsend, b->drecv, count, a->dtype, 0, s);
		}
	}
	switch (coll) {
	case COLL_ALLREDUCE:
		return llmp_allreduce(comm, in ? b->recv : b->send, b->recv, count, a->dtype, a->op);
	case COLL_REDUCE_SCATTER:
		return llmp_reduce_scatter(comm, b->send, in ? own_block(b, b->send, comm, count) : b->recv,
					   count, a->dtype, a->op);
	case COLL_ALLGATHER:
		return llmp_allgather(comm, in ? own_block(b, b->recv, comm, count) : b->send, b->recv, count,
				      a->dtype);
	default: return llmp_broadcast(comm, in ? b->recv : b->send, b->recv, count, a->dtype, 0);
	}
}

/* The device's checked call: the inputs copied in, the stream waited for, the result copied out. */
static llmp_status run_checked_device(struct bench *b, llmp_comm *comm, enum coll coll, size_t count)
{
	size_t esize = llmp_dtype_size(b->args->dtype), n = llmp_comm_size(comm);
	size_t in = coll == COLL_REDUCE_SCATTER ? count * n : count,
	       out = coll == COLL_ALLGATHER ? count * n : count;
	char msg[256];
	if (bench_cuda_to_device(b->cuda, b->dsend, b->send, in * esize, msg, sizeof msg) != 0) {
		fprintf(stderr, PROG ": %s\n", msg);
		return LLMP_ERR_DEVICE;
	}
	llmp_status st = run_once(b, comm, coll, count);
	if (st == LLMP_OK &&
	    (bench_cuda_sync(b->cuda, msg, sizeof msg) != 0 ||
	     bench_cuda_to_host(b->cuda, b->recv, b->drecv, out * esize, msg, sizeof msg) != 0)) {
		fprintf(stderr, PROG ": %s\n", msg);
		return LLMP_ERR_DEVICE;
	}
	return st;
}

/* The checked call: in place, the inputs moved to where the call takes them, and the result to recv. */
static llmp_status run_checked(struct bench *b, llmp_comm *comm, enum coll coll, size_t count)
{
	if (b->cuda)
		return run_checked_device(b, comm, coll, count);
	size_t esize = llmp_dtype_size(b->args->dtype);
	bool in = b->args->inplace;
	if (in && (coll == COLL_ALLREDUCE || coll == COLL_BROADCAST))
		memcpy(b->recv, b->send, count * esize);
	if (in && coll == COLL_ALLGATHER)
		memcpy(own_block(b, b->recv, comm, count), b->send, count * esize);
	llmp_status st = run_once(b, comm, coll, count);
	if (in && coll == COLL_REDUCE_SCATTER)
		memcpy(b->recv, own_block(b, b->send, comm, count), count * esize);
	return st;
}

static int report_failure(struct bench *b, const char *what)
{
	fprintf(stderr, PROG ": rank %u: %s: %s\n", llmp_rank(b->ctx), what, llmp_errmsg(b->ctx));
	return CLI_EXIT_FAILURE;
}

/* The largest of every rank's value (comm NULL: this rank is in no such group). */
static int world_max(struct bench *b, double *value)
{
	if (llmp_allreduce(b->world, value, value, 1, LLMP_FLOAT64, LLMP_MAX) != LLMP_OK)
		return report_failure(b, "collecting results");
	return 0;
}

/* Bus bandwidth factor of nccl-tests for n ranks. */
static double bus_factor(enum coll coll, uint32_t n)
{
	if (coll == COLL_ALLREDUCE)
		return 2.0 * (n - 1) / n;
	if (coll == COLL_BROADCAST)
		return 1;
	return (double)(n - 1) / n;
}

static int bench_rows(struct bench *b, llmp_comm *comm, enum coll coll, uint32_t n)
{
	const struct bench_args *a = b->args;
	size_t esize = llmp_dtype_size(a->dtype);
	bool leader = llmp_rank(b->ctx) == 0;

	for (uint64_t bytes = a->minbytes; bytes <= a->maxbytes; bytes *= a->factor) {
		/* Elements per call argument: per block for the gathering and scattering ones. */
		bool blocked = coll == COLL_ALLGATHER || coll == COLL_REDUCE_SCATTER;
		size_t count = bytes / esize / (blocked ? n : 1);
		if (count == 0)
			continue;
		size_t size = count * esize * (blocked ? n : 1);
		double t = 0, wrong = 0;
		if (comm) {
			llmp_status st = LLMP_OK;
			if (a->check) {
				fill_inputs(b, comm, coll, count);
				st = run_checked(b, comm, coll, count);
				if (st == LLMP_OK)
					wrong = (double)count_wrong(b, comm, coll, count);
			}
			for (uint64_t i = 0; st == LLMP_OK && i < a->warmup; i++)
				st = run_once(b, comm, coll, count);
			if (st == LLMP_OK)
				st = llmp_barrier(comm);
			char why[256];
			if (st == LLMP_OK && b->cuda && bench_cuda_sync(b->cuda, why, sizeof why) != 0) {
				fprintf(stderr, PROG ": %s\n", why);
				st = LLMP_ERR_DEVICE;
			}
			double start = now();
			for (uint64_t i = 0; st == LLMP_OK && i < a->iters; i++)
				st = run_once(b, comm, coll, count);
			/* The device's calls return once enqueued: the time runs until the stream is done. */
			if (st == LLMP_OK && b->cuda && bench_cuda_sync(b->cuda, why, sizeof why) != 0) {
				fprintf(stderr, PROG ": %s\n", why);
				st = LLMP_ERR_DEVICE;
			}
			t = (now() - start) / (double)a->iters;
			if (st != LLMP_OK)
				return report_failure(b, coll_names[coll]);
		}
		int rc = world_max(b, &t);
		if (!rc)
			rc = llmp_allreduce(b->world, &wrong, &wrong, 1, LLMP_FLOAT64, LLMP_SUM) == LLMP_OK
				     ? 0
				     : report_failure(b, "collecting #wrong");
		if (rc)
			return rc;
		double algbw = size / t / 1e9, busbw = algbw * bus_factor(coll, n);
		if (leader)
			printf("%12zu %12zu %9s %6s %10.2f %11.3f %11.3f %12.3f %7.0f\n", size, count,
			       llmp_dtype_name(a->dtype),
			       coll == COLL_ALLGATHER || coll == COLL_BROADCAST ? "none"
										: llmp_op_name(a->op),
			       t * 1e6, algbw, busbw, busbw / b->memcpy_gbs, wrong);
		if (wrong > 0 && leader)
			fprintf(stderr, PROG ": %s on %s: %.0f wrong elements at %zu bytes\n",
				coll_names[coll], comm ? llmp_comm_name(comm) : "?", wrong, size);
	}
	return 0;
}

static int bench_one(struct bench *b, int group, enum coll coll)
{
	llmp_comm *comm = NULL;
	llmp_status st = group == GROUP_WORLD ? llmp_comm_world(b->ctx, &comm)
					      : llmp_comm_get(b->ctx, (enum llmp_group)group, &comm);
	if (st != LLMP_OK && st != LLMP_ERR_RANGE)
		return report_failure(b, "making the communicator");
	/* Ranks outside every group of the kind (middle pipeline stages) only take part in the world's reductions. */
	double size = comm ? llmp_comm_size(comm) : 0;
	if (world_max(b, &size))
		return CLI_EXIT_FAILURE;
	const char *name = group == GROUP_WORLD ? "world" : llmp_group_name((enum llmp_group)group);
	if (llmp_rank(b->ctx) == 0) {
		printf("#\n# %s on %s groups of %.0f ranks: %s, %s\n", coll_names[coll], name, size,
		       llmp_dtype_name(b->args->dtype), b->args->inplace ? "in place" : "out of place");
		printf("# %10s %12s %9s %6s %10s %11s %11s %12s %7s\n", "size", "count", "type", "redop",
		       "time(us)", "algbw(GB/s)", "busbw(GB/s)", "busbw/memcpy", "#wrong");
	}
	return bench_rows(b, comm, coll, (uint32_t)size);
}

static int run(struct bench *b)
{
	const struct bench_args *a = b->args;
	uint32_t n = llmp_world_size(b->ctx);
	const llmp_plan *plan = llmp_layout(b->ctx);
	int rc = 0;

	/* Rank 0 measures memcpy while the others wait, so it has a core to itself. */
	b->memcpy_gbs = llmp_rank(b->ctx) == 0 ? memcpy_bandwidth(b->recv, b->send, b->capacity) : 0;
	if (world_max(b, &b->memcpy_gbs))
		return CLI_EXIT_FAILURE;
	if (llmp_rank(b->ctx) == 0) {
		char host[64] = "?";
		gethostname(host, sizeof host - 1);
		printf("# llmp bench: %u ranks (%u on %s), layout tp=%u cp=%u ep=%u dp=%u pp=%u\n", n,
		       llmp_local_size(b->ctx), host, llmp_plan_size(plan, LLMP_AXIS_TP),
		       llmp_plan_size(plan, LLMP_AXIS_CP), llmp_plan_size(plan, LLMP_AXIS_EP),
		       llmp_plan_size(plan, LLMP_AXIS_DP), llmp_plan_size(plan, LLMP_AXIS_PP));
		printf("# memcpy, one thread, %zu bytes: %.2f GB/s (GB = 1e9 bytes)\n", b->capacity,
		       b->memcpy_gbs);
		llmp_device_info dev;
		if (llmp_device_get_info(b->ctx, &dev) == LLMP_OK) {
			printf("# device path: %s%s; UCX moves CUDA memory: %s\n",
			       dev.enabled ? "NCCL " : "off: ", dev.enabled ? "" : dev.why_not,
			       dev.ucx_cuda ? "yes" : "no (device buffers go through NCCL)");
			if (dev.enabled)
				printf("# NCCL %d.%d.%d, %u groups\n", dev.nccl_version / 10000,
				       dev.nccl_version / 100 % 100, dev.nccl_version % 100, dev.groups);
			if (dev.enabled && a->device)
				printf("# %s\n", dev.deadline ? "every device operation has a deadline "
								"(LLMP_TIMEOUT, a CUDA event after it)"
							      : dev.deadline_why);
		}
		if (a->device)
			bench_gdr_report(&b->gdr, true, stdout);
		const char *tls = getenv("UCX_TLS");
		printf("# UCX_TLS=%s; %u iterations after %u warm-up; time is the slowest rank's mean\n",
		       tls ? tls : "(UCX's choice)", (unsigned)a->iters, (unsigned)a->warmup);
	}
	bench_gdr_report(&b->gdr, false, stdout); /* the other ranks' files */
	for (int coll = 0; coll < NCOLLS && !rc; coll++) {
		if (a->coll >= 0 && a->coll != coll)
			continue;
		if (a->group != GROUP_ALL) {
			rc = bench_one(b, a->group, (enum coll)coll);
			continue;
		}
		rc = bench_one(b, GROUP_WORLD, (enum coll)coll);
		for (int g = 0; g < LLMP_NGROUPS && !rc; g++)
			if (llmp_plan_group_size(plan, (enum llmp_group)g) > 1)
				rc = bench_one(b, g, (enum coll)coll);
	}
	llmp_stats stats;
	if (!rc && llmp_rank(b->ctx) == 0 && llmp_get_stats(b->ctx, &stats) == LLMP_OK)
		printf("#\n# communicators through shared memory on rank 0: %u (LLMP_SHM_THRESHOLD=%s)\n",
		       stats.shm_comms,
		       getenv(LLMP_ENV_SHM_THRESHOLD) ? getenv(LLMP_ENV_SHM_THRESHOLD) : "default");
	return rc;
}

/*
 * --memory device: the GPU LOCAL_RANK picks (the plugin's: its index among
 * the visible GPUs) made current, two buffers on it, then the NCCL
 * communicators of every group (llmp_device_connect), collectively.
 */
static int open_device(struct bench *b)
{
	char msg[256];
	const char *local = getenv("LOCAL_RANK");
	int index = local && *local ? atoi(local) : (int)llmp_local_rank(b->ctx);
	if (!(b->cuda = bench_cuda_open(index, msg, sizeof msg))) {
		fprintf(stderr, PROG ": --memory device: %s\n", msg);
		return CLI_EXIT_FAILURE;
	}
	if (bench_cuda_alloc(b->cuda, b->capacity, (void **)&b->dsend, msg, sizeof msg) != 0 ||
	    bench_cuda_alloc(b->cuda, b->capacity, (void **)&b->drecv, msg, sizeof msg) != 0) {
		fprintf(stderr, PROG ": --memory device: %s\n", msg);
		return CLI_EXIT_FAILURE;
	}
	return llmp_device_connect(b->ctx) == LLMP_OK ? CLI_EXIT_OK
						      : report_failure(b, "llmp_device_connect");
}

int cli_bench(int argc, char **argv)
{
	struct bench_args args;
	int rc = parse_args(argc, argv, &args);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;

	struct bench b = { .args = &args };
	if (args.device)
		bench_gdr_prepare(&b.gdr); /* before NCCL is loaded: it reads NCCL_DEBUG once */
	if ((rc = cli_join_job(PROG, args.spec, &b.ctx)) != CLI_EXIT_OK)
		return rc;
	/* Sizes count the whole buffer (allgather's output, reduce-scatter's input). */
	b.capacity = (size_t)args.maxbytes;
	b.send = malloc(b.capacity);
	b.recv = malloc(b.capacity);
	if (!b.send || !b.recv) {
		fprintf(stderr, PROG ": no memory for two buffers of %zu bytes\n", b.capacity);
		rc = CLI_EXIT_FAILURE;
	} else {
		memset(b.send, 0, b.capacity);
		memset(b.recv, 0, b.capacity);
		rc = args.device ? open_device(&b) : CLI_EXIT_OK;
		if (!rc)
			rc = llmp_comm_world(b.ctx, &b.world) == LLMP_OK ? run(&b)
									 : report_failure(&b, "world");
	}
	bench_gdr_report(&b.gdr, false, stdout); /* removed when never reached */
	bench_cuda_free(b.cuda, b.dsend);
	bench_cuda_free(b.cuda, b.drecv);
	free(b.send);
	free(b.recv);
	llmp_finalize(b.ctx); /* before the context the communicators run on goes */
	bench_cuda_close(b.cuda);
	return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_overhead.c - what the device path itself costs per call, measured on
 * the CPU against the test doubles of NCCL (fake_nccl.c) and of the CUDA
 * driver (fake_cuda.c): no GPU. tests/device_overhead.bats runs it in
 * `make check` and prints its figures. It asserts no time (machines are
 * noisy); what it counts, the driver's event calls per operation, the test
 * holds to each mode's number.
 *
 *   dev_overhead [--calls N] [--rounds R] [--passes P] [--pending Q] [--modes on,sampled,off]
 *
 * LLMP_NCCL_LIBRARY and LLMP_CUDA_LIBRARY name the doubles. The program
 * loads the CUDA double as its driver (as dev_check --cuda does), makes a
 * stream on it, and times rounds of N calls (default 2000: short rounds,
 * of which the best misses the other jobs of a busy machine):
 *
 *  - the parts the path is made of, each alone, the best of P passes of
 *    R rounds (default 3 x 20): the NCCL double's
 *    ncclAllReduce called directly (what a program calling NCCL itself
 *    pays), cuEventRecord with and without timing, cuEventQuery,
 *    cuEventElapsedTime, a mutex locked and unlocked, a clock read;
 *  - for each LLMP_DEVICE_TIMING mode, a context of its own (llmp_init as
 *    a PMIx singleton, llmp_device_connect) and R rounds of 8-byte
 *    allreduce, allgather and reduce-scatter calls through llmp_device_* on
 *    its world, the same double underneath; the modes one after the other,
 *    P times over, so that each sees the machine as busy as the others.
 *    The path's own cost is the best round's difference from the direct
 *    call, split into what its event calls, its lock and its clock read
 *    cost alone and the rest (llmp's own code, and the contention with the
 *    double's stream thread the parts alone do not meet). With it: the
 *    double's event calls per operation, over all rounds, and the CPU time
 *    of the watchdog's thread per operation (/proc/self/task/TID/schedstat
 *    of the threads llmp_device_connect started);
 *  - for each mode, the watchdog's look with Q allreduces (default 20000)
 *    pending on a stream the GPU is behind on: its CPU and event queries per look. A
 *    look holds the device lock, which a call waits for.
 *
 * The stream of the double runs its records on a thread of its own, as a
 * GPU would run them behind the host: FAKE_CUDA_DELAY_US defaults to 0
 * here, so that it keeps up. Between rounds the stream is synchronised.
 *
 * Output, for the test: "part NAME NS" per part; per mode and collective
 * "call MODE COLL BEST MEDIAN OWN CREATES RECORDS QUERIES ELAPSED
 * WATCHDOG_NS" (counts per operation); per mode "split MODE EVENTS LOCK
 * CLOCK REST" (the allreduce's own ns) and "behind MODE PENDING LOOK_NS
 * QUERIES". For people, tables in lines that start with "#". The exit
 * status is 0 when every call succeeded.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nccl.h>

#include <llmp/llmp.h>
#include <llmp/llmp_device.h>

#define MAX_THREADS 64

/* The CUDA double's calls this program makes (its own prototypes: no CUDA header needed). */
struct driver {
	int (*init)(unsigned);
	int (*device_get)(int *, int);
	int (*retain)(void **, int);
	int (*push)(void *);
	int (*stream_create)(void **, unsigned);
	int (*stream_synchronize)(void *);
	int (*event_create)(void **, unsigned);
	int (*event_record)(void *, void *);
	int (*event_query)(void *);
	int (*event_elapsed)(float *, void *, void *);
	int (*launch_host_func)(void *, void (*)(void *), void *);
	void (*event_calls)(unsigned long[4]);
	void *stream;
};

/* The NCCL double's, called directly: the yardstick. */
struct nccl {
	ncclResult_t (*get_unique_id)(ncclUniqueId *);
	ncclResult_t (*init_rank)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
	ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
				   cudaStream_t);
	ncclResult_t (*abort)(ncclComm_t);
	ncclComm_t comm;
};

struct bench {
	struct driver cu;
	struct nccl nccl;
	long calls, pending;
	int rounds, passes;
	void *timed[2], *untimed; /* events of the double, for the parts */
	pthread_mutex_t mutex;
	llmp_comm *world; /* the context of the mode under way */
	int coll;
};

static float send_buf[2], recv_buf[2];

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *need(void *lib, const char *name, bool *ok)
{
	void *f = lib ? dlsym(lib, name) : NULL;
	if (!f) {
		fprintf(stderr, "dev_overhead: %s not found in the test double\n", name);
		*ok = false;
	}
	return f;
}

/* The CUDA double as this program's driver: a context current in this thread, a stream, three events. */
static bool open_driver(struct bench *b)
{
	const char *path = getenv("LLMP_CUDA_LIBRARY");
	void *lib = path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
	bool ok = true;
	struct driver *cu = &b->cu;
	if (!lib) {
		fprintf(stderr, "dev_overhead: LLMP_CUDA_LIBRARY=%s: %s\n", path ? path : "(unset)",
			path ? dlerror() : "the CUDA test double is needed");
		return false;
	}
	*(void **)&cu->init = need(lib, "cuInit", &ok);
	*(void **)&cu->device_get = need(lib, "cuDeviceGet", &ok);
	*(void **)&cu->retain = need(lib, "cuDevicePrimaryCtxRetain", &ok);
	*(void **)&cu->push = need(lib, "cuCtxPushCurrent_v2", &ok);
	*(void **)&cu->stream_create = need(lib, "cuStreamCreate", &ok);
	*(void **)&cu->stream_synchronize = need(lib, "cuStreamSynchronize", &ok);
	*(void **)&cu->event_create = need(lib, "cuEventCreate", &ok);
	*(void **)&cu->event_record = need(lib, "cuEventRecord", &ok);
	*(void **)&cu->event_query = need(lib, "cuEventQuery", &ok);
	*(void **)&cu->event_elapsed = need(lib, "cuEventElapsedTime", &ok);
	*(void **)&cu->launch_host_func = need(lib, "cuLaunchHostFunc", &ok);
	*(void **)&cu->event_calls = need(lib, "fake_cuda_event_calls", &ok);
	if (!ok)
		return false;
	int dev = 0;
	void *ctx = NULL;
	int rc = cu->init(0);
	rc = rc ? rc : cu->device_get(&dev, 0);
	rc = rc ? rc : cu->retain(&ctx, dev);
	rc = rc ? rc : cu->push(ctx);
	rc = rc ? rc : cu->stream_create(&cu->stream, 1);
	rc = rc ? rc : cu->event_create(&b->timed[0], 0);
	rc = rc ? rc : cu->event_create(&b->timed[1], 0);
	rc = rc ? rc : cu->event_create(&b->untimed, 2 /* CU_EVENT_DISABLE_TIMING */);
	if (rc)
		fprintf(stderr, "dev_overhead: the CUDA test double failed with %d\n", rc);
	return rc == 0;
}

/* The NCCL double, loaded as libllmp loads it, and a communicator of one made directly. */
static bool open_nccl(struct bench *b)
{
	const char *path = getenv("LLMP_NCCL_LIBRARY");
	void *lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	bool ok = true;
	struct nccl *n = &b->nccl;
	if (!lib) {
		fprintf(stderr, "dev_overhead: LLMP_NCCL_LIBRARY=%s: %s\n", path ? path : "(unset)",
			path ? dlerror() : "the NCCL test double is needed");
		return false;
	}
	*(void **)&n->get_unique_id = need(lib, "ncclGetUniqueId", &ok);
	*(void **)&n->init_rank = need(lib, "ncclCommInitRankConfig", &ok);
	*(void **)&n->all_reduce = need(lib, "ncclAllReduce", &ok);
	*(void **)&n->abort = need(lib, "ncclCommAbort", &ok);
	ncclUniqueId id;
	if (!ok || n->get_unique_id(&id) != ncclSuccess ||
	    n->init_rank(&n->comm, 1, id, 0, NULL) != ncclSuccess) {
		fprintf(stderr, "dev_overhead: a communicator of the NCCL double\n");
		return false;
	}
	return true;
}

/* ------------------------------------------------------------ the parts */

/* One round of a part: the ns its calls took. */
typedef double (*round_fn)(struct bench *b, long calls);

static double nccl_round(struct bench *b, long calls)
{
	double t0 = now_ns();
	for (long i = 0; i < calls; i++)
		if (b->nccl.all_reduce(send_buf, recv_buf, 2, ncclFloat32, ncclSum, b->nccl.comm,
				       (cudaStream_t)b->cu.stream) != ncclSuccess)
			return -1;
	return now_ns() - t0;
}

static double record_round(struct bench *b, long calls, bool timed)
{
	double t0 = now_ns();
	for (long i = 0; i < calls; i++)
		if (b->cu.event_record(timed ? b->timed[i & 1] : b->untimed, b->cu.stream) != 0)
			return -1;
	return now_ns() - t0;
}

static double record_timed_round(struct bench *b, long calls)
{
	return record_round(b, calls, true);
}

static double record_untimed_round(struct bench *b, long calls)
{
	return record_round(b, calls, false);
}

static double query_round(struct bench *b, long calls)
{
	double t0 = now_ns();
	for (long i = 0; i < calls; i++)
		if (b->cu.event_query(b->timed[1]) != 0)
			return -1;
	return now_ns() - t0;
}

static double elapsed_round(struct bench *b, long calls)
{
	float ms;
	double t0 = now_ns();
	for (long i = 0; i < calls; i++)
		if (b->cu.event_elapsed(&ms, b->timed[0], b->timed[1]) != 0)
			return -1;
	return now_ns() - t0;
}

static double mutex_round(struct bench *b, long calls)
{
	double t0 = now_ns();
	for (long i = 0; i < calls; i++) {
		pthread_mutex_lock(&b->mutex);
		pthread_mutex_unlock(&b->mutex);
	}
	return now_ns() - t0;
}

static double clock_round(struct bench *b, long calls)
{
	(void)b;
	volatile double sink = 0;
	double t0 = now_ns();
	for (long i = 0; i < calls; i++)
		sink += now_ns();
	(void)sink;
	return now_ns() - t0;
}

/* The best round's ns per call, the stream drained after each; negative when a call failed. */
static double best_of(struct bench *b, round_fn run)
{
	double best = -1;
	for (int r = 0; r <= b->rounds; r++) { /* round 0 warms up */
		double ns = run(b, b->calls);
		if (ns < 0 || b->cu.stream_synchronize(b->cu.stream) != 0)
			return -1;
		if (r > 0 && (best < 0 || ns < best))
			best = ns;
	}
	return best / (double)b->calls;
}

/* ------------------------------------------------------- through llmp */

enum { ALLREDUCE, ALLGATHER, REDUCE_SCATTER, NCOLLS };
static const char *const coll_names[NCOLLS] = { "allreduce", "allgather", "reduce_scatter" };

#define MAX_MODES 4

/* What the passes measured of one mode. */
struct mode_figures {
	char name[16];
	double *ns[NCOLLS]; /* every round's ns per call, over the passes */
	int nrounds[NCOLLS];
	double calls[NCOLLS][4]; /* the double's event calls: creations, records, queries, elapsed times */
	double ops[NCOLLS];      /* operations they were counted over */
	double watchdog[NCOLLS]; /* the watchdog's CPU ns over them */
	double look_ns, look_queries; /* the cheapest look with the GPU behind, and its queries */
};

static double llmp_round(struct bench *b, long calls)
{
	llmp_status st = LLMP_OK;
	double t0 = now_ns();
	for (long i = 0; i < calls && st == LLMP_OK; i++)
		switch (b->coll) {
		case ALLREDUCE:
			st = llmp_device_allreduce(b->world, send_buf, recv_buf, 2, LLMP_FLOAT32, LLMP_SUM,
						   b->cu.stream);
			break;
		case ALLGATHER:
			st = llmp_device_allgather(b->world, send_buf, recv_buf, 2, LLMP_FLOAT32,
						   b->cu.stream);
			break;
		default:
			st = llmp_device_reduce_scatter(b->world, send_buf, recv_buf, 2, LLMP_FLOAT32,
							LLMP_SUM, b->cu.stream);
			break;
		}
	return st == LLMP_OK ? now_ns() - t0 : -1;
}

/* The threads of this process, by id. */
static int list_threads(long *tids, int max)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;
	while (dir && (e = readdir(dir)) && n < max)
		if (e->d_name[0] != '.')
			tids[n++] = atol(e->d_name);
	if (dir)
		closedir(dir);
	return n;
}

/* The ns on a CPU of the threads given (the first field of schedstat). */
static double cpu_ns(const long *tids, int n)
{
	double sum = 0;
	for (int i = 0; i < n; i++) {
		char path[64];
		unsigned long long ns = 0;
		snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", tids[i]);
		FILE *f = fopen(path, "r");
		if (f && fscanf(f, "%llu", &ns) == 1)
			sum += (double)ns;
		if (f)
			fclose(f);
	}
	return sum;
}

/* The threads in `after` that are not in `before`: those llmp_device_connect started. */
static int new_threads(const long *before, int nb, long *after, int na)
{
	int n = 0;
	for (int i = 0; i < na; i++) {
		bool old = false;
		for (int j = 0; j < nb && !old; j++)
			old = after[i] == before[j];
		if (!old)
			after[n++] = after[i];
	}
	return n;
}

/* One pass of one collective through llmp: a warm-up round, then b->rounds, each round's ns per call kept. */
static bool measure_coll(struct bench *b, const long *watchdog, int nwatch, struct mode_figures *m)
{
	unsigned long c0[4], c1[4];
	int c = b->coll;
	if (llmp_round(b, b->calls) < 0 || b->cu.stream_synchronize(b->cu.stream) != 0)
		return false;
	b->cu.event_calls(c0);
	double cpu0 = cpu_ns(watchdog, nwatch);
	for (int r = 0; r < b->rounds; r++) {
		double ns = llmp_round(b, b->calls);
		if (ns < 0 || b->cu.stream_synchronize(b->cu.stream) != 0)
			return false;
		m->ns[c][m->nrounds[c]++] = ns / (double)b->calls;
	}
	b->cu.event_calls(c1);
	m->watchdog[c] += cpu_ns(watchdog, nwatch) - cpu0;
	m->ops[c] += (double)b->calls * b->rounds;
	for (int i = 0; i < 4; i++)
		m->calls[c][i] += (double)(c1[i] - c0[i]);
	return true;
}

/*
 * The GPU behind the host, as in training, where the host enqueues a step
 * ahead: a host function at the stream's head that returns once released.
 */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static bool held;

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

#define BEHIND_WAIT_MS 200
#define WATCH_PERIOD_MS 20 /* the watchdog's, runtime/device/watchdog.c */

/*
 * With the stream held and b->pending allreduces pending on it: the
 * watchdog's CPU and event queries per look (every WATCH_PERIOD_MS), over
 * BEHIND_WAIT_MS of the program doing nothing else.
 */
static bool measure_behind(struct bench *b, const long *watchdog, int nwatch, struct mode_figures *m)
{
	unsigned long c0[4], c1[4];
	held = true;
	if (b->cu.launch_host_func(b->cu.stream, hold, NULL) != 0)
		return false;
	b->coll = ALLREDUCE;
	bool ok = llmp_round(b, b->pending) >= 0;
	b->cu.event_calls(c0);
	double cpu0 = cpu_ns(watchdog, nwatch);
	struct timespec wait = { 0, BEHIND_WAIT_MS * 1000000L };
	nanosleep(&wait, NULL);
	double looks = (double)BEHIND_WAIT_MS / WATCH_PERIOD_MS,
	       look = (cpu_ns(watchdog, nwatch) - cpu0) / looks;
	b->cu.event_calls(c1);
	release();
	ok = b->cu.stream_synchronize(b->cu.stream) == 0 && ok;
	if (ok && (m->look_ns == 0 || look < m->look_ns)) {
		m->look_ns = look;
		m->look_queries = (double)(c1[2] - c0[2]) / looks;
	}
	return ok;
}

/* One pass of a mode: a context whose device path runs in it (LLMP_DEVICE_TIMING), then finalised. */
static bool measure_mode(struct bench *b, struct mode_figures *m)
{
	llmp_ctx *ctx = NULL;
	long before[MAX_THREADS], after[MAX_THREADS];
	setenv("LLMP_DEVICE_TIMING", m->name, 1);
	llmp_status st = llmp_init(NULL, &ctx);
	int nb = list_threads(before, MAX_THREADS);
	if (st == LLMP_OK)
		st = llmp_device_connect(ctx);
	int nwatch = new_threads(before, nb, after, list_threads(after, MAX_THREADS));
	if (st == LLMP_OK)
		st = llmp_comm_world(ctx, &b->world);
	bool ok = st == LLMP_OK;
	for (int c = 0; c < NCOLLS && ok; c++) {
		b->coll = c;
		ok = measure_coll(b, after, nwatch, m);
	}
	ok = ok && measure_behind(b, after, nwatch, m);
	if (!ok)
		fprintf(stderr, "dev_overhead: LLMP_DEVICE_TIMING=%s: %s\n", m->name, llmp_errmsg(ctx));
	llmp_finalize(ctx);
	return ok;
}

/* ------------------------------------------------------------- printing */

struct part {
	const char *name, *what;
	round_fn run;
};

enum { NCCL, RECORD_TIMED, RECORD_UNTIMED, QUERY, ELAPSED, MUTEX, CLOCK, NPARTS };

static const struct part parts[NPARTS] = {
	{ "nccl_allreduce", "ncclAllReduce of the NCCL double, called directly", nccl_round },
	{ "event_record_timed", "cuEventRecord, an event with timing", record_timed_round },
	{ "event_record_untimed", "cuEventRecord, an event without timing", record_untimed_round },
	{ "event_query", "cuEventQuery of a passed event", query_round },
	{ "event_elapsed", "cuEventElapsedTime of a passed pair", elapsed_round },
	{ "mutex", "pthread_mutex_lock + unlock, nobody else", mutex_round },
	{ "clock", "clock_gettime(CLOCK_MONOTONIC)", clock_round },
};

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The best and the median of a mode's rounds of one collective. */
static void best_median(struct mode_figures *m, int c, double *best, double *median)
{
	qsort(m->ns[c], (size_t)m->nrounds[c], sizeof *m->ns[c], by_value);
	*best = m->ns[c][0];
	*median = m->ns[c][m->nrounds[c] / 2];
}

static void print_calls(struct mode_figures *m, int nmodes, const double part_ns[NPARTS])
{
	double on[NCOLLS] = { 0 };
	printf("# 8-byte calls through llmp_device_* on a world of one, ns per call: the best and the median\n"
	       "# round; own: the best minus the direct ncclAllReduce's; x nccl, x on: the best over the\n"
	       "# direct call's and over mode on's (0: not measured); the double's event calls and the\n"
	       "# watchdog thread's CPU ns per operation\n"
	       "# %-8s %-15s %8s %8s %8s %7s %6s %7s %7s %7s %7s %9s\n",
	       "mode", "collective", "best", "median", "own", "x nccl", "x on", "creates", "records",
	       "queries", "elapsed", "watchdog");
	for (int i = 0; i < nmodes; i++)
		for (int c = 0; c < NCOLLS; c++) {
			double best, median, *k = m[i].calls[c], ops = m[i].ops[c];
			best_median(&m[i], c, &best, &median);
			on[c] = strcmp(m[i].name, "on") == 0 ? best : on[c];
			printf("call %s %s %.1f %.1f %.1f %.4f %.4f %.4f %.4f %.1f\n", m[i].name,
			       coll_names[c], best, median, best - part_ns[NCCL], k[0] / ops, k[1] / ops,
			       k[2] / ops, k[3] / ops, m[i].watchdog[c] / ops);
			printf("# %-8s %-15s %8.1f %8.1f %8.1f %7.2f %6.2f %7.3f %7.3f %7.3f %7.3f %9.1f\n",
			       m[i].name, coll_names[c], best, median, best - part_ns[NCCL],
			       best / part_ns[NCCL], on[c] > 0 ? best / on[c] : 0, k[0] / ops, k[1] / ops,
			       k[2] / ops, k[3] / ops, m[i].watchdog[c] / ops);
		}
}

/*
 * The allreduce's own cost split: its event calls, each at what it cost
 * alone (a fraction p = records - 1 of the operations is timed: 2p timed
 * records, 1 - p untimed ones), the lock, the clock read of its deadline,
 * and the rest.
 */
static void print_split(const struct mode_figures *m, int nmodes, const double part_ns[NPARTS])
{
	printf("# the allreduce's own ns split: event calls at their cost alone, the lock, the deadline's clock\n"
	       "# read, and the rest (llmp's code, and the stream thread's contention the parts did not meet;\n"
	       "# below 0: the machine's noise)\n"
	       "# %-8s %8s %8s %8s %8s %8s\n",
	       "mode", "own", "events", "lock", "clock", "rest");
	for (int i = 0; i < nmodes; i++) {
		const double *k = m[i].calls[ALLREDUCE], ops = m[i].ops[ALLREDUCE];
		double p = k[1] / ops - 1, own = m[i].ns[ALLREDUCE][0] - part_ns[NCCL];
		double events = 2 * p * part_ns[RECORD_TIMED] + (1 - p) * part_ns[RECORD_UNTIMED] +
				k[2] / ops * part_ns[QUERY] + k[3] / ops * part_ns[ELAPSED];
		double rest = own - events - part_ns[MUTEX] - part_ns[CLOCK];
		printf("split %s %.1f %.1f %.1f %.1f\n", m[i].name, events, part_ns[MUTEX], part_ns[CLOCK],
		       rest);
		printf("# %-8s %8.1f %8.1f %8.1f %8.1f %8.1f\n", m[i].name, own, events, part_ns[MUTEX],
		       part_ns[CLOCK], rest);
	}
}

static void print_behind(const struct mode_figures *m, int nmodes, long pending)
{
	printf("# the GPU behind: %ld allreduces pending on a held stream, the watchdog's look (every %d ms,\n"
	       "# the device lock held): its CPU and its event queries, the cheapest of the passes\n",
	       pending, WATCH_PERIOD_MS);
	for (int i = 0; i < nmodes; i++) {
		printf("behind %s %ld %.1f %.1f\n", m[i].name, pending, m[i].look_ns, m[i].look_queries);
		printf("# %-8s %9.1f us %9.1f queries\n", m[i].name, m[i].look_ns / 1000, m[i].look_queries);
	}
}

/* One pass of the parts, each part's best round over the passes kept. */
static bool measure_parts(struct bench *b, double part_ns[NPARTS])
{
	for (int i = 0; i < NPARTS; i++) {
		double ns = best_of(b, parts[i].run);
		if (ns < 0) {
			fprintf(stderr, "dev_overhead: %s failed\n", parts[i].what);
			return false;
		}
		part_ns[i] = part_ns[i] == 0 || ns < part_ns[i] ? ns : part_ns[i];
	}
	return true;
}

/* ---------------------------------------------------------------- main */

static bool parse_args(int argc, char **argv, struct bench *b, char *modes, size_t len)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
			b->calls = atol(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			b->rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--passes") == 0 && i + 1 < argc)
			b->passes = atoi(argv[++i]);
		else if (strcmp(argv[i], "--pending") == 0 && i + 1 < argc)
			b->pending = atol(argv[++i]);
		else if (strcmp(argv[i], "--modes") == 0 && i + 1 < argc)
			snprintf(modes, len, "%s", argv[++i]);
		else
			return false;
	}
	return b->calls > 0 && b->rounds > 0 && b->passes > 0 && b->pending > 0;
}

/* The modes named, each with room for its rounds; their number, 0 on a wrong list. */
static int make_modes(const struct bench *b, char *list, struct mode_figures *m)
{
	int n = 0;
	char *save = NULL;
	for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (n == MAX_MODES || strlen(w) >= sizeof m[n].name)
			return 0;
		snprintf(m[n].name, sizeof m[n].name, "%s", w);
		for (int c = 0; c < NCOLLS; c++)
			if (!(m[n].ns[c] = calloc((size_t)(b->rounds * b->passes), sizeof *m[n].ns[c])))
				return 0;
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	static struct bench b = { .calls = 2000, .rounds = 20, .passes = 3, .pending = 20000 };
	static struct mode_figures modes[MAX_MODES];
	char list[128] = "on,sampled,off";
	if (!parse_args(argc, argv, &b, list, sizeof list)) {
		fprintf(stderr, "usage: dev_overhead [--calls N] [--rounds R] [--passes P] [--pending Q] "
				"[--modes on,sampled,off]\n");
		return 2;
	}
	int nmodes = make_modes(&b, list, modes);
	setvbuf(stdout, NULL, _IOLBF, 0);     /* a figure as soon as it is known */
	setenv("FAKE_CUDA_DELAY_US", "0", 0); /* read by the stream's thread: before it starts */
	setenv("LLMP_DEVICE", "nccl", 0);
	pthread_mutex_init(&b.mutex, NULL);
	if (!nmodes || !open_driver(&b) || !open_nccl(&b))
		return 1;
	printf("# dev_overhead: the device path's own cost per call, against the test doubles (no GPU)\n"
	       "# %d passes of %d rounds of %ld calls; counts per operation over all rounds\n"
	       "# %-50s %9s\n",
	       b.passes, b.rounds, b.calls, "part, alone (the best round)", "ns/call");
	double part_ns[NPARTS] = { 0 };
	bool ok = true;
	for (int p = 0; p < b.passes && ok; p++) {
		ok = measure_parts(&b, part_ns);
		for (int i = 0; i < nmodes && ok; i++)
			ok = measure_mode(&b, &modes[i]);
	}
	if (ok) {
		for (int i = 0; i < NPARTS; i++)
			printf("part %s %.1f\n# %-50s %9.1f\n", parts[i].name, part_ns[i], parts[i].what,
			       part_ns[i]);
		print_calls(modes, nmodes, part_ns);
		print_split(modes, nmodes, part_ns);
		print_behind(modes, nmodes, b.pending);
	}
	for (int i = 0; i < nmodes; i++)
		for (int c = 0; c < NCOLLS; c++)
			free(modes[i].ns[c]);
	b.nccl.abort(b.nccl.comm);
	pthread_mutex_destroy(&b.mutex);
	return ok ? 0 : 1;
}

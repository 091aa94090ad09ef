/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_nccl.c - a test double of NCCL's calls that libllmp makes, loaded
 * through LLMP_NCCL_LIBRARY by tests/device.bats. It moves no data and
 * needs no GPU. What it does is steered by the environment:
 *
 *   FAKE_NCCL_LOG=FILE   one line per call that matters, appended whole:
 *                        "init NAME NRANKS RANK ID" (ID: the id's bytes
 *                        in hex, as the group's root made them) and
 *                        "abort NAME"
 *   FAKE_NCCL_INIT=ok    a communicator is in progress once, then ready
 *                 =hang  it stays in progress (a member that never comes)
 *                 =fail  ncclCommInitRankConfig fails at once, as NCCL does
 *                        without a CUDA driver
 *                 =async it fails later, through ncclCommGetAsyncError
 *   FAKE_NCCL_FAIL_AFTER=N  a ready communicator fails through
 *                        ncclCommGetAsyncError after N more polls (the watchdog's test)
 *   FAKE_NCCL_VERSION=N  what ncclGetVersion says (default 22809)
 *   FAKE_NCCL_STUCK=1    every collective, send and receive puts on its
 *                        stream a host function that returns only once a
 *                        communicator of the process is aborted, as NCCL's
 *                        kernels wait for a member that never comes until
 *                        ncclCommAbort (the deadline's test). The stream is
 *                        the CUDA test double's (tests/device/fake_cuda.c,
 *                        LLMP_CUDA_LIBRARY, cuLaunchHostFunc).
 *   FAKE_NCCL_WORK_US=N  every collective, send and receive puts on its
 *                        stream a host function that sleeps N microseconds:
 *                        work of a known duration on the GPU (the test of
 *                        the device path's time per communicator).
 *
 *   FAKE_NCCL_HCAS=NAME=0|1[,...]  the HCAs NCCL finds, in order, and
 *                        whether each can register GPU memory: at every
 *                        communicator's init, as NCCL 2.28 does when it
 *                        builds its topology, one INFO line per HCA
 *                        ("NET/IB : GPU Direct RDMA Enabled for HCA 0
 *                        'mlx5_0'") when NCCL_DEBUG is INFO or TRACE and
 *                        NCCL_DEBUG_SUBSYS lets NET through (its default,
 *                        INIT,BOOTSTRAP,ENV, does not), to NCCL_DEBUG_FILE
 *                        (%h, %p and %% expanded as NCCL does, opened
 *                        at any NCCL_DEBUG above VERSION) or stdout
 *   FAKE_NCCL_TOPO_DUMP=FILE  the topology NCCL dumps: copied to
 *                        NCCL_TOPO_DUMP_FILE by the communicator's rank
 *                        NCCL_TOPO_DUMP_FILE_RANK (default 0) at init
 *
 * Collectives move no data: they log "allreduce NAME COUNT TYPE OP" (and
 * the like) and succeed on a communicator that was not aborted. Sends,
 * receives and group calls log "send NAME COUNT TYPE PEER PID", "recv ...",
 * "group-start PID" and "group-end PID", so a test can follow one process.
 *
 * Only the declarations of nccl.h are used, not NCCL's code.
 */
#define _GNU_SOURCE /* random */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <nccl.h>

struct ncclComm {
	char name[128];
	int polls;
};

static const char *mode(void)
{
	const char *m = getenv("FAKE_NCCL_INIT");
	return m && *m ? m : "ok";
}

static char last_error[256];

/* Append one line to FAKE_NCCL_LOG with a single write, so lines of concurrent processes stay whole. */
static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void log_line(const char *fmt, ...)
{
	const char *path = getenv("FAKE_NCCL_LOG");
	if (!path || !*path)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof line - 1)
		return;
	line[n++] = '\n';
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) != n)
		fprintf(stderr, "fake_nccl: short write to %s\n", path);
	close(fd);
}

/* FAKE_NCCL_STUCK: what the stuck work waits for. */
static pthread_mutex_t abort_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t aborted = PTHREAD_COND_INITIALIZER;
static int aborts;

static void wait_for_an_abort(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&abort_lock);
	while (aborts == 0)
		pthread_cond_wait(&aborted, &abort_lock);
	pthread_mutex_unlock(&abort_lock);
}

/* FAKE_NCCL_WORK_US: work of a known duration. */
static void sleep_work(void *arg)
{
	useconds_t us = (useconds_t)(uintptr_t)arg;
	/* usleep may end early on a signal: sleep the whole time, never less. */
	struct timespec left = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
}

/*
 * The work of an operation on its stream: none; with FAKE_NCCL_STUCK, work
 * that never ends; with FAKE_NCCL_WORK_US, work of that many microseconds.
 */
static ncclResult_t enqueue_work(cudaStream_t stream)
{
	const char *stuck = getenv("FAKE_NCCL_STUCK"), *work = getenv("FAKE_NCCL_WORK_US"),
		   *lib = getenv("LLMP_CUDA_LIBRARY");
	bool is_stuck = stuck && strcmp(stuck, "1") == 0;
	unsigned long work_us = work && *work ? strtoul(work, NULL, 10) : 0;
	if (!is_stuck && !work_us)
		return ncclSuccess;
	void *driver = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
	int (*launch)(cudaStream_t, void (*)(void *), void *) = NULL;
	if (driver)
		*(void **)&launch = dlsym(driver, "cuLaunchHostFunc");
	if (!launch) {
		snprintf(last_error, sizeof last_error,
			 "fake: FAKE_NCCL_STUCK and FAKE_NCCL_WORK_US need the CUDA test double loaded "
			 "(LLMP_CUDA_LIBRARY)");
		if (driver)
			dlclose(driver);
		return ncclInvalidUsage;
	}
	int r = is_stuck ? launch(stream, wait_for_an_abort, NULL)
			 : launch(stream, sleep_work, (void *)(uintptr_t)work_us);
	dlclose(driver); /* RTLD_NOLOAD took a reference; the program keeps its own */
	return r == 0 ? ncclSuccess : ncclUnhandledCudaError;
}

ncclResult_t ncclGetVersion(int *version)
{
	const char *v = getenv("FAKE_NCCL_VERSION");
	*version = v && *v ? atoi(v) : 22809;
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	static unsigned serial;
	memset(id, 0, sizeof *id);
	/* Distinct across processes and calls, like NCCL's address and magic. */
	snprintf(id->internal, sizeof id->internal, "fake:%ld:%u:%ld", (long)getpid(), serial++,
		 (long)random());
	return ncclSuccess;
}

/* NCCL_DEBUG_SUBSYS lets NET through: a comma list, ^ inverting it, ALL for every one. */
static bool subsys_net(void)
{
	const char *v = getenv("NCCL_DEBUG_SUBSYS");
	if (!v)
		v = "INIT,BOOTSTRAP,ENV";
	bool invert = *v == '^', named = false;
	char list[256];
	snprintf(list, sizeof list, "%s", v + invert);
	char *save = NULL;
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
		named |= strcasecmp(t, "NET") == 0 || strcasecmp(t, "ALL") == 0;
	return named != invert;
}

/* NCCL's debug output, opened once per process as NCCL does: NCCL_DEBUG_FILE, else stdout. */
static FILE *debug_out(void)
{
	static FILE *out;
	if (out)
		return out;
	const char *pat = getenv("NCCL_DEBUG_FILE");
	if (!pat || !*pat)
		return out = stdout;
	char host[256] = "", path[4096];
	gethostname(host, sizeof host - 1);
	host[strcspn(host, ".")] = '\0';
	size_t at = 0;
	for (const char *c = pat; *c && at + 64 < sizeof path; c++) {
		if (c[0] != '%' || !c[1])
			path[at++] = *c;
		else if (*++c == 'h')
			at += (size_t)snprintf(path + at, sizeof path - at, "%.200s", host);
		else if (*c == 'p')
			at += (size_t)snprintf(path + at, sizeof path - at, "%ld", (long)getpid());
		else if (*c == '%')
			path[at++] = '%';
		else
			path[at++] = '%', path[at++] = *c;
	}
	path[at] = '\0';
	out = fopen(path, "w");
	if (!out)
		return out = stdout;
	setvbuf(out, NULL, _IONBF, 0);
	return out;
}

/* What NCCL says and dumps about its topology at a communicator's init (FAKE_NCCL_HCAS, _TOPO_DUMP). */
static void report_topology(int rank)
{
	const char *hcas = getenv("FAKE_NCCL_HCAS"), *level = getenv("NCCL_DEBUG");
	bool info = level && (strcasecmp(level, "INFO") == 0 || strcasecmp(level, "TRACE") == 0);
	/* Above VERSION NCCL opens its debug file, whatever it then prints. */
	if (level && *level && strcasecmp(level, "VERSION") != 0 && strcasecmp(level, "NONE") != 0)
		debug_out();
	if (hcas && *hcas && info && subsys_net()) {
		char list[1024], host[256] = "";
		gethostname(host, sizeof host - 1);
		host[strcspn(host, ".")] = '\0';
		snprintf(list, sizeof list, "%s", hcas);
		char *save = NULL;
		int n = 0;
		for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save), n++) {
			char *eq = strchr(t, '=');
			bool on = eq && strcmp(eq + 1, "1") == 0;
			if (eq)
				*eq = '\0';
			fprintf(debug_out(),
				"%s:%ld:%ld [0] NCCL INFO NET/IB : GPU Direct RDMA %s for HCA %d '%s'\n",
				host, (long)getpid(), (long)getpid(), on ? "Enabled" : "Disabled", n, t);
		}
	}
	const char *dump = getenv("NCCL_TOPO_DUMP_FILE"), *from = getenv("FAKE_NCCL_TOPO_DUMP"),
		   *who = getenv("NCCL_TOPO_DUMP_FILE_RANK");
	if (!dump || !*dump || !from || !*from || rank != (who && *who ? atoi(who) : 0))
		return;
	FILE *in = fopen(from, "r"), *out = in ? fopen(dump, "w") : NULL;
	char buf[4096];
	size_t k;
	while (out && (k = fread(buf, 1, sizeof buf, in)) > 0)
		fwrite(buf, 1, k, out);
	if (out)
		fclose(out);
	if (in)
		fclose(in);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
				    ncclConfig_t *config)
{
	char hex[2 * 32 + 1];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)id.internal[i]);
	const char *name = config && config->commName ? config->commName : "?";
	log_line("init %s %d %d %s", name, nranks, rank, hex);
	if (strcmp(mode(), "fail") == 0) {
		snprintf(last_error, sizeof last_error,
			 "fake: CUDA driver version is insufficient for CUDA runtime version");
		*comm = NULL;
		return ncclUnhandledCudaError;
	}
	report_topology(rank);
	struct ncclComm *c = calloc(1, sizeof *c);
	if (!c)
		return ncclSystemError;
	snprintf(c->name, sizeof c->name, "%s", name);
	*comm = c;
	return config && config->blocking == 0 ? ncclInProgress : ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *error)
{
	if (!comm)
		return ncclInvalidArgument;
	comm->polls++;
	const char *after = getenv("FAKE_NCCL_FAIL_AFTER");
	if (strcmp(mode(), "hang") == 0 || comm->polls < 2)
		*error = ncclInProgress;
	else if (after && *after && comm->polls > 2 + atoi(after)) {
		snprintf(last_error, sizeof last_error, "fake: an NVLink error on the peer");
		*error = ncclSystemError;
	} else if (strcmp(mode(), "async") == 0) {
		snprintf(last_error, sizeof last_error, "fake: a peer closed the connection");
		*error = ncclRemoteError;
	} else
		*error = ncclSuccess;
	return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	if (comm) {
		log_line("abort %s", comm->name);
		free(comm);
	}
	pthread_mutex_lock(&abort_lock);
	aborts++;
	pthread_cond_broadcast(&aborted);
	pthread_mutex_unlock(&abort_lock);
	return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	(void)comm;
	return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	free(comm);
	return ncclSuccess;
}

/* Group calls log only outside llmp_device_connect's own group (no communicator exists then). */
static int comms_made;

ncclResult_t ncclGroupStart(void)
{
	if (comms_made)
		log_line("group-start %ld", (long)getpid());
	return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
	if (comms_made)
		log_line("group-end %ld", (long)getpid());
	comms_made = 1;
	return ncclSuccess;
}

ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
		      cudaStream_t stream)
{
	(void)buf;
	log_line("send %s %zu %d %d %ld", comm->name, count, (int)type, peer, (long)getpid());
	return enqueue_work(stream);
}

ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
		      cudaStream_t stream)
{
	(void)buf;
	log_line("recv %s %zu %d %d %ld", comm->name, count, (int)type, peer, (long)getpid());
	return enqueue_work(stream);
}

const char *ncclGetErrorString(ncclResult_t result)
{
	switch (result) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclSystemError: return "unhandled system error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "fake NCCL error";
	}
}

const char *ncclGetLastError(ncclComm_t comm)
{
	(void)comm;
	return last_error;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
			   ncclComm_t comm, cudaStream_t stream)
{
	(void)send, (void)recv;
	log_line("allreduce %s %zu %d %d", comm->name, count, (int)type, (int)op);
	return enqueue_work(stream);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t type,
			       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	(void)send, (void)recv;
	log_line("reduce_scatter %s %zu %d %d", comm->name, count, (int)type, (int)op);
	return enqueue_work(stream);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t type, ncclComm_t comm,
			   cudaStream_t stream)
{
	(void)send, (void)recv;
	log_line("allgather %s %zu %d", comm->name, count, (int)type);
	return enqueue_work(stream);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root,
			   ncclComm_t comm, cudaStream_t stream)
{
	(void)send, (void)recv;
	log_line("broadcast %s %zu %d %d", comm->name, count, (int)type, root);
	return enqueue_work(stream);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_bench.c - `llmp ckpt bench`: save and restore a synthetic model
 * through llmp_ckpt across the job's ranks, and measure in the same run,
 * on the same filesystem and with the same bytes per rank, what a
 * checkpoint is held against (the goals doc/benchmarks.md reports on):
 *
 *   save (llmp_ckpt_save)          vs  write() + fsync() of a plain file   >= 0.8x bandwidth
 *   llmp_ckpt_save_async's stall   vs  memcpy                              <= 1.2x time
 *   the first async save's stall   vs  memcpy                              <= 1.5x time
 *   restore into another slicing   vs  read() of the plain file            >= 0.7x bandwidth
 *
 * The model: --tensors float32 matrices of R x --cols, --size bytes in all.
 * It is saved with rows split across the ranks and restored with columns
 * split across them, so every rank's restore needs a part of every saved
 * slice (a world of one cannot reshard: it restores what it saved). Each
 * element's value is a function of its tensor, global index and step; the
 * restore is checked element by element (#wrong), after the tensors were
 * overwritten right after the async save returned.
 *
 * Before each read (plain or restore) the files' pages are dropped from
 * the page cache with posix_fadvise(DONTNEED) (--cache cold, the default),
 * or left cached (--cache warm). A time is the slowest rank's; a figure is
 * the median over --iters iterations.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_files.h"
#include "cli/ckpt_cli.h"
#include <llmp/llmp.h>
#include <llmp/llmp_ckpt.h>

#define PROG "llmp ckpt bench"

struct bench_args {
	uint64_t size, iters, tensors, cols;
	const char *dir;
	bool cold, keep_files;
	unsigned files; /* llmp_ckpt_opts.files */
	const char *spec;
};

/* The measurements, in the order of the report. */
enum meas { M_WRITE, M_MEMCPY, M_READ, M_SAVE, M_STALL, M_COMMIT, M_RESTORE, NMEAS };

/* This rank's part of the model, in both slicings. */
struct model {
	uint32_t rank, world;
	uint64_t rows, cols; /* every tensor's global shape */
	size_t tensors;
	uint64_t row0, nrows; /* saved: these rows, every column */
	uint64_t col0, ncols; /* restored: these columns, every row */
	float *save;          /* tensors x nrows x cols */
	float *restore;       /* tensors x rows x ncols */
	char *scratch;        /* save_bytes: where memcpy and read() put them */
	size_t save_bytes, restore_bytes;
};

struct bench {
	const struct bench_args *args;
	llmp_ctx *ctx;
	llmp_comm *world;
	struct model m;
	char dir[4096];   /* the bench's own directory, under --dir */
	char plain[4200]; /* this rank's plain file */
	llmp_ckpt *saver, *loader;
	double *t[NMEAS]; /* per iteration: the slowest rank's seconds */
	double wrong;     /* restored elements that differ, every rank and iteration */
};

static void help(void)
{
	printf("usage: llmp ckpt bench [--size SIZE] [--dir DIR] [--iters N] [--tensors N]\n"
	       "                       [--cols N] [--cache cold|warm] [--keep-files] [--parallel SPEC]\n"
	       "                       [--files rank|node]\n\n"
	       "Save and restore a synthetic model with llmp_ckpt across the job's ranks (run it\n"
	       "with srun --mpi=pmix or mpirun like a job, or alone), and measure on the same\n"
	       "filesystem, with the same bytes per rank, write()+fsync, memcpy and read():\n"
	       "save vs write+fsync (goal >= 0.8x), async-save stall vs memcpy (goal <= 1.2x),\n"
	       "restore into another slicing (columns instead of rows) vs read (goal >= 0.7x).\n"
	       "  -s, --size SIZE      the whole model, e.g. 64M, 1G (default 256M)\n"
	       "  -d, --dir DIR        where the files go (default .): a directory\n"
	       "                       DIR/llmp-ckpt-bench-XXXXXX, removed at the end\n"
	       "  -n, --iters N        iterations; figures are medians (default 3)\n"
	       "  -t, --tensors N      float32 matrices in the model (default 8)\n"
	       "  -c, --cols N         columns of each (default 4096; rows follow from --size)\n"
	       "  --cache cold|warm    cold (default): drop the files' cached pages before every\n"
	       "                       read with posix_fadvise(DONTNEED); warm: read the page cache\n"
	       "  --keep-files         leave the directory and its last checkpoints\n"
	       "  --files rank|node    a shard file per rank (default) or one per node\n"
	       "  -p, --parallel SPEC  layout for llmp_init (default: the plugin's, else all dp)\n"
	       "Exit status: 0 success, 1 a failed step or a wrong restored value, 2 bad input.\n");
}

static int parse_args(int argc, char **argv, struct bench_args *a)
{
	static const struct option options[] = {
		{ "size", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "iters", required_argument, NULL, 'n' },
		{ "tensors", required_argument, NULL, 't' },
		{ "cols", required_argument, NULL, 'c' },
		{ "cache", required_argument, NULL, 'C' },
		{ "keep-files", no_argument, NULL, 'k' },
		{ "parallel", required_argument, NULL, 'p' },
		{ "files", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, bad = 0;
	*a = (struct bench_args){
		.size = 256 << 20, .iters = 3, .tensors = 8, .cols = 4096, .dir = ".", .cold = true
	};
	opterr = 0;
	optind = 1;
	while (!bad && (c = getopt_long(argc, argv, ":s:d:n:t:c:p:h", options, NULL)) != -1) {
		switch (c) {
		case 's':
			bad = cli_parse_size(PROG, "--size", optarg, 64 << 10, UINT64_C(1) << 44, &a->size);
			break;
		case 'd': a->dir = optarg; break;
		case 'n': bad = cli_parse_count(PROG, "--iters", optarg, 1, 1000, &a->iters); break;
		case 't': bad = cli_parse_count(PROG, "--tensors", optarg, 1, 100000, &a->tensors); break;
		case 'c':
			bad = cli_parse_count(PROG, "--cols", optarg, 1, UINT64_C(1) << 32, &a->cols);
			break;
		case 'C':
			if (strcmp(optarg, "cold") != 0 && strcmp(optarg, "warm") != 0)
				return cli_usage_error(PROG, "--cache: expected cold or warm, not", optarg);
			a->cold = strcmp(optarg, "cold") == 0;
			break;
		case 'k': a->keep_files = true; break;
		case 'F':
			if (strcmp(optarg, "rank") != 0 && strcmp(optarg, "node") != 0)
				return cli_usage_error(PROG, "--files: expected rank or node, not", optarg);
			a->files = strcmp(optarg, "node") == 0 ? LLMP_CKPT_FILES_NODE : LLMP_CKPT_FILES_RANK;
			break;
		case 'p': a->spec = optarg; break;
		case 'h': help(); return -1;
		case ':': return cli_usage_error(PROG, "missing value for", cli_culprit(argv));
		default: return cli_usage_error(PROG, "unknown option", cli_culprit(argv));
		}
	}
	if (bad)
		return CLI_EXIT_USAGE;
	if (optind < argc)
		return cli_usage_error(PROG, "unexpected argument", argv[optind]);
	struct stat sb;
	int missing = stat(a->dir, &sb);
	if (missing || !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, PROG ": --dir %s: %s\n", cli_printable(a->dir),
			missing ? strerror(errno) : "not a directory");
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

/* ------------------------------------------------------------- the model */

/* Part i of k of n: [i*n/k, (i+1)*n/k). */
static void part(uint64_t n, uint32_t k, uint32_t i, uint64_t *offset, uint64_t *count)
{
	*offset = n * i / k;
	*count = n * (i + 1) / k - *offset;
}

/* Element g (row-major global index) of tensor t at step: an integer, exact in float32. */
static float value(size_t t, uint64_t g, uint64_t step)
{
	return (float)((g * UINT64_C(2654435761) + t * UINT64_C(40503) + step * UINT64_C(7919)) % 16777213u);
}

/* The saved slicing's tensors hold the values of `step`. */
static void fill_save(struct model *m, uint64_t step)
{
	size_t per = (size_t)(m->nrows * m->cols);
	for (size_t t = 0; t < m->tensors; t++)
		for (size_t i = 0; i < per; i++)
			m->save[t * per + i] = value(t, m->row0 * m->cols + i, step);
}

/* Restored elements that are not the values of `step`. */
static uint64_t count_wrong(const struct model *m, uint64_t step)
{
	uint64_t wrong = 0;
	for (size_t t = 0; t < m->tensors; t++) {
		const float *x = m->restore + t * m->rows * m->ncols;
		for (uint64_t r = 0; r < m->rows; r++)
			for (uint64_t c = 0; c < m->ncols; c++)
				wrong += x[r * m->ncols + c] != value(t, r * m->cols + m->col0 + c, step);
	}
	return wrong;
}

/* The shapes, the same on every rank: false (and a message from rank 0) when too small to split. */
static bool model_shape(struct bench *b)
{
	struct model *m = &b->m;
	const struct bench_args *a = b->args;
	m->rank = llmp_rank(b->ctx);
	m->world = llmp_world_size(b->ctx);
	m->tensors = (size_t)a->tensors;
	m->cols = a->cols;
	m->rows = a->size / a->tensors / (a->cols * sizeof(float));
	if (m->rows >= m->world && m->cols >= m->world)
		return true;
	if (m->rank == 0)
		fprintf(stderr,
			PROG ": --size %" PRIu64 " makes %zu tensors of %" PRIu64 " x %" PRIu64 ": too small "
			     "to split over %u rank%s both ways\n",
			a->size, m->tensors, m->rows, m->cols, m->world, m->world == 1 ? "" : "s");
	return false;
}

/* This rank's slices and buffers; false (with a message) when out of memory. */
static bool model_build(struct bench *b)
{
	struct model *m = &b->m;
	part(m->rows, m->world, m->rank, &m->row0, &m->nrows);
	part(m->cols, m->world, m->rank, &m->col0, &m->ncols);
	m->save_bytes = m->tensors * m->nrows * m->cols * sizeof(float);
	m->restore_bytes = m->tensors * m->rows * m->ncols * sizeof(float);
	m->save = malloc(m->save_bytes);
	m->restore = malloc(m->restore_bytes);
	m->scratch = malloc(m->save_bytes);
	if (!m->save || !m->restore || !m->scratch) {
		fprintf(stderr, PROG ": rank %u: no memory for 3 x %zu bytes\n", m->rank, m->save_bytes);
		return false;
	}
	/* Every page touched now, so no measurement pays for the first touch of its buffers. */
	memset(m->scratch, 0, m->save_bytes);
	memset(m->restore, 0, m->restore_bytes);
	return true;
}

static void model_free(struct model *m)
{
	free(m->save);
	free(m->restore);
	free(m->scratch);
}

/* Register the model's tensors with ck: the saved slicing, or the restored one. */
static llmp_status model_register(struct model *m, llmp_ckpt *ck, bool restored)
{
	for (size_t t = 0; t < m->tensors; t++) {
		char name[64];
		uint64_t global[2] = { m->rows, m->cols };
		uint64_t offset[2] = { restored ? 0 : m->row0, restored ? m->col0 : 0 };
		uint64_t shape[2] = { restored ? m->rows : m->nrows, restored ? m->ncols : m->cols };
		void *data = restored ? (void *)(m->restore + t * m->rows * m->ncols)
				      : (void *)(m->save + t * m->nrows * m->cols);
		snprintf(name, sizeof name, "bench/w%zu", t);
		llmp_status st = llmp_ckpt_register(ck, name, LLMP_FLOAT32, 2, global, offset, shape, data);
		if (st != LLMP_OK)
			return st;
	}
	return LLMP_OK;
}

/* ---------------------------------------------------------- agreement */

/* Every rank learns whether any failed (failed: this one did, and said why). */
static int agree(struct bench *b, bool failed)
{
	double any = failed;
	if (llmp_allreduce(b->world, &any, &any, 1, LLMP_FLOAT64, LLMP_MAX) != LLMP_OK) {
		fprintf(stderr, PROG ": rank %u: %s\n", b->m.rank, llmp_errmsg(b->ctx));
		return CLI_EXIT_FAILURE;
	}
	return any > 0 ? CLI_EXIT_FAILURE : 0;
}

static bool failed_errno(struct bench *b, int rc, const char *what, const char *path)
{
	if (rc != 0)
		fprintf(stderr, PROG ": rank %u: %s %s: %s\n", b->m.rank, what, path, strerror(errno));
	return rc != 0;
}

static bool failed_llmp(struct bench *b, llmp_status st, const char *what)
{
	if (st != LLMP_OK)
		fprintf(stderr, PROG ": rank %u: %s: %s: %s\n", b->m.rank, what, llmp_strerror(st),
			llmp_errmsg(b->ctx));
	return st != LLMP_OK;
}

/* Record the slowest rank's seconds for measurement `which` of iteration i. */
static int record(struct bench *b, enum meas which, uint64_t i, double seconds)
{
	if (llmp_allreduce(b->world, &seconds, &seconds, 1, LLMP_FLOAT64, LLMP_MAX) != LLMP_OK)
		return agree(b, failed_llmp(b, LLMP_ERR_STATE, "collecting times"));
	b->t[which][i] = seconds;
	return 0;
}

static int barrier(struct bench *b)
{
	return agree(b, failed_llmp(b, llmp_barrier(b->world), "barrier"));
}

/* ------------------------------------------------------- one iteration */

/* write()+fsync of this rank's bytes, then read() of them back (cold or warm), then memcpy. */
static int plain_io(struct bench *b, uint64_t i)
{
	struct model *m = &b->m;
	double t;
	int rc = barrier(b);
	t = now();
	bool bad = failed_errno(b, bench_write_fsync(b->plain, m->save, m->save_bytes), "write+fsync",
				b->plain);
	if (!rc)
		rc = record(b, M_WRITE, i, now() - t);
	if (!rc && b->args->cold)
		bad |= failed_errno(b, bench_drop_cache(b->plain), "posix_fadvise", b->plain);
	if (!rc && !(rc = agree(b, bad)) && !(rc = barrier(b))) {
		t = now();
		bad = failed_errno(b, bench_read(b->plain, m->scratch, m->save_bytes), "read", b->plain);
		rc = record(b, M_READ, i, now() - t);
		bad |= failed_errno(b, unlink(b->plain), "unlink", b->plain);
		if (!rc)
			rc = agree(b, bad);
	}
	if (!rc && !(rc = barrier(b))) {
		t = now();
		memcpy(m->scratch, m->save, m->save_bytes);
		rc = record(b, M_MEMCPY, i, now() - t);
	}
	return rc;
}

/* A synchronous save of step, timed. */
static int save_sync(struct bench *b, uint64_t i, uint64_t step)
{
	fill_save(&b->m, step);
	int rc = barrier(b);
	double t = now();
	llmp_status st = rc ? LLMP_OK : llmp_ckpt_save(b->saver, step, &step, sizeof step);
	if (!rc)
		rc = record(b, M_SAVE, i, now() - t);
	return rc ? rc : agree(b, failed_llmp(b, st, "llmp_ckpt_save"));
}

/* An async save of step: the stall, then the tensors overwritten, then the commit. */
static int save_async(struct bench *b, uint64_t i, uint64_t step)
{
	llmp_ckpt_stats stats = { .size = sizeof stats };
	fill_save(&b->m, step);
	int rc = barrier(b);
	double t = now();
	llmp_status st = rc ? LLMP_OK : llmp_ckpt_save_async(b->saver, step, &step, sizeof step);
	double stall = now() - t;
	/* What training does next: the checkpoint must not see it. */
	fill_save(&b->m, step + 1000003);
	if (st == LLMP_OK)
		st = llmp_ckpt_wait(b->saver);
	llmp_ckpt_get_stats(b->saver, &stats);
	if (!rc)
		rc = record(b, M_STALL, i, stall);
	if (!rc)
		rc = record(b, M_COMMIT, i, stats.total_seconds);
	return rc ? rc : agree(b, failed_llmp(b, st, "llmp_ckpt_save_async"));
}

/* Restore step into the other slicing (cold or warm), timed and checked. */
static int restore(struct bench *b, uint64_t i, uint64_t step)
{
	char dir[4200];
	uint64_t loaded = 0;
	ck_step_path(b->dir, step, "", dir, sizeof dir);
	memset(b->m.restore, 0xff, b->m.restore_bytes); /* NaNs: nothing passes for restored */
	bool bad = b->args->cold && failed_errno(b, bench_drop_cache(dir), "posix_fadvise", dir);
	int rc = agree(b, bad);
	if (!rc)
		rc = barrier(b);
	double t = now();
	llmp_status st = rc ? LLMP_OK : llmp_ckpt_load(b->loader, step, &loaded, NULL, 0, NULL);
	if (!rc)
		rc = record(b, M_RESTORE, i, now() - t);
	if (!rc && !(rc = agree(b, failed_llmp(b, st, "llmp_ckpt_load")))) {
		double wrong = (double)count_wrong(&b->m, step);
		if (llmp_allreduce(b->world, &wrong, &wrong, 1, LLMP_FLOAT64, LLMP_SUM) != LLMP_OK)
			rc = agree(b, failed_llmp(b, LLMP_ERR_STATE, "collecting #wrong"));
		b->wrong += wrong;
	}
	return rc;
}

/* The iteration's two checkpoints go, outside every timing, so no save pays for retention. */
static int clean_steps(struct bench *b, uint64_t sync_step, uint64_t async_step)
{
	bool bad = false;
	if (b->m.rank == 0)
		for (int k = 0; k < 2; k++) {
			char dir[4200];
			ck_step_path(b->dir, k ? async_step : sync_step, "", dir, sizeof dir);
			bad |= failed_errno(b, bench_remove_tree(dir), "rm -r", dir);
		}
	return agree(b, bad);
}

static int iterate(struct bench *b, uint64_t i, bool last)
{
	uint64_t sync_step = 2 * i + 1, async_step = 2 * i + 2;
	int rc = plain_io(b, i);
	if (!rc)
		rc = save_sync(b, i, sync_step);
	if (!rc)
		rc = save_async(b, i, async_step);
	if (!rc)
		rc = restore(b, i, async_step);
	if (!rc && !(last && b->args->keep_files))
		rc = clean_steps(b, sync_step, async_step);
	return rc;
}

/* ---------------------------------------------------------------- report */

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, size_t n)
{
	double *copy = malloc(n * sizeof *copy);
	if (!copy)
		return v[0];
	memcpy(copy, v, n * sizeof *copy);
	qsort(copy, n, sizeof *copy, compare_double);
	double mid = n % 2 ? copy[n / 2] : (copy[n / 2 - 1] + copy[n / 2]) / 2;
	free(copy);
	return mid;
}

static void print_header(const struct bench *b)
{
	const struct model *m = &b->m;
	const struct bench_args *a = b->args;
	char host[64] = "?", total[32], per[32];
	uint64_t bytes = (uint64_t)m->tensors * m->rows * m->cols * sizeof(float);
	gethostname(host, sizeof host - 1);
	printf("# llmp ckpt bench: %u rank%s (%u on %s); model %s: %zu float32 tensors of %" PRIu64
	       " x %" PRIu64 ", about %s per rank\n",
	       m->world, m->world == 1 ? "" : "s", llmp_local_size(b->ctx), host,
	       cli_human_bytes(bytes, total, sizeof total), m->tensors, m->rows, m->cols,
	       cli_human_bytes(bytes / m->world, per, sizeof per));
	printf("# shard files: one per %s\n", a->files == LLMP_CKPT_FILES_NODE ? "node" : "rank");
	printf("# files in %s (%s); reads %s\n", b->dir, bench_fs_name(b->dir),
	       a->cold ? "cold: cached pages dropped first with posix_fadvise(DONTNEED)"
		       : "warm: from the page cache");
	if (m->world > 1)
		printf("# saved with rows split across ranks, restored with columns split across them\n");
	else
		printf("# one rank cannot reshard: the restore reads the slicing it saved\n");
	printf("# %u iterations; a time is the slowest rank's, the figure the median; GB = 1e9 bytes\n"
	       "# ratio: GB/s over the baseline's (save, restore), time over the baseline's (stall)\n",
	       (unsigned)a->iters);
	printf("# %-26s %12s %10s %9s  %-12s %6s  %-11s %7s\n", "operation", "bytes", "time(ms)", "GB/s",
	       "baseline", "ratio", "goal", "#wrong");
}

/* One row; baseline < 0: none. by_time: the ratio is time over the baseline's time. */
static void print_row(const char *what, uint64_t bytes, double t, enum meas base, const double *med,
		      const char *base_name, bool by_time, double goal, const char *wrong)
{
	printf("  %-26s %12" PRIu64 " %10.2f %9.3f", what, bytes, t * 1e3, (double)bytes / t / 1e9);
	if (!base_name) {
		printf("\n");
		return;
	}
	double ratio = by_time ? t / med[base] : med[base] / t;
	bool met = by_time ? ratio <= goal : ratio >= goal;
	printf("  %-12s %6.2f  %s%.1f %-5s %7s\n", base_name, ratio, by_time ? "<=" : ">=", goal,
	       met ? "met" : "MISSED", wrong);
}

static void report(const struct bench *b)
{
	const struct model *m = &b->m;
	size_t n = (size_t)b->args->iters;
	uint64_t bytes = (uint64_t)m->tensors * m->rows * m->cols * sizeof(float);
	double med[NMEAS];
	char wrong[32];
	for (int k = 0; k < NMEAS; k++)
		med[k] = median(b->t[k], n);
	/* The first async save is shown on its own: it is the one a cold start would hurt. */
	double stall = n > 1 ? median(b->t[M_STALL] + 1, n - 1) : med[M_STALL];
	snprintf(wrong, sizeof wrong, "%.0f", b->wrong);
	print_header(b);
	print_row("write+fsync (plain file)", bytes, med[M_WRITE], 0, med, NULL, false, 0, "");
	print_row("memcpy", bytes, med[M_MEMCPY], 0, med, NULL, false, 0, "");
	print_row("read (plain file)", bytes, med[M_READ], 0, med, NULL, false, 0, "");
	print_row("save", bytes, med[M_SAVE], M_WRITE, med, "write+fsync", false, 0.8, "-");
	print_row("save_async stall (1st)", bytes, b->t[M_STALL][0], M_MEMCPY, med, "memcpy", true, 1.5, "-");
	if (n > 1)
		print_row("save_async stall (2nd on)", bytes, stall, M_MEMCPY, med, "memcpy", true, 1.2, "-");
	print_row("save_async to commit", bytes, med[M_COMMIT], 0, med, NULL, false, 0, "");
	print_row(m->world > 1 ? "restore, resharded" : "restore", bytes, med[M_RESTORE], M_READ, med, "read",
		  false, 0.7, wrong);
}

/* ----------------------------------------------------------------- setup */

/* Rank 0 makes the bench's directory; every rank learns its name. */
static int make_dir(struct bench *b)
{
	bool bad = false;
	memset(b->dir, 0, sizeof b->dir);
	if (b->m.rank == 0) {
		snprintf(b->dir, sizeof b->dir, "%s/llmp-ckpt-bench-XXXXXX", b->args->dir);
		bad = failed_errno(b, mkdtemp(b->dir) ? 0 : -1, "mkdtemp", b->dir);
	}
	int rc = agree(b, bad);
	if (!rc && llmp_broadcast(b->world, b->dir, b->dir, sizeof b->dir, LLMP_UINT8, 0) != LLMP_OK)
		rc = agree(b, failed_llmp(b, LLMP_ERR_STATE, "broadcasting the directory"));
	b->dir[sizeof b->dir - 1] = '\0';
	snprintf(b->plain, sizeof b->plain, "%s/plain-%u.bin", b->dir, b->m.rank);
	return rc;
}

static int open_checkpoints(struct bench *b)
{
	llmp_ckpt_opts o = { .root = b->dir, .files = b->args->files };
	llmp_status st = llmp_ckpt_open(b->ctx, &o, &b->saver);
	if (st == LLMP_OK)
		st = llmp_ckpt_open(b->ctx, &o, &b->loader);
	if (st == LLMP_OK)
		st = model_register(&b->m, b->saver, false);
	if (st == LLMP_OK)
		st = model_register(&b->m, b->loader, true);
	if (st == LLMP_OK) /* as llmp_job_resume does before training starts */
		st = llmp_ckpt_prepare_async(b->saver);
	return agree(b, failed_llmp(b, st, "opening the checkpoints"));
}

static int run(struct bench *b)
{
	if (!model_shape(b))
		return CLI_EXIT_USAGE;
	int rc = agree(b, !model_build(b));
	if (!rc)
		rc = make_dir(b);
	if (!rc)
		rc = open_checkpoints(b);
	for (int k = 0; !rc && k < NMEAS; k++)
		if (!(b->t[k] = calloc((size_t)b->args->iters, sizeof(double))))
			rc = agree(b, failed_errno(b, -1, "allocating", "timings"));
	for (uint64_t i = 0; !rc && i < b->args->iters; i++)
		rc = iterate(b, i, i + 1 == b->args->iters);
	if (!rc && b->m.rank == 0)
		report(b);
	llmp_ckpt_close(b->saver);
	llmp_ckpt_close(b->loader);
	if (b->dir[0] && !b->args->keep_files && llmp_barrier(b->world) == LLMP_OK && b->m.rank == 0 &&
	    bench_remove_tree(b->dir) != 0)
		fprintf(stderr, PROG ": rm -r %s: %s\n", b->dir, strerror(errno));
	if (!rc && b->wrong > 0)
		rc = CLI_EXIT_FAILURE;
	return rc;
}

int cli_ckpt_bench(int argc, char **argv)
{
	struct bench_args args;
	int rc = parse_args(argc, argv, &args);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	struct bench b = { .args = &args };
	if ((rc = cli_join_job(PROG, args.spec, &b.ctx)) != CLI_EXIT_OK)
		return rc;
	if (llmp_comm_world(b.ctx, &b.world) != LLMP_OK) {
		fprintf(stderr, PROG ": %s\n", llmp_errmsg(b.ctx));
		rc = CLI_EXIT_FAILURE;
	} else {
		rc = run(&b);
	}
	if (b.wrong > 0 && b.m.rank == 0)
		fprintf(stderr, PROG ": %.0f restored elements differ from the values saved\n", b.wrong);
	for (int k = 0; k < NMEAS; k++)
		free(b.t[k]);
	model_free(&b.m);
	llmp_finalize(b.ctx);
	return rc;
}

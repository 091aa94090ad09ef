/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_check.h - the pieces of rt_check, the runtime's test program.
 *
 * rt_check runs under `srun --mpi=pmix` (or alone, as a PMIx singleton) and
 * checks libllmp from the outside, through its public API only. Every
 * expected answer is computed here, independently of libllmp and of the
 * kernels it uses (see rt_values.h).
 *
 * One concept per file: rt_check.c parses the command line and dispatches,
 * rt_report.c counts checks and names wrong elements, rt_values.c makes
 * inputs and expected results, and one file per subcommand family.
 *
 * Our names start with chk_, not rt_: libllmp is linked in statically, and
 * its internal functions use rt_.
 */
#ifndef RT_CHECK_H
#define RT_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp.h>
#include "tests/lib/report.h"

/* What the command line asked for; shared by every subcommand. */
typedef struct chk_args {
	const char *spec;      /* --parallel, else $LLMP_TEST_SPEC, else NULL (plugin's) */
	double timeout_s;      /* --timeout; 0: the runtime's default */
	size_t ring_threshold; /* --ring-threshold; 0: the runtime's default */
	size_t shm_threshold;  /* --shm-threshold; 0: the runtime's default */
	size_t count;          /* --count: kill's and disagree's allreduce elements */
	size_t large;          /* --large: the big element count of the sweep */
	bool quick;            /* --quick: counts 0, 1, 7 and large only */
	const char *group;     /* --group: p2p along this group ("pp" by default) */
	uint32_t victim;       /* --victim: kill's victim */
	uint32_t odd;          /* --odd: the rank that differs (mismatch, disagree) */
	double max_seconds;    /* --max-seconds: kill's allowed detection time */
	bool skip_bad_init;    /* --skip-bad-init: badargs without the failing inits */
	bool hang;             /* --hang: kill's victim stops answering instead of dying */
	unsigned seed;         /* --seed: for the random pass */
	double sleep_s;        /* --sleep: metrics' victim sleeps this long before each call */
} chk_args;

/* ------------------------------------------------------------ rt_report.c */

/* Which operation a check is about, for the report. */
typedef struct chk_case {
	const char *what;  /* "allreduce", "p2p recv", ... */
	const char *group; /* communicator name */
	int op;            /* llmp_op, or -1 */
	int dtype;         /* llmp_dtype, or -1 */
	size_t count;
	bool inplace;
	int64_t root; /* broadcast root or p2p peer, or -1 */
} chk_case;

/* Counting and printing checks: report.h. */
/* One wrong element; printed for the first few only. */
void chk_wrong_elem(const chk_case *c, size_t index, const void *got, const void *expected, const char *why);
/* A call that returned a status it should not have. */
void chk_wrong_status(const chk_case *c, llmp_status st, const char *errmsg);

/* Seconds on a monotonic clock. */
double chk_now(void);
void chk_sleep(double seconds);

/* llmp_init with the options of args. */
llmp_status chk_init(const chk_args *args, llmp_ctx **ctx);

/* ------------------------------------------------------------ subcommands */
int chk_cmd_coll(const chk_args *args);
int chk_cmd_p2p(const chk_args *args);
int chk_cmd_stats(const chk_args *args);
int chk_cmd_mismatch(const chk_args *args);
int chk_cmd_kill(const chk_args *args);
int chk_cmd_disagree(const chk_args *args);
int chk_cmd_singleton(const chk_args *args);
int chk_cmd_badargs(const chk_args *args);
int chk_cmd_leave(const chk_args *args);
int chk_cmd_metrics(const chk_args *args);

/* The collective sweep over the world and every group of ctx (rt_coll.c). */
void chk_sweep_all(llmp_ctx *ctx, const chk_args *args);

/* True if msg names "rank R" (R followed by no further digit). */
bool chk_names_rank(const char *msg, uint32_t rank);

#endif /* RT_CHECK_H */

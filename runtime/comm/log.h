/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.h - what the runtime says on stderr, and LLMP_DEBUG, which chooses
 * how much of it.
 *
 * Every line goes through rt_log, the one place that writes to stderr in
 * runtime/. LLMP_DEBUG=LEVEL[,PART...] is read once, by llmp_init, into the
 * context (doc/llmp.3, ENVIRONMENT). Unset, what prints is what printed
 * before the variable existed, as it printed: warnings and the job's story
 * (info); set, every line reads
 *
 *     llmp: 2026-11-21T13:50:36.154 rank 2 ckpt debug: ...
 *
 * (the time, the rank, the part and the level, always in this order), so
 * `grep ' ckpt debug: '` or `grep 'rank 2 '` finds what it names.
 *
 * The parsing (log_conf.c) needs no context, and no PMIx or UCX: the unit
 * test compiles it alone.
 */
#ifndef LLMP_RT_LOG_H
#define LLMP_RT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <llmp/llmp.h>

/* How much: each level prints what the ones before it print, and more. */
enum rt_log_level {
	RT_LOG_NONE,  /* nothing at all, not even warnings */
	RT_LOG_WARN,  /* what went wrong and was survived */
	RT_LOG_INFO,  /* and the run's story: the default */
	RT_LOG_DEBUG, /* and each phase of each part: where a hang or a slow start is */
	RT_LOG_TRACE, /* and each peer and file: an endpoint opened, a shard written */
	RT_LOG_NLEVELS
};
#define RT_LOG_DEFAULT RT_LOG_INFO

/* About what: the runtime's folders (runtime/README.md). */
enum rt_log_part {
	RT_LOG_COMM,   /* wire-up, the fence, UCX, communicators */
	RT_LOG_COLL,   /* collectives and their shared-memory segments */
	RT_LOG_DEVICE, /* NCCL: loading it, connecting its communicators */
	RT_LOG_CKPT,   /* checkpoint save and load */
	RT_LOG_JOB,    /* stop, requeue, resume */
	RT_LOG_INIT,   /* llmp_init and llmp_finalize */
	RT_LOG_NPARTS
};

struct rt_log_conf {
	unsigned char level[RT_LOG_NPARTS]; /* the most detailed level each part prints */
	bool set;                           /* LLMP_DEBUG was given: every line in the fixed format */
};

/* log_conf.c: the names, as LLMP_DEBUG spells them and the lines print them. */
const char *rt_log_level_name(enum rt_log_level level);
const char *rt_log_part_name(enum rt_log_part part);

/*
 * LLMP_DEBUG's text into conf: NULL or "" gives the default (info, every
 * part, the lines of before). Otherwise a level (none, warn, info, debug,
 * trace; any case), then optionally parts, comma-separated: the level is
 * theirs alone, and the other parts stay at info or below (debug,ckpt: the
 * checkpoint's debug lines and everyone's warnings and story). Returns 0;
 * -1 with "LLMP_DEBUG='TEXT': ..." in msg, naming the word it could not
 * read, and conf at the default.
 */
int rt_log_conf_parse(const char *text, struct rt_log_conf *conf, char *msg, size_t msglen);

/* log.c: whether rt_log would print this line (for a line costly to make). */
bool rt_log_on(const llmp_ctx *ctx, enum rt_log_part part, enum rt_log_level level);

/*
 * One line on stderr, if the context's LLMP_DEBUG lets this part's level
 * through; made one line (control bytes as '?') and written with one call,
 * so that lines of ranks sharing the output do not interleave.
 */
void rt_log(const llmp_ctx *ctx, enum rt_log_part part, enum rt_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The wall-clock time as the lines write it ("2026-11-21T13:42:10.123"). */
void rt_log_time(const struct timespec *when, char *buf, size_t len);

#endif /* LLMP_RT_LOG_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * settings.h - every setting llmp reads, in one table: the environment
 * variables (llmp's own LLMP_*, and those of Slurm, NCCL, PyTorch and the
 * system that a part of llmp reads) and the plugstack.conf arguments of the
 * SPANK plugin. `llmp info --settings` prints it; tests/info.bats fails when
 * the sources read a variable or an argument the table lacks, or the table
 * keeps one they no longer read, or a man page leaves one out.
 */
#ifndef LLMP_CLI_SETTINGS_H
#define LLMP_CLI_SETTINGS_H

#include <stddef.h>

/* Who reads it. */
enum {
	SET_RUNTIME = 1 << 0, /* libllmp, in the training program's process */
	SET_PLUGIN = 1 << 1,  /* the SPANK plugin llm_parallel.so (srun, slurmstepd) */
	SET_CLI = 1 << 2,     /* the llmp tool (and llmp-bench, which it runs) */
	SET_PYTHON = 1 << 3,  /* the llmp Python package */
	SET_SECRET = 1 << 8,  /* not a reader: its value is never printed */
};

enum cli_setting_kind {
	SETTING_ENV,  /* an environment variable */
	SETTING_SITE, /* a plugstack.conf argument of llm_parallel.so (llm_parallel(8)) */
};

struct cli_setting {
	const char *name; /* LLMP_TIMEOUT; for a plugstack argument its key, max_tp */
	enum cli_setting_kind kind;
	unsigned readers;     /* SET_* */
	const char *set_by;   /* "you", "plugin", "Slurm", "site": who gives it a value */
	const char *fallback; /* the default, as text; NULL: none (unset means absent, or off) */
	const char *meaning;  /* one line */
};

extern const struct cli_setting cli_settings[];
extern const size_t cli_nsettings;

/* "runtime,plugin": the readers as text, into buf. */
const char *cli_setting_readers(unsigned readers, char *buf, size_t len);

#endif /* LLMP_CLI_SETTINGS_H */

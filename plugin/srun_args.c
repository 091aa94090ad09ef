/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srun_args.c - srun's task count from its command line (srun_args.h).
 *
 * The option tables list srun's options by whether they take an argument, as
 * srun's --help and srun(1) of Slurm 22.05 to 26.05 give them, plus the
 * plugin's own. An option missing from them only makes the answer unknown.
 */
#include "srun_args.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Short options taking no argument, or an optional one (which getopt only
 * takes from the same word: -I30, -k, -K1). */
static const char short_no_arg[] = "EhHjlOQsuvVXZ";
static const char short_optional_arg[] = "IkK";
/* Short options taking an argument, in the same word or the next. */
static const char short_with_arg[] = "AbBcCdDeGiJLmMnNopqSTtwWx";

/* Long options taking no argument, or an optional one (only as --name=value). */
static const char *const long_no_arg[] = {
	"accel-bind-help",
	"contiguous",
	"disable-status",
	"exact",
	"exclusive",
	"help",
	"hold",
	"immediate",
	"kill-on-bad-exit",
	"label",
	"multi-prog",
	"no-allocate",
	"no-kill",
	"overcommit",
	"overlap",
	"oversubscribe",
	"preserve-env",
	"propagate",
	"pty",
	"quiet",
	"quit-on-interrupt",
	"reboot",
	"send-libs",
	"spread-job",
	"test-only",
	"unbuffered",
	"usage",
	"use-min-nodes",
	"verbose",
	"version",
	"whole",
	"x11",
	"compress",
	NULL,
};
/* Long options taking an argument (--name value or --name=value). */
static const char *const long_with_arg[] = {
	"account",
	"acctg-freq",
	"begin",
	"bcast",
	"chdir",
	"clusters",
	"comment",
	"constraint",
	"core-spec",
	"cores-per-socket",
	"cpu-bind",
	"cpu-freq",
	"cpus-per-gpu",
	"cpus-per-task",
	"deadline",
	"delay-boot",
	"dependency",
	"distribution",
	"epilog",
	"error",
	"exclude",
	"export",
	"extra-node-info",
	"gid",
	"gpu-bind",
	"gpu-freq",
	"gpus",
	"gpus-per-node",
	"gpus-per-socket",
	"gpus-per-task",
	"gres",
	"gres-flags",
	"hint",
	"input",
	"job-name",
	"licenses",
	"mail-type",
	"mail-user",
	"mcs-label",
	"mem",
	"mem-bind",
	"mem-per-cpu",
	"mem-per-gpu",
	"mincpus",
	"mpi",
	"network",
	"nice",
	"nodefile",
	"nodelist",
	"nodes",
	"ntasks",
	"ntasks-per-core",
	"ntasks-per-gpu",
	"ntasks-per-node",
	"ntasks-per-socket",
	"open-mode",
	"output",
	"partition",
	"power",
	"prefer",
	"priority",
	"profile",
	"prolog",
	"qos",
	"relative",
	"reservation",
	"resv-ports",
	"signal",
	"slurmd-debug",
	"sockets-per-node",
	"task-epilog",
	"task-prolog",
	"threads-per-core",
	"time",
	"time-min",
	"tmp",
	"tres-per-task",
	"uid",
	"wait",
	"wckey",
	/* the plugin's own (options.c) */
	"llm-parallel",
	"llm-checkpoint",
	"llm-model",
	"llm-gpu-bind",
	"llm-placement",
	NULL,
};
/* Options that make the step's task count something else than one number:
 * another job's allocation decides, or a heterogeneous step. */
static const char *const long_unknowable[] = { "jobid", "het-group", "pack-group", NULL };

static bool listed(const char *const *list, const char *name, size_t len)
{
	for (; *list; list++)
		if (strlen(*list) == len && strncmp(*list, name, len) == 0)
			return true;
	return false;
}

/* A count as srun takes it: a positive decimal number; 0 if not one. */
static uint32_t count_of(const char *text)
{
	char *end;
	unsigned long v;
	if (!text || *text < '0' || *text > '9')
		return 0;
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || *end || v == 0 || v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

struct seen {
	const char *ntasks, *nodes, *per_node, *distribution;
	bool jobid;
};

/* Records the value of an option that matters here. */
static void note(struct seen *s, const char *name, const char *value)
{
	if (strcmp(name, "n") == 0 || strcmp(name, "ntasks") == 0)
		s->ntasks = value;
	else if (strcmp(name, "N") == 0 || strcmp(name, "nodes") == 0)
		s->nodes = value;
	else if (strcmp(name, "ntasks-per-node") == 0)
		s->per_node = value;
	else if (strcmp(name, "m") == 0 || strcmp(name, "distribution") == 0)
		s->distribution = value;
}

/* A long option at argv[*i] ("--" already stripped); false if unknown. */
static bool long_option(int argc, char *const argv[], int *i, struct seen *s)
{
	const char *word = argv[*i] + 2, *eq = strchr(word, '=');
	size_t len = eq ? (size_t)(eq - word) : strlen(word);
	char name[64];

	if (len == 0 || len >= sizeof name)
		return false;
	if (listed(long_unknowable, word, len)) {
		s->jobid = true;
		return false;
	}
	memcpy(name, word, len);
	name[len] = '\0';
	if (listed(long_with_arg, word, len)) {
		if (eq) {
			note(s, name, eq + 1);
			return true;
		}
		if (*i + 1 >= argc)
			return false;
		note(s, name, argv[++*i]);
		return true;
	}
	/* Another SPANK plugin's option, or one of srun's we do not list: with
	 * "=" its value is in the word; without, we cannot tell. */
	return listed(long_no_arg, word, len) || eq != NULL;
}

/* A cluster of short options at argv[*i] ("-" already stripped); false if unknown. */
static bool short_options(int argc, char *const argv[], int *i, struct seen *s)
{
	const char *p = argv[*i] + 1;
	char name[2] = { 0, 0 };

	for (; *p; p++) {
		if (strchr(short_no_arg, *p))
			continue;
		if (strchr(short_optional_arg, *p))
			return true; /* the rest of the word is its argument */
		if (!strchr(short_with_arg, *p))
			return false;
		name[0] = *p;
		if (p[1]) {
			note(s, name, p + 1);
			return true;
		}
		if (*i + 1 >= argc)
			return false;
		note(s, name, argv[++*i]);
		return true;
	}
	return true;
}

/* srun's options up to its command into *s; false where one cannot be placed. */
static bool parse(int argc, char *const argv[], struct seen *s)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *w = argv[i];
		if (strcmp(w, "--") == 0 || w[0] != '-' || w[1] == '\0')
			break; /* srun's command starts here */
		if (w[1] == '-' ? !long_option(argc, argv, &i, s) : !short_options(argc, argv, &i, s))
			return false;
	}
	/* "srun OPTIONS cmd : OPTIONS cmd" is a heterogeneous step. */
	for (; i < argc; i++)
		if (strcmp(argv[i], ":") == 0)
			return false;
	return true;
}

struct plugin_srun_count plugin_srun_count_of(int argc, char *const argv[])
{
	struct plugin_srun_count unknown = { 0, 0 }, c = { 0, 0 };
	struct seen s = { 0 };

	if (!parse(argc, argv, &s))
		return unknown;

	c.nodes = s.nodes ? count_of(s.nodes) : 0;
	if (s.ntasks)
		c.tasks = count_of(s.ntasks);
	else if (c.nodes && s.per_node && count_of(s.per_node))
		c.tasks = c.nodes * count_of(s.per_node);
	if (c.tasks && c.nodes > c.tasks)
		return unknown; /* srun refuses that itself, and says why */
	return c.tasks ? c : unknown;
}

struct plugin_srun_count plugin_srun_count_of_cmdline(const char *cmdline, size_t len)
{
	enum { MAX_ARGS = 4096 };
	struct plugin_srun_count unknown = { 0, 0 };
	char **argv;
	int argc = 0;
	size_t at = 0;

	if (!cmdline || len == 0 || cmdline[len - 1] != '\0')
		return unknown;
	argv = calloc(MAX_ARGS, sizeof *argv);
	if (!argv)
		return unknown;
	while (at < len && argc < MAX_ARGS) {
		argv[argc++] = (char *)cmdline + at;
		at += strlen(cmdline + at) + 1;
	}
	struct plugin_srun_count c = at < len ? unknown : plugin_srun_count_of(argc, argv);
	free(argv);
	return c;
}

bool plugin_srun_arbitrary_allocation(int argc, char *const argv[], const char *env_distribution,
				      const char *env_job_id)
{
	struct seen s = { 0 };
	bool parsed = parse(argc, argv, &s);
	const char *d;

	if (s.jobid || (env_job_id && *env_job_id))
		return false; /* an allocation that exists: no node selection */
	if (!parsed)
		return false;
	d = s.distribution ? s.distribution : env_distribution;
	/* "arbitrary", maybe followed by ":block" and the like */
	return d && strncmp(d, "arbitrary", 9) == 0 && (d[9] == '\0' || d[9] == ':' || d[9] == ',');
}

const char *plugin_arbitrary_tree_warning(uint32_t slurm_version_number, bool arbitrary_allocation,
					  const char *topology_plugin)
{
	/* 23.11.0 as SLURM_VERSION_NUM(23, 11, 0) */
	if (slurm_version_number < ((23u << 16) | (11u << 8)) || !arbitrary_allocation || !topology_plugin ||
	    strcmp(topology_plugin, "topology/tree") != 0)
		return NULL;
	return "warning: -m arbitrary in a new allocation under TopologyPlugin=topology/tree: "
	       "since Slurm 23.11 the tree's node selection ignores the per-node task counts of "
	       "an arbitrary list, and the job can stay PENDING for ever; allocate the nodes first "
	       "(salloc or sbatch -w NODES) and run srun -m arbitrary inside the allocation";
}

/* Strips blanks at both ends of [*b, *e). */
static void trim(const char **b, const char **e)
{
	while (*b < *e && (**b == ' ' || **b == '\t'))
		(*b)++;
	while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\n' || (*e)[-1] == '\r'))
		(*e)--;
}

int plugin_slurm_conf_value(const char *path, const char *key, char *out, size_t outlen)
{
	char line[1024];
	int found = 0;
	FILE *f;

	if (!path || !outlen || !(f = fopen(path, "r")))
		return -1;
	out[0] = '\0';
	while (fgets(line, sizeof line, f)) {
		const char *b = line, *e = strchr(line, '#'), *eq;
		if (!e)
			e = line + strlen(line);
		trim(&b, &e);
		eq = memchr(b, '=', (size_t)(e - b));
		if (!eq)
			continue;
		const char *kb = b, *ke = eq, *vb = eq + 1, *ve = e;
		trim(&kb, &ke);
		trim(&vb, &ve);
		/* Keys are case-insensitive in slurm.conf; the last one wins. */
		if ((size_t)(ke - kb) != strlen(key) || strncasecmp(kb, key, (size_t)(ke - kb)) != 0)
			continue;
		if ((size_t)(ve - vb) >= outlen)
			continue;
		memcpy(out, vb, (size_t)(ve - vb));
		out[ve - vb] = '\0';
		found = 1;
	}
	fclose(f);
	return found;
}

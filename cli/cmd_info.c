/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_info.c - `llmp info --settings`: every setting llmp reads (the table
 * of settings.c), with its default, its value here and where that came
 * from, and who reads it; as aligned columns, or JSON.
 */
#include "config.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "common/json_writer.h"
#include "llmp_cli.h"
#include "runtime/comm/log.h"
#include "settings.h"
#include <llmp/llmp_env.h>

#define PROG "llmp info"

extern char **environ;

static void help(void)
{
	printf("usage: llmp info --settings [--format text|json]\n"
	       "Every setting llmp reads: its environment variables (llmp's own LLMP_*, and those\n"
	       "of Slurm, NCCL, PyTorch and the system that a part of llmp reads) with the\n"
	       "default, the value in this environment and where it came from (environment,\n"
	       "default, or unset), who sets it and who reads it (runtime: libllmp; plugin:\n"
	       "llm_parallel.so; llmp: this tool; python: the llmp package; program: only your\n"
	       "program); then the plugstack.conf arguments of llm_parallel.so with their defaults\n"
	       "(the site's values are in its plugstack.conf, which this does not read).\n"
	       "A malformed LLMP_DEBUG, and a set LLMP_* variable llmp does not read (a typo?),\n"
	       "are warnings on stderr.\n"
	       "  -s, --settings           the settings (the one thing llmp info prints today)\n"
	       "  -f, --format text|json   output format (default text)\n"
	       "See llmp(1), ENVIRONMENT, for LLMP_DEBUG.\n");
}

/* One row's value and its origin in this environment. */
static void value_of(const struct cli_setting *s, const char **value, const char **from)
{
	const char *v = s->kind == SETTING_ENV ? getenv(s->name) : NULL;
	if (s->kind == SETTING_SITE) {
		*value = NULL;
		*from = NULL;
	} else if (v) {
		*value = s->readers & SET_SECRET ? "(set; not shown)" : v;
		*from = "environment";
	} else {
		*value = s->fallback;
		*from = s->fallback ? "default" : "unset";
	}
}

static bool known(const char *name, size_t len)
{
	for (size_t i = 0; i < cli_nsettings; i++)
		if (cli_settings[i].kind == SETTING_ENV && strlen(cli_settings[i].name) == len &&
		    strncmp(cli_settings[i].name, name, len) == 0)
			return true;
	return false;
}

/* Warnings about this environment: a malformed LLMP_DEBUG, LLMP_* llmp does not read. */
static void warn_environment(void)
{
	struct rt_log_conf conf;
	char msg[LLMP_MSG_MAX];
	if (rt_log_conf_parse(getenv(LLMP_ENV_DEBUG), &conf, msg, sizeof msg) != 0)
		fprintf(stderr, PROG ": warning: %s: llmp_init will fail with LLMP_ERR_ARG\n",
			llmp_show_line(msg));
	for (char **e = environ; *e; e++) {
		size_t len = strcspn(*e, "=");
		char name[64];
		if (strncmp(*e, LLMP_ENV_PREFIX, strlen(LLMP_ENV_PREFIX)) != 0 || known(*e, len))
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), *e);
		fprintf(stderr, PROG ": warning: %s is set, but no part of llmp reads it (a typo?)\n",
			cli_printable(name));
	}
}

static void print_json(FILE *out)
{
	struct json_writer w;
	char readers[64];
	json_begin(&w, out);
	json_object(&w, NULL);
	json_array(&w, "settings");
	for (size_t i = 0; i < cli_nsettings; i++) {
		const struct cli_setting *s = &cli_settings[i];
		const char *value, *from;
		value_of(s, &value, &from);
		json_object(&w, NULL);
		json_string(&w, "name", s->name);
		json_string(&w, "kind", s->kind == SETTING_ENV ? "environment" : "plugstack");
		json_string(&w, "value", value);
		json_string(&w, "from", from);
		json_string(&w, "default", s->fallback);
		json_string(&w, "set_by", s->set_by);
		json_array(&w, "read_by");
		cli_setting_readers(s->readers, readers, sizeof readers);
		for (char *r = strtok(readers, ","); r; r = strtok(NULL, ","))
			json_string(&w, NULL, r);
		json_array_end(&w);
		json_string(&w, "meaning", s->meaning);
		json_object_end(&w);
	}
	json_array_end(&w);
	json_object_end(&w);
	json_end(&w);
	fputc('\n', out);
}

enum { C_NAME, C_VALUE, C_FROM, C_DEFAULT, C_SET_BY, C_READ_BY, C_MEANING, NCOLS };

/* The text of each column of row i (value shown printable and short), in cells of 64 bytes. */
static void cells(const struct cli_setting *s, char cell[NCOLS][64])
{
	const char *value, *from;
	value_of(s, &value, &from);
	snprintf(cell[C_NAME], 64, "%s", s->name);
	snprintf(cell[C_VALUE], 64, "%s", value ? cli_printable(value) : "-");
	snprintf(cell[C_FROM], 64, "%s", from ? from : "-");
	snprintf(cell[C_DEFAULT], 64, "%s", s->fallback ? s->fallback : "-");
	snprintf(cell[C_SET_BY], 64, "%s", s->set_by);
	cli_setting_readers(s->readers, cell[C_READ_BY], 64);
	cell[C_MEANING][0] = '\0'; /* printed whole, last */
}

/* The sections of the text: llmp's variables, the others' it reads, plugstack.conf's arguments. */
static int section_of(const struct cli_setting *s)
{
	if (s->kind == SETTING_SITE)
		return 2;
	return strncmp(s->name, LLMP_ENV_PREFIX, strlen(LLMP_ENV_PREFIX)) == 0 ? 0 : 1;
}

static void print_text(FILE *out)
{
	static const char *const heads[NCOLS] = { "NAME",   "VALUE",   "FROM",   "DEFAULT",
						  "SET BY", "READ BY", "MEANING" };
	/* The environment shows value and origin; plugstack.conf is read by the plugin alone. */
	static const bool shown[3][NCOLS] = { { 1, 1, 1, 1, 1, 1, 1 },
					      { 1, 1, 1, 1, 1, 1, 1 },
					      { 1, 0, 0, 1, 0, 0, 1 } };
	static const char *const titles[3] = {
		"llmp's environment variables",
		"Other environment variables llmp reads (Slurm's, NCCL's, PyTorch's, the system's)",
		"plugstack.conf arguments of llm_parallel.so (the site's values are in its plugstack.conf)",
	};
	char cell[NCOLS][64];
	size_t width[NCOLS];
	for (int c = 0; c < NCOLS; c++)
		width[c] = strlen(heads[c]);
	for (size_t i = 0; i < cli_nsettings; i++) { /* one width over the environment's sections */
		cells(&cli_settings[i], cell);
		for (int c = 0; c < NCOLS; c++)
			if (shown[section_of(&cli_settings[i])][c])
				width[c] = strlen(cell[c]) > width[c] ? strlen(cell[c]) : width[c];
	}
	for (int sec = 0; sec < 3; sec++) {
		fprintf(out, "%s%s:\n", sec ? "\n" : "", titles[sec]);
		for (int c = 0; c < C_MEANING; c++)
			if (shown[sec][c])
				fprintf(out, "%-*s  ", (int)width[c], heads[c]);
		fprintf(out, "%s\n", heads[C_MEANING]);
		for (size_t i = 0; i < cli_nsettings; i++) {
			const struct cli_setting *s = &cli_settings[i];
			if (section_of(s) != sec)
				continue;
			cells(s, cell);
			for (int c = 0; c < C_MEANING; c++)
				if (shown[sec][c])
					fprintf(out, "%-*s  ", (int)width[c], cell[c]);
			fprintf(out, "%s\n", s->meaning);
		}
	}
}

int cli_info(int argc, char **argv)
{
	static const struct option options[] = {
		{ "settings", no_argument, NULL, 's' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, settings = false;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":sf:h", options, NULL)) != -1) {
		switch (c) {
		case 's': settings = true; break;
		case 'f':
			if (cli_parse_format(PROG, optarg, &json))
				return CLI_EXIT_USAGE;
			break;
		case 'h': help(); return CLI_EXIT_OK;
		case ':': return cli_usage_error(PROG, "a value is missing after", cli_culprit(argv));
		default: return cli_usage_error(PROG, "unknown option", cli_culprit(argv));
		}
	}
	if (optind < argc)
		return cli_usage_error(PROG, "unexpected argument", argv[optind]);
	if (!settings) {
		fputs(PROG ": say what to print: --settings (see --help)\n", stderr);
		return CLI_EXIT_USAGE;
	}
	warn_environment();
	if (json)
		print_json(stdout);
	else
		print_text(stdout);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror(PROG ": stdout");
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* args.c - command-line argument helpers shared by the subcommands. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "llmp_cli.h"
#include "common/fail.h"

const char *cli_printable(const char *s)
{
	static char buf[LLMP_SHOW_MAX];

	return llmp_show(buf, s, strlen(s));
}

int cli_usage_error(const char *prog, const char *what, const char *text)
{
	fprintf(stderr, "%s: %s '%s' (see --help)\n", prog, what, cli_printable(text));
	return CLI_EXIT_USAGE;
}

int cli_parse_format(const char *prog, const char *text, bool *json)
{
	if (strcmp(text, "text") != 0 && strcmp(text, "json") != 0)
		return cli_usage_error(prog, "--format: expected text or json, not", text);
	*json = strcmp(text, "json") == 0;
	return 0;
}

const char *cli_one_dir(const char *prog, int argc, char **argv)
{
	if (optind + 1 == argc)
		return argv[optind];
	fprintf(stderr, "%s: %s (see --help)\n", prog, optind == argc ? "no DIR given" : "more than one DIR");
	return NULL;
}

const char *cli_culprit(char **argv)
{
	static char shortopt[3] = "-?";
	const char *arg = argv[optind - 1];

	if (strncmp(arg, "--", 2) == 0)
		return arg;
	if (optopt) {
		shortopt[1] = (char)optopt;
		return shortopt;
	}
	return arg;
}

/* digits followed by at most `suffixes` characters allowed: the number, or -1 and a message. */
static int parse_scaled(const char *prog, const char *opt, const char *text, uint64_t min, uint64_t max,
			bool sized, uint64_t *out)
{
	size_t digits = strspn(text, "0123456789");
	uint64_t scale = 1;
	const char *suffix = text + digits;

	if (sized && *suffix && !suffix[1]) {
		const char *units = "KMG", *u = strchr(units, *suffix);
		if (u && *u)
			scale = UINT64_C(1) << (10 * (u - units + 1));
	}
	if (!digits || (*suffix && scale == 1)) {
		fprintf(stderr, "%s: %s '%s': not a %s\n", prog, opt, cli_printable(text),
			sized ? "size (digits with an optional K, M or G)" : "non-negative integer");
		return -1;
	}
	errno = 0;
	unsigned long long v = strtoull(text, NULL, 10);
	if (errno == ERANGE || v > max / scale || v * scale < min) {
		fprintf(stderr, "%s: %s %s: outside %" PRIu64 "..%" PRIu64 "\n", prog, opt,
			cli_printable(text), min, max);
		return -1;
	}
	*out = v * scale;
	return 0;
}

int cli_parse_count(const char *prog, const char *opt, const char *text, uint64_t min, uint64_t max,
		    uint64_t *out)
{
	return parse_scaled(prog, opt, text, min, max, false, out);
}

int cli_parse_size(const char *prog, const char *opt, const char *text, uint64_t min, uint64_t max,
		   uint64_t *out)
{
	return parse_scaled(prog, opt, text, min, max, true, out);
}

const char *cli_human_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

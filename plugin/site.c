/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * site.c - plugstack.conf arguments of the plugin.
 *
 * An unknown or malformed argument is an error of the administrator's, not
 * of a user: it fails the plugin's init with a message naming the argument,
 * as pyxis does, rather than being ignored.
 */
#include "site.h"
#include "gpu_bind.h"
#include "planner/mem_guard.h"
#include "topology/gpu_desc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_PORT_BASE 20000 /* below Linux's ephemeral range (32768+) */
#define DEFAULT_PORT_RANGE 10000

/* A decimal number in min..max; -1 when it is not. */
static int64_t number(const char *s, int64_t min, int64_t max)
{
	int64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > max)
			return -1;
	}
	return v < min ? -1 : v;
}

static int bad(char *msg, size_t msglen, const char *arg, const char *why)
{
	snprintf(msg, msglen, "plugstack argument '%s': %s", arg, why);
	return -1;
}

/* Is the key of arg (its first klen bytes, '=' included) this name? */
static bool is_key(const char *arg, size_t klen, const char *name)
{
	return klen == strlen(name) + 1 && strncmp(arg, name, klen - 1) == 0;
}

static int parse_calibration(struct plugin_site *site, const char *arg, const char *path, char *msg,
			     size_t msglen);

/* guard=, guard_band=, guard_override= (the memory guard's policy), calibration=: 1 when arg is none of them. */
static int parse_guard_arg(struct plugin_site *site, const char *arg, size_t klen, const char *v, char *msg,
			   size_t msglen)
{
	if (is_key(arg, klen, "guard")) {
		int policy = mem_guard_policy_parse(v);
		if (policy < 0)
			return bad(msg, msglen, arg, "expected refuse, warn or off");
		site->guard = policy;
		return 0;
	}
	if (is_key(arg, klen, "guard_band")) {
		char *end;
		double band = strtod(v, &end);
		if (end == v || *end || !(band >= 0 && band <= 1) || strspn(v, "0123456789.") != strlen(v))
			return bad(msg, msglen, arg, "expected a fraction from 0 to 1, e.g. 0.15");
		site->guard_band = band;
		return 0;
	}
	if (is_key(arg, klen, "calibration"))
		return parse_calibration(site, arg, v, msg, msglen);
	if (is_key(arg, klen, "guard_override")) {
		if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
			return bad(msg, msglen, arg, "expected yes or no");
		site->guard_no_override = strcmp(v, "no") == 0;
		return 0;
	}
	return 1;
}

/* clean=: off, or a list of prolog, epilog and check, each at most once. */
static int parse_clean(struct plugin_site *site, const char *arg, const char *v, char *msg, size_t msglen)
{
	bool prolog = false, epilog = false, check = false;
	if (strcmp(v, "off") != 0) {
		for (const char *w = v;; w++) {
			size_t n = strcspn(w, ",");
			bool *slot = n == 6 && !strncmp(w, "prolog", n)   ? &prolog
				     : n == 6 && !strncmp(w, "epilog", n) ? &epilog
				     : n == 5 && !strncmp(w, "check", n)  ? &check
									  : NULL;
			if (!slot || *slot)
				return bad(msg, msglen, arg,
					   "expected off, or a list of prolog, epilog and check, each once");
			*slot = true;
			w += n;
			if (!*w)
				break;
		}
	}
	site->clean_prolog = prolog;
	site->clean_epilog = epilog;
	site->clean_check = check;
	return 0;
}

static int parse_arg(struct plugin_site *site, const char *arg, char *msg, size_t msglen);

/*
 * calibration=FILE: the arguments `llmp calibrate -o FILE` wrote (gpu= and
 * guard_band=, separated by blanks; '#' starts a comment to the line's end),
 * taken as if given at this place. Only those two keys: the file is the
 * step model's, not the rest of the site's policy.
 */
static int parse_calibration(struct plugin_site *site, const char *arg, const char *path, char *msg,
			     size_t msglen)
{
	char text[4096], why[LLMP_MSG_MAX];
	FILE *f = path[0] == '/' ? fopen(path, "r") : NULL;
	if (!f) {
		snprintf(why, sizeof why, "%s",
			 path[0] == '/' ? strerror(errno) : "expected an absolute path");
		return bad(msg, msglen, arg, why);
	}
	size_t n = fread(text, 1, sizeof text - 1, f);
	bool whole = feof(f) && !ferror(f);
	fclose(f);
	if (!whole)
		return bad(msg, msglen, arg, "unreadable, or longer than 4095 bytes");
	text[n] = '\0';
	for (char *line = text, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line[strcspn(line, "#")] = '\0';
		for (char *tok = line + strspn(line, " \t\r"); *tok; tok += strspn(tok, " \t\r")) {
			size_t len = strcspn(tok, " \t\r");
			char *after = tok[len] ? tok + len + 1 : tok + len;
			tok[len] = '\0';
			if (strncmp(tok, "gpu=", 4) != 0 && strncmp(tok, "guard_band=", 11) != 0) {
				snprintf(why, sizeof why, "'%.64s': only gpu= and guard_band= belong in it",
					 tok);
				return bad(msg, msglen, arg, why);
			}
			if (parse_arg(site, tok, why, sizeof why) < 0)
				return bad(msg, msglen, arg, why);
			tok = after;
		}
	}
	return 0;
}

static int parse_arg(struct plugin_site *site, const char *arg, char *msg, size_t msglen)
{
	const struct {
		const char *name;
		uint32_t *field;
		int64_t min, max;
		const char *why;
	} numbers[] = {
		{ "max_tp", &site->max[LLMP_KEY_TP], 1, LLMP_SIZE_MAX, "expected a size from 1 to 1048576" },
		{ "max_pp", &site->max[LLMP_KEY_PP], 1, LLMP_SIZE_MAX, "expected a size from 1 to 1048576" },
		{ "max_cp", &site->max[LLMP_KEY_CP], 1, LLMP_SIZE_MAX, "expected a size from 1 to 1048576" },
		{ "max_ep", &site->max[LLMP_KEY_EP], 1, LLMP_SIZE_MAX, "expected a size from 1 to 1048576" },
		{ "max_etp", &site->max[LLMP_KEY_ETP], 1, LLMP_SIZE_MAX,
		  "expected a size from 1 to 1048576" },
		{ "port_base", &site->port_base, 1024, 65535, "expected a port from 1024 to 65535" },
		{ "port_range", &site->port_range, 1, 64511, "expected a count from 1 to 64511" },
		{ "max_requeues", &site->max_requeues, 1, 1000000, "expected a count from 1 to 1000000" },
		{ "clean_wait", &site->clean_wait_s, 0, 300, "expected seconds from 0 to 300" },
		{ "clean_mem", &site->clean_mem_mib, 0, 1048576, "expected MiB from 0 to 1048576" },
	};
	const char *eq = strchr(arg, '=');
	if (!eq)
		return bad(msg, msglen, arg, "expected key=value");
	const char *v = eq + 1;
	size_t klen = (size_t)(v - arg);

	for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
		if (!is_key(arg, klen, numbers[i].name))
			continue;
		int64_t n = number(v, numbers[i].min, numbers[i].max);
		if (n < 0)
			return bad(msg, msglen, arg, numbers[i].why);
		*numbers[i].field = (uint32_t)n;
		return 0;
	}
	if (is_key(arg, klen, "defaults")) {
		char why[LLMP_MSG_MAX];
		if (llmp_spec_parse_partial(v, &site->defaults, why, sizeof why) != 0)
			return bad(msg, msglen, arg, why);
		if (site->defaults.help)
			return bad(msg, msglen, arg, "'help' is not a default layout");
		return 0;
	}
	if (is_key(arg, klen, "checkpoint")) {
		char why[LLMP_MSG_MAX];
		if (llmp_ckpt_spec_parse_partial(v, &site->ckpt_defaults, why, sizeof why) != 0)
			return bad(msg, msglen, arg, why);
		if (site->ckpt_defaults.help)
			return bad(msg, msglen, arg, "'help' is not a default checkpoint spec");
		return 0;
	}
	if (is_key(arg, klen, "gpu_bind")) {
		int mode = plugin_gpus_parse(v);
		if (mode < 0)
			return bad(msg, msglen, arg, "expected node, task or none");
		site->gpu_bind = mode;
		return 0;
	}
	if (is_key(arg, klen, "placement")) {
		if (strcmp(v, "block") != 0 && strcmp(v, "topology") != 0)
			return bad(msg, msglen, arg, "expected block or topology");
		site->placement_topology = strcmp(v, "topology") == 0;
		return 0;
	}
	if (is_key(arg, klen, "layout_dir")) {
		if (v[0] != '/' || strlen(v) >= sizeof site->layout_dir)
			return bad(msg, msglen, arg, "expected an absolute path under 256 bytes");
		strcpy(site->layout_dir, v);
		return 0;
	}
	if (is_key(arg, klen, "gpu")) {
		char why[LLMP_MSG_MAX];
		struct gpu_desc g;
		if (strlen(v) >= sizeof site->gpu)
			return bad(msg, msglen, arg, "expected a GPU under 128 bytes");
		if (gpu_desc_parse(v, &g, why, sizeof why) != LLMP_OK)
			return bad(msg, msglen, arg, why);
		strcpy(site->gpu, v);
		return 0;
	}
	if (is_key(arg, klen, "gdr_level")) {
		/* Names only: NCCL's numbers are legacy and moved when levels were added. */
		static const char *const levels[] = { "LOC", "PIX", "PXB", "PHB", "SYS" };
		for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
			if (strcmp(v, levels[i]) == 0) {
				strcpy(site->gdr_level, v);
				return 0;
			}
		return bad(msg, msglen, arg, "expected LOC, PIX, PXB, PHB or SYS");
	}
	if (is_key(arg, klen, "nvml")) {
		if (v[0] != '/' || strlen(v) >= sizeof site->nvml)
			return bad(msg, msglen, arg, "expected an absolute path under 1024 bytes");
		strcpy(site->nvml, v);
		return 0;
	}
	if (is_key(arg, klen, "clean"))
		return parse_clean(site, arg, v, msg, msglen);
	if (is_key(arg, klen, "clean_gpus")) {
		if (strcmp(v, "job") != 0 && strcmp(v, "all") != 0)
			return bad(msg, msglen, arg, "expected job or all");
		site->clean_all_gpus = strcmp(v, "all") == 0;
		return 0;
	}
	if (is_key(arg, klen, "drain")) {
		if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
			return bad(msg, msglen, arg, "expected yes or no");
		site->drain = strcmp(v, "yes") == 0;
		return 0;
	}
	if (is_key(arg, klen, "scontrol")) {
		if (v[0] != '/' || strlen(v) >= sizeof site->scontrol)
			return bad(msg, msglen, arg, "expected an absolute path under 1024 bytes");
		strcpy(site->scontrol, v);
		return 0;
	}
	if (is_key(arg, klen, "topology")) {
		if (v[0] != '/' || strlen(v) >= sizeof site->topology)
			return bad(msg, msglen, arg, "expected an absolute path under 1024 bytes");
		strcpy(site->topology, v);
		return 0;
	}
	int guard = parse_guard_arg(site, arg, klen, v, msg, msglen);
	if (guard <= 0)
		return guard;
	return bad(msg, msglen, arg,
		   "unknown (known: defaults= checkpoint= max_tp= max_pp= max_cp= max_ep= "
		   "max_etp= max_requeues= gpu_bind= placement= port_base= port_range= layout_dir= gpu= "
		   "topology= gdr_level= nvml= clean= clean_wait= clean_mem= clean_gpus= drain= scontrol= "
		   "guard= guard_band= guard_override= calibration=)");
}

int plugin_site_parse(struct plugin_site *site, int argc, char **argv, char *msg, size_t msglen)
{
	memset(site, 0, sizeof *site);
	llmp_spec_init(&site->defaults);
	llmp_ckpt_spec_init(&site->ckpt_defaults);
	site->guard = MEM_GUARD_REFUSE;
	site->guard_band = -1; /* the bands measured (planner/mem_guard.h) */
	site->gpu_bind = PLUGIN_GPUS_NODE;
	site->port_base = DEFAULT_PORT_BASE;
	site->port_range = DEFAULT_PORT_RANGE;
	site->clean_epilog = true;
	site->clean_check = true;
	site->clean_wait_s = 10;
	site->clean_mem_mib = 1024;
	site->drain = true;
	strcpy(site->scontrol, "/usr/bin/scontrol");
	for (int i = 0; i < argc; i++)
		if (parse_arg(site, argv[i], msg, msglen) < 0)
			return -1;
	if (site->port_base + site->port_range - 1 > 65535) {
		snprintf(msg, msglen, "plugstack arguments: port_base=%u + port_range=%u goes past 65535",
			 site->port_base, site->port_range);
		return -1;
	}
	return 0;
}

int plugin_site_check(const struct plugin_site *site, const llmp_spec *spec, char *msg, size_t msglen)
{
	for (int k = 0; k < LLMP_NKEYS; k++) {
		uint32_t size;
		if (!site->max[k])
			continue;
		if (k == LLMP_KEY_ETP)
			size = spec->etp ? spec->etp : spec->size[LLMP_DIM_TP];
		else
			size = spec->size[k]; /* size keys share their dimension's index */
		if (size > site->max[k]) {
			snprintf(msg, msglen,
				 "%s=%u is larger than this site allows (%u, set by the "
				 "administrator in plugstack.conf)",
				 llmp_key_name((enum llmp_key)k), size, site->max[k]);
			return -1;
		}
	}
	/* Without max_etp, max_tp bounds the experts' tensor parallelism too: the same NVLink domain's limit. */
	if (site->max[LLMP_KEY_TP] && !site->max[LLMP_KEY_ETP] && spec->etp > site->max[LLMP_KEY_TP]) {
		snprintf(
			msg, msglen,
			"etp=%u is larger than this site allows (max_tp=%u, which bounds etp too, set by the "
			"administrator in plugstack.conf)",
			spec->etp, site->max[LLMP_KEY_TP]);
		return -1;
	}
	return 0;
}

/* splitmix64's finaliser: every bit of x moves about half the bits of the result. */
static uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint32_t plugin_site_port(const struct plugin_site *site, uint32_t job_id, uint32_t step_id, uint64_t salt,
			  const char *resv_ports)
{
	if (resv_ports && resv_ports[0] >= '1' && resv_ports[0] <= '9') {
		char *end;
		unsigned long first = strtoul(resv_ports, &end, 10);
		if (first <= 65535 && (*end == '\0' || *end == '-' || *end == ','))
			return (uint32_t)first;
	}
	uint64_t slot = mix64(mix64(((uint64_t)job_id << 32) | step_id) ^ salt);
	return site->port_base + (uint32_t)(slot % site->port_range);
}

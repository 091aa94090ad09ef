/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolve.c - layer site defaults, LLMP_PARALLEL and --llm-parallel.
 */
#include "resolve.h"

#include <stdio.h>
#include <string.h>

#include <llmp/llmp_env.h>

/* Parse one source into *layer, prefixing any error with where it came from. */
static int parse_layer(const char *source, const char *text, llmp_spec *layer, char *msg, size_t msglen)
{
	char why[LLMP_MSG_MAX];

	if (llmp_spec_parse_partial(text, layer, why, sizeof why) == LLMP_OK)
		return 0;
	snprintf(msg, msglen, "%s: %s", source, why);
	return -1;
}

static bool asks_choice(const char *text)
{
	return text && strcmp(text, "auto") == 0;
}

bool plugin_choice_asked(const char *env_text, const char *option_text)
{
	return option_text ? asks_choice(option_text) : asks_choice(env_text);
}

enum plugin_resolved plugin_resolve(const struct plugin_site *site, const char *env_text,
				    const char *option_text, bool wanted, llmp_spec *spec, char *msg,
				    size_t msglen)
{
	llmp_spec layer;
	char why[LLMP_MSG_MAX];

	if (!env_text && !option_text && !wanted)
		return PLUGIN_INACTIVE;
	*spec = site->defaults;
	if (plugin_choice_asked(env_text, option_text))
		return PLUGIN_ACTIVE; /* the site's defaults, until the model decides */
	if (env_text && !asks_choice(env_text)) {
		if (parse_layer(LLMP_ENV_PARALLEL, env_text, &layer, msg, msglen))
			return PLUGIN_INVALID;
		llmp_spec_overlay(spec, &layer);
	}
	if (option_text) {
		if (parse_layer("--llm-parallel", option_text, &layer, msg, msglen))
			return PLUGIN_INVALID;
		llmp_spec_overlay(spec, &layer);
	}
	if (spec->help)
		return PLUGIN_HELP;
	if (llmp_spec_check(spec, why, sizeof why) != LLMP_OK) {
		snprintf(msg, msglen, "--llm-parallel: %s", why);
		return PLUGIN_INVALID;
	}
	if (plugin_site_check(site, spec, msg, msglen) < 0)
		return PLUGIN_INVALID;
	return PLUGIN_ACTIVE;
}

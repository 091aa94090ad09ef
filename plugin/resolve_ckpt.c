/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolve_ckpt.c - layer site defaults, LLMP_CHECKPOINT and --llm-checkpoint.
 */
#include "resolve_ckpt.h"

#include <stdio.h>

#include <llmp/llmp_env.h>

/* Parse one source into *layer, prefixing any error with where it came from. */
static int parse_layer(const char *source, const char *text, llmp_ckpt_spec *layer, char *msg, size_t msglen)
{
	char why[LLMP_MSG_MAX];

	if (llmp_ckpt_spec_parse_partial(text, layer, why, sizeof why) == LLMP_OK)
		return 0;
	snprintf(msg, msglen, "%s: %s", source, why);
	return -1;
}

enum plugin_resolved plugin_resolve_ckpt(const struct plugin_site *site, const char *env_text,
					 const char *option_text, llmp_ckpt_spec *spec, char *msg,
					 size_t msglen)
{
	llmp_ckpt_spec layer;
	char why[LLMP_MSG_MAX];

	if (!env_text && !option_text)
		return PLUGIN_INACTIVE;
	*spec = site->ckpt_defaults;
	if (env_text) {
		if (parse_layer(LLMP_ENV_CHECKPOINT, env_text, &layer, msg, msglen))
			return PLUGIN_INVALID;
		llmp_ckpt_spec_overlay(spec, &layer);
	}
	if (option_text) {
		if (parse_layer("--llm-checkpoint", option_text, &layer, msg, msglen))
			return PLUGIN_INVALID;
		llmp_ckpt_spec_overlay(spec, &layer);
	}
	if (spec->help)
		return PLUGIN_HELP;
	if (llmp_ckpt_spec_check(spec, why, sizeof why) != LLMP_OK) {
		snprintf(msg, msglen, "--llm-checkpoint: %s", why);
		return PLUGIN_INVALID;
	}
	return PLUGIN_ACTIVE;
}

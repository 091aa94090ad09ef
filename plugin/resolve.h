/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolve.h - the layout a job asked for, from its three sources.
 *
 * Precedence, lowest first: the site's defaults (plugstack.conf), the
 * LLMP_PARALLEL environment variable, the --llm-parallel option. Each key
 * is taken from the highest source that gives it. The plugin is active only
 * when the user asked, through the variable or the option, or through another
 * option of the plugin (--llm-checkpoint): then the layout is the site's
 * default one (all data parallel unless defaults= says otherwise).
 */
#ifndef LLMP_RESOLVE_H
#define LLMP_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>

#include "site.h"

enum plugin_resolved {
	PLUGIN_INACTIVE, /* neither the option nor the variable: leave the job alone */
	PLUGIN_ACTIVE,   /* *spec holds the checked layout */
	PLUGIN_HELP,     /* the user asked for the grammar */
	PLUGIN_INVALID   /* msg says which source and what is wrong */
};

/*
 * Did the user ask for --llm-parallel=auto: the option says "auto", or the
 * variable does and the option is not given? The layout then comes from
 * the model (model_layout.h); plugin_resolve skips an "auto" source.
 */
bool plugin_choice_asked(const char *env_text, const char *option_text);

/* wanted: active even when neither source gives a layout. */
enum plugin_resolved plugin_resolve(const struct plugin_site *site, const char *env_text,
				    const char *option_text, bool wanted, llmp_spec *spec, char *msg,
				    size_t msglen);

#endif /* LLMP_RESOLVE_H */

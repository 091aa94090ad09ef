/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resolve_ckpt.h - the checkpoint spec a job asked for, from its three sources.
 *
 * As for the layout (resolve.h), lowest first: the site's checkpoint=
 * defaults (plugstack.conf), the LLMP_CHECKPOINT environment variable, the
 * --llm-checkpoint option, key by key. Checkpointing is on only when the
 * user asked, through the variable or the option: site defaults alone turn
 * nothing on.
 */
#ifndef LLMP_RESOLVE_CKPT_H
#define LLMP_RESOLVE_CKPT_H

#include <stddef.h>

#include <llmp/llmp_ckpt_spec.h>
#include "resolve.h"
#include "site.h"

/* PLUGIN_ACTIVE: *spec holds the checked spec, defaults filled in. */
enum plugin_resolved plugin_resolve_ckpt(const struct plugin_site *site, const char *env_text,
					 const char *option_text, llmp_ckpt_spec *spec, char *msg,
					 size_t msglen);

#endif /* LLMP_RESOLVE_CKPT_H */

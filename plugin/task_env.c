/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * task_env.c - compute a task's environment from the plan.
 *
 * Pure: the slurmstepd side (step.c) sets what this returns, so the exact
 * names and values are unit-tested without a cluster.
 */
#include "task_env.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <llmp/llmp_env.h>
#include "planner/megatron_args.h"

int plugin_env_add(struct llmp_env *env, const char *name, const char *fmt, ...)
{
	if (env->n == PLUGIN_ENV_MAX || strlen(name) >= sizeof env->var[0].name)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(env->var[env->n].value, PLUGIN_ENV_VALUE_MAX, fmt, ap);
	va_end(ap);
	if (len < 0 || len >= PLUGIN_ENV_VALUE_MAX)
		return -1;
	strcpy(env->var[env->n++].name, name);
	return 0;
}

/* "LLMP_EXPERT_TP_SIZE" from "expert-tp" and "SIZE". */
static void axis_var(char *out, size_t outlen, enum llmp_axis axis, const char *what)
{
	size_t off = (size_t)snprintf(out, outlen, LLMP_ENV_PREFIX);
	for (const char *s = llmp_axis_name(axis); *s && off + 1 < outlen; s++)
		out[off++] = *s == '-' ? '_' : (char)toupper((unsigned char)*s);
	snprintf(out + off, outlen - off, "_%s", what);
}

/*
 * Megatron-LM's arguments for the layout (planner/megatron_args.h), or -1
 * where Megatron cannot state its order. The model's flags (model_layout.h:
 * micro-batch, recompute, uneven stages), when --llm-model gave them, follow.
 */
static int megatron_args(const llmp_plan *plan, const char *model_args, char *out, size_t len)
{
	if (megatron_layout_args(plan, out, len) != 0)
		return -1;
	size_t n = strlen(out);
	if (model_args && *model_args)
		n += (size_t)snprintf(out + n, len - n, " %s", model_args);
	return n < len ? 0 : -1;
}

int plugin_task_env(const llmp_plan *plan, const struct plugin_task *t, struct llmp_env *env)
{
	char spec[LLMP_SPEC_MAX_LEN + 1], name[32];
	uint32_t coords[LLMP_NAXES];
	int rc = 0;

	env->n = 0;
	if (llmp_plan_coords(plan, t->rank, coords) != LLMP_OK)
		return -1;
	/* With no key given (--llm-checkpoint alone), name the default layout:
	 * libllmp parses LLMP_PARALLEL, and an empty text is not a layout. */
	if (llmp_spec_format(llmp_plan_spec(plan), spec, sizeof spec) == 0)
		snprintf(spec, sizeof spec, "dp=auto");

	rc |= plugin_env_add(env, LLMP_ENV_PARALLEL, "%s", spec);
	rc |= plugin_env_add(env, LLMP_ENV_ORDER, "%s", llmp_plan_order(plan));
	rc |= plugin_env_add(env, LLMP_ENV_WORLD_SIZE, "%u", llmp_plan_world(plan));
	rc |= plugin_env_add(env, LLMP_ENV_RANK, "%u", t->rank);
	rc |= plugin_env_add(env, LLMP_ENV_LOCAL_RANK, "%u", t->local_rank);
	rc |= plugin_env_add(env, LLMP_ENV_LOCAL_WORLD_SIZE, "%u", t->local_tasks);
	rc |= plugin_env_add(env, LLMP_ENV_NODE_RANK, "%u", t->node_rank);
	rc |= plugin_env_add(env, LLMP_ENV_NNODES, "%u", t->nnodes);
	rc |= plugin_env_add(env, LLMP_ENV_PLACEMENT, "%s", t->placement ? t->placement : "block");
	for (int a = 0; a < LLMP_NAXES; a++) {
		axis_var(name, sizeof name, (enum llmp_axis)a, "SIZE");
		rc |= plugin_env_add(env, name, "%u", llmp_plan_size(plan, (enum llmp_axis)a));
		axis_var(name, sizeof name, (enum llmp_axis)a, "RANK");
		rc |= plugin_env_add(env, name, "%u", coords[a]);
	}
	if (llmp_plan_vpp(plan))
		rc |= plugin_env_add(env, LLMP_ENV_VPP_SIZE, "%u", llmp_plan_vpp(plan));
	if (t->layout_file)
		rc |= plugin_env_add(env, LLMP_ENV_LAYOUT_FILE, "%s", t->layout_file);

	char megatron[PLUGIN_ENV_VALUE_MAX];
	if (megatron_args(plan, t->model_args, megatron, sizeof megatron) == 0)
		rc |= plugin_env_add(env, LLMP_ENV_MEGATRON_ARGS, "%s", megatron);

	/* torchrun's contract (torch.distributed's env:// rendezvous, torchelastic's roles) */
	rc |= plugin_env_add(env, "RANK", "%u", t->rank);
	rc |= plugin_env_add(env, "LOCAL_RANK", "%u", t->torch_local_rank);
	rc |= plugin_env_add(env, "WORLD_SIZE", "%u", llmp_plan_world(plan));
	rc |= plugin_env_add(env, "LOCAL_WORLD_SIZE", "%u", t->local_tasks);
	rc |= plugin_env_add(env, "GROUP_RANK", "%u", t->node_rank);
	rc |= plugin_env_add(env, "GROUP_WORLD_SIZE", "%u", t->nnodes);
	rc |= plugin_env_add(env, "ROLE_NAME", "default");
	rc |= plugin_env_add(env, "ROLE_RANK", "%u", t->rank);
	rc |= plugin_env_add(env, "ROLE_WORLD_SIZE", "%u", llmp_plan_world(plan));
	rc |= plugin_env_add(env, "MASTER_ADDR", "%s", t->master_addr);
	rc |= plugin_env_add(env, "MASTER_PORT", "%u", t->master_port);
	/* DeepSpeed's launcher (its checkpoint writer reads CROSS_*) */
	rc |= plugin_env_add(env, "LOCAL_SIZE", "%u", t->local_tasks);
	rc |= plugin_env_add(env, "CROSS_RANK", "%u", t->node_rank);
	rc |= plugin_env_add(env, "CROSS_SIZE", "%u", t->nnodes);
	rc |= plugin_ckpt_env(t->ckpt, t->restart_count, env);
	return rc ? -1 : 0;
}

int plugin_ckpt_env(const llmp_ckpt_spec *ckpt, uint32_t restart_count, struct llmp_env *env)
{
	char spec[LLMP_CKPT_SPEC_MAX_LEN + 1];
	int rc = 0;

	if (ckpt) {
		int len = llmp_ckpt_spec_format(ckpt, spec, sizeof spec);
		if (len < 0 || (size_t)len >= sizeof spec)
			return -1;
		/* The canonical text, so a program that parses LLMP_CHECKPOINT
		 * (libllmp does) sees exactly what the plugin resolved. */
		rc |= plugin_env_add(env, LLMP_ENV_CHECKPOINT, "%s", spec);
		rc |= plugin_env_add(env, LLMP_ENV_CHECKPOINT_DIR, "%s", ckpt->dir);
		if (ckpt->every)
			rc |= plugin_env_add(env, LLMP_ENV_CHECKPOINT_EVERY, "%u%s", ckpt->every,
					     ckpt->every_minutes ? "min" : "");
		rc |= plugin_env_add(env, LLMP_ENV_CHECKPOINT_KEEP, "%u", ckpt->keep);
		rc |= plugin_env_add(env, LLMP_ENV_MAX_RESTARTS, "%u", ckpt->max_restarts);
	}
	rc |= plugin_env_add(env, LLMP_ENV_RESTART_COUNT, "%u", restart_count);
	return rc ? -1 : 0;
}

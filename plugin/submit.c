/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * submit.c - the submitting side: srun (local) and sbatch/salloc (allocator).
 *
 * A layout that cannot be right whatever the job size is refused here, so no
 * job is queued. sbatch cannot see the task count through SPANK; srun can,
 * once the step exists (local_user_init), and then checks divisibility too.
 * Where srun's command line gives the count (srun_args.h), srun checks it
 * in init_post_opt already, before it asks for an allocation.
 * Everything is checked again inside the step, against its real geometry.
 * The checkpoint spec needs no geometry: it is refused here or never.
 *
 * With --llm-model (or LLMP_MODEL) the layout must also fit the GPU's
 * memory (model_layout.h): sbatch refuses one that fits at no job size,
 * srun decides for its task count and, with --llm-parallel=auto, chooses.
 * srun hands its decision to the step in its own environment, which the
 * step starts from (LLMP_AUTO_LAYOUT, LLMP_MODEL_ARGS, LLMP_STAGE_LAYERS,
 * LLMP_MODEL_PEAKS).
 */
#include "plugin.h"
#include "common/fail.h" /* llmp_show */

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <llmp/llmp_env.h>
#include "common/fail.h" /* llmp_show_line */
#include "resolve.h"
#include "resolve_ckpt.h"
#include "srun_args.h"
#include "serve.h"
#include "serve_token.h"
#include "planner/model_desc.h"
#include "topology/gpu_desc.h"

/*
 * What the submitting side does with a resolved option: nothing when it is
 * absent, print the grammar and stop for "help" (given through the variable:
 * the option's own "help" already exited), refuse an invalid one. Returns
 * -1 if invalid, else 0 with *active set.
 */
static int answer(enum plugin_resolved resolved, const char *grammar, const char *msg, bool *active)
{
	*active = false;
	switch (resolved) {
	case PLUGIN_INACTIVE: return 0;
	case PLUGIN_HELP: fputs(grammar, stdout); exit(0);
	case PLUGIN_INVALID: plugin_user_message("%s", msg); return -1;
	case PLUGIN_ACTIVE: break;
	}
	*active = true;
	return 0;
}

/* Is checkpointing asked for, through LLMP_CHECKPOINT or the option? -1 if invalid. */
static int resolve_ckpt_here(bool *active)
{
	char msg[LLMP_MSG_MAX];
	struct plugin_ctx *c = plugin_ctx();
	llmp_ckpt_spec spec;

	return answer(plugin_resolve_ckpt(&c->site, getenv(LLMP_ENV_CHECKPOINT), c->ckpt_option, &spec, msg,
					  sizeof msg),
		      llmp_ckpt_spec_grammar(), msg, active);
}

/* --llm-model, else LLMP_MODEL; NULL when neither is given. */
static const char *model_text(const char **source)
{
	struct plugin_ctx *c = plugin_ctx();
	const char *env = getenv(LLMP_ENV_MODEL);
	*source = c->model_option ? "--llm-model" : LLMP_ENV_MODEL;
	return c->model_option ? c->model_option : env && *env ? env : NULL;
}

/*
 * The layout from site defaults, LLMP_PARALLEL and the option; -1 if
 * invalid. Checkpointing or a model turns the plugin on with the default
 * layout; *choose_layout says --llm-parallel=auto (the spec is then the site's
 * defaults until the model decides).
 */
static int resolve_here(llmp_spec *spec, bool *active, bool *choose_layout)
{
	char msg[LLMP_MSG_MAX];
	struct plugin_ctx *c = plugin_ctx();
	const char *env = getenv(LLMP_ENV_PARALLEL), *source;
	bool ckpt;

	*choose_layout = false;
	if (resolve_ckpt_here(&ckpt) < 0) {
		*active = false;
		return -1;
	}
	if (answer(plugin_resolve(&c->site, env, c->option, ckpt || model_text(&source), spec, msg,
				  sizeof msg),
		   llmp_spec_grammar(), msg, active) < 0)
		return -1;
	*choose_layout = *active && plugin_choice_asked(env, c->option);
	return 0;
}

/*
 * The model's verdict on the layout (model_layout.h) for world tasks (0:
 * not known yet); -1 after telling the user why the job cannot run.
 */
static int decide_model(const llmp_spec *spec, bool choose_layout, uint32_t world, uint32_t nnodes,
			struct plugin_model_answer *a)
{
	struct plugin_ctx *c = plugin_ctx();
	char msg[LLMP_MSG_MAX];
	const char *gpu = getenv(LLMP_ENV_GPU), *file = getenv(LLMP_ENV_TOPOLOGY_FILE);
	/*
	 * The step's nodes as srun wrote them into its own environment before
	 * local_user_init. Seen with Slurm 22.05: SLURM_NODELIST (the job's
	 * nodes: a step on part of them fails the count check and is said) and
	 * SLURM_TASKS_PER_NODE (the step's); no SLURM_STEP_* yet, and no gres
	 * string (--gres=gpu:TYPE:N), so srun cannot learn a GPU type there.
	 */
	const char *nodes = getenv("SLURM_STEP_NODELIST"), *per_node = getenv("SLURM_STEP_TASKS_PER_NODE");
	struct plugin_machines_request machines = {
		.file = file && *file ? file : c->site.topology,
		.nodelist = nodes ? nodes : getenv("SLURM_NODELIST"),
		.tasks_per_node = per_node ? per_node : getenv("SLURM_TASKS_PER_NODE"),
		.nnodes = nnodes,
		.renumber = plugin_renumber_asked(),
	};
	struct plugin_model_request rq = {
		.choose_layout = choose_layout,
		.spec = spec,
		.world = world,
		.machines = machines.file[0] ? &machines : NULL,
		.guard_override = c->guard_override,
	};
	rq.model = model_text(&rq.model_source);
	rq.gpu_source = gpu && *gpu ? LLMP_ENV_GPU : "the site's gpu= (plugstack.conf)";
	rq.gpu = gpu && *gpu ? gpu : c->site.gpu[0] ? c->site.gpu : NULL;
	if (plugin_model_decide(&c->site, &rq, a, msg, sizeof msg) < 0) {
		plugin_user_message("%s", msg);
		return -1;
	}
	if (a->warning[0])
		plugin_user_message("%s", a->warning);
	if (a->guard[0] && strcmp(a->guard, PLUGIN_GUARD_DOUBTFUL) != 0)
		slurm_info(PLUGIN_NAME ": memory guard %s for uid %u: %s", a->guard, (unsigned)getuid(),
			   llmp_show_line(a->warning));
	if (a->note[0])
		plugin_user_message("%s", a->note);
	return 0;
}

/*
 * --llm-placement=topology places the whole job, so it needs a description
 * of every node: refused here without one, before anything is queued.
 */
static int check_placement(void)
{
	struct plugin_ctx *c = plugin_ctx();
	const char *file = getenv(LLMP_ENV_TOPOLOGY_FILE);
	if (!plugin_renumber_asked() || (file && *file) || c->site.topology[0])
		return 0;
	plugin_user_message(
		"--llm-placement=topology needs a description of the job's nodes: set " LLMP_ENV_TOPOLOGY_FILE
		" (doc/topology-json.md), or ask the administrator for "
		"the plugin's topology= setting");
	return -1;
}

/* srun's command line as /proc/self/cmdline has it (NUL-separated), or NULL. */
static char *srun_cmdline(size_t *lenp)
{
	char *text = NULL;
	size_t cap = 0, len = 0, got;
	FILE *f = fopen("/proc/self/cmdline", "r");

	if (!f)
		return NULL;
	do {
		char *more = cap - len < 4096 ? realloc(text, cap += 65536) : text;
		if (!more) {
			fclose(f);
			free(text);
			return NULL;
		}
		text = more;
		got = fread(text + len, 1, cap - len, f);
		len += got;
	} while (got > 0 && cap < (1u << 22));
	fclose(f);
	if (got > 0) { /* longer than 4 MiB */
		free(text);
		return NULL;
	}
	*lenp = len;
	return text;
}

/* srun's task count from its own command line (srun_args.h); unknown on any doubt. */
static struct plugin_srun_count srun_count(void)
{
	struct plugin_srun_count unknown = { 0, 0 }, c;
	size_t len = 0;
	char *text = srun_cmdline(&len);

	if (!text)
		return unknown;
	c = plugin_srun_count_of_cmdline(text, len);
	free(text);
	return c;
}

/*
 * -m arbitrary in a new allocation under topology/tree, which Slurm 23.11
 * and later can leave PENDING for ever (srun_args.h): said before the
 * allocation is asked for, with what to do instead. The topology plugin is
 * read from slurm.conf (SLURM_CONF, else Slurm's default path); nothing is
 * said when it cannot be read.
 */
static void warn_arbitrary_tree(void)
{
	char topology[64], **argv;
	const char *conf = getenv("SLURM_CONF"), *warning;
	size_t len = 0, at = 0;
	int argc = 0;
	char *text;

	if (!plugin_arbitrary_tree_warning(SLURM_VERSION_NUMBER, true, "topology/tree"))
		return; /* a release without the problem: no need to look */
	if (plugin_slurm_conf_value(conf && *conf ? conf : "/etc/slurm/slurm.conf", "TopologyPlugin",
				    topology, sizeof topology) != 1 ||
	    !(text = srun_cmdline(&len)))
		return;
	if (len && text[len - 1] == '\0' && (argv = calloc(len, sizeof *argv))) {
		while (at < len) {
			argv[argc++] = text + at;
			at += strlen(text + at) + 1;
		}
		warning = plugin_arbitrary_tree_warning(
			SLURM_VERSION_NUMBER,
			plugin_srun_arbitrary_allocation(argc, argv, getenv("SLURM_DISTRIBUTION"),
							 getenv("SLURM_JOB_ID")),
			topology);
		if (warning)
			plugin_user_message("%s", warning);
		free(argv);
	}
	free(text);
}

/*
 * srun before its allocation: a layout that does not fit the task count its
 * command line gives is refused now, so no job is queued and cancelled.
 * --llm-parallel=auto and the model's guard decide later (local_user_init),
 * where srun knows its nodes too.
 */
static int check_srun_count(const llmp_spec *spec, bool choose_layout)
{
	char msg[LLMP_MSG_MAX];
	llmp_plan *plan;
	struct plugin_srun_count c;

	if (choose_layout)
		return 0;
	c = srun_count();
	if (!c.tasks)
		return 0;
	if (llmp_plan_create(spec, c.tasks, 0, &plan, msg, sizeof msg) != LLMP_OK) {
		if (c.nodes)
			plugin_user_message("%s (%u tasks on %u node%s)", msg, c.tasks, c.nodes,
					    c.nodes == 1 ? "" : "s");
		else
			plugin_user_message("%s (%u tasks)", msg, c.tasks);
		return -1;
	}
	llmp_plan_destroy(plan); /* warnings wait for local_user_init, which knows the nodes */
	return 0;
}

static int give_port_salt(void);

/* GPUs per node as srun wrote --gpus-per-node into its environment ("4" or "a100:4"); 0 if unknown. */
static uint32_t gpus_per_node(void)
{
	const char *text = getenv("SLURM_GPUS_PER_NODE");
	if (!text || !*text || strchr(text, ','))
		return 0;
	const char *count = strrchr(text, ':') ? strrchr(text, ':') + 1 : text;
	char *end;
	unsigned long n = strtoul(count, &end, 10);
	return *count >= '1' && *count <= '9' && *end == '\0' && n <= 1024 ? (uint32_t)n : 0;
}

/*
 * The step's secret (serve_token.h), drawn here and handed to the step in
 * srun's environment; each node writes it to a 0600 file of the user's.
 */
static int give_serve_token(void)
{
	unsigned char bytes[PLUGIN_SERVE_TOKEN_LEN / 2];
	char text[PLUGIN_SERVE_TOKEN_LEN + 1];
	if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes) {
		plugin_user_message("--llm-serve: no random bytes for the job's token");
		return -1;
	}
	for (size_t i = 0; i < sizeof bytes; i++)
		snprintf(text + 2 * i, 3, "%02x", bytes[i]);
	if (setenv(LLMP_ENV_SERVE_TOKEN, text, 1) != 0) {
		plugin_user_message("--llm-serve: cannot hand the token to the step: setenv failed");
		return -1;
	}
	return 0;
}

/*
 * --llm-serve at submission (serve.h): the engine, the layout against the
 * model's heads and memory, and in srun (tasks known) one task per node and
 * the GPUs; then srun draws the port salt and the token for the step.
 */
static int submit_serve(spank_t sp, bool tasks_known)
{
	struct plugin_ctx *c = plugin_ctx();
	char msg[LLMP_MSG_MAX], warning[LLMP_MSG_MAX], shown[LLMP_SHOW_MAX];
	const char *env = getenv(LLMP_ENV_PARALLEL), *source, *gpu = getenv(LLMP_ENV_GPU);
	struct model_desc model, *m = NULL;
	struct gpu_desc gdesc, *g = NULL;
	uint32_t tasks = 0, nodes = 0;
	llmp_spec spec;
	bool active;

	if (plugin_serve_engine_parse(c->serve_option) < 0) {
		plugin_user_message("--llm-serve=%s: expected 'ray', 'vllm' or 'sglang'",
				    llmp_show(shown, c->serve_option, strlen(c->serve_option)));
		return -1;
	}
	if (plugin_choice_asked(env, c->option)) {
		plugin_user_message("--llm-serve: give the layout (--llm-parallel=tp=N,pp=N[,dp=N]); "
				    "'auto' chooses training layouts");
		return -1;
	}
	if (answer(plugin_resolve(&c->site, env, c->option, true, &spec, msg, sizeof msg),
		   llmp_spec_grammar(), msg, &active) < 0)
		return -1;
	const char *text = model_text(&source);
	if (text) {
		if (model_desc_parse(text, &model, msg, sizeof msg) != LLMP_OK) {
			plugin_user_message("%s=%s: %s", source, llmp_show(shown, text, strlen(text)), msg);
			return -1;
		}
		m = &model;
		const char *gtext = gpu && *gpu ? gpu : c->site.gpu[0] ? c->site.gpu : NULL;
		if (gtext && gpu_desc_parse(gtext, &gdesc, msg, sizeof msg) == LLMP_OK)
			g = &gdesc;
	}
	if (tasks_known && (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &tasks) != ESPANK_SUCCESS ||
			    spank_get_item(sp, S_JOB_NNODES, &nodes) != ESPANK_SUCCESS))
		tasks = nodes = 0;
	if (plugin_serve_check(&spec, nodes, tasks, tasks_known ? gpus_per_node() : 0, m, g, warning,
			       sizeof warning, msg, sizeof msg) < 0) {
		plugin_user_message("%s", msg);
		return -1;
	}
	if (warning[0])
		plugin_user_message("%s", warning);
	if (!tasks_known)
		return 0;
	if (unsetenv(LLMP_ENV_AUTO_LAYOUT) != 0 || unsetenv(LLMP_ENV_MODEL_ARGS) != 0 ||
	    unsetenv(LLMP_ENV_STAGE_LAYERS) != 0 || unsetenv(LLMP_ENV_MODEL_PEAKS) != 0)
		return -1;
	return give_port_salt() < 0 ? -1 : give_serve_token();
}

int plugin_submit_check(spank_t sp)
{
	struct plugin_model_answer model;
	llmp_spec spec;
	bool active, choose_layout;

	if (plugin_ctx()->serve_option)
		return submit_serve(sp, false);
	if (resolve_here(&spec, &active, &choose_layout) < 0)
		return -1;
	if (!active || check_placement() < 0)
		return active ? -1 : 0;
	/* srun decides in local_user_init, where it knows its task count. */
	if (spank_context() == S_CTX_ALLOCATOR && decide_model(&spec, choose_layout, 0, 0, &model) < 0)
		return -1;
	if (spank_context() == S_CTX_LOCAL) {
		if (check_srun_count(&spec, choose_layout) < 0)
			return -1;
		warn_arbitrary_tree();
	}
	return 0;
}

/*
 * Random bytes for the step's MASTER_PORT hash (site.h), in srun's
 * environment, which the step's tasks start from: the same on every node,
 * unknown to other users, so they cannot take the port in advance.
 */
static int give_port_salt(void)
{
	char text[32];
	uint64_t salt;
	if (getrandom(&salt, sizeof salt, 0) != (ssize_t)sizeof salt)
		return 0; /* the step falls back to the unsalted hash */
	snprintf(text, sizeof text, "%016llx", (unsigned long long)salt);
	/* SPANK's setenv is for remote contexts only; srun sends the step its own environment. */
	if (setenv(LLMP_ENV_PORT_SALT, text, 1) != 0)
		plugin_user_message("warning: cannot set " LLMP_ENV_PORT_SALT
				    "; MASTER_PORT follows from the job id");
	return 0;
}

/*
 * What the model decided, for the step: srun's environment is the step's
 * (SPANK's setenv is for remote contexts only). Cleared when nothing was
 * decided, so a value from an outer step never reaches this one.
 */
static int hand_to_step(const struct plugin_model_answer *a, bool choose_layout)
{
	char layout[LLMP_SPEC_MAX_LEN + 1];
	int rc = 0;

	if (choose_layout && a->decided) {
		llmp_spec_format(&a->layout, layout, sizeof layout);
		rc |= setenv(LLMP_ENV_AUTO_LAYOUT, layout, 1);
	} else {
		rc |= unsetenv(LLMP_ENV_AUTO_LAYOUT);
	}
	rc |= a->decided ? setenv(LLMP_ENV_MODEL_ARGS, a->megatron, 1) : unsetenv(LLMP_ENV_MODEL_ARGS);
	rc |= a->decided && a->stage_layers[0] ? setenv(LLMP_ENV_STAGE_LAYERS, a->stage_layers, 1)
					       : unsetenv(LLMP_ENV_STAGE_LAYERS);
	rc |= a->decided && a->peaks[0] ? setenv(LLMP_ENV_MODEL_PEAKS, a->peaks, 1)
					: unsetenv(LLMP_ENV_MODEL_PEAKS);
	rc |= a->decided && a->guard[0] ? setenv(LLMP_ENV_MODEL_GUARD, a->guard, 1)
					: unsetenv(LLMP_ENV_MODEL_GUARD);
	if (rc)
		plugin_user_message("cannot hand the model's layout to the step: setenv failed");
	return rc ? -1 : 0;
}

int plugin_submit_check_tasks(spank_t sp)
{
	char msg[LLMP_MSG_MAX];
	uint32_t tasks = 0, nodes = 0;
	llmp_spec spec;
	struct plugin_model_answer model;
	llmp_plan *plan;
	bool active, choose_layout;

	if (plugin_ctx()->serve_option)
		return submit_serve(sp, true);
	if (resolve_here(&spec, &active, &choose_layout) < 0)
		return -1;
	if (!active)
		return 0;
	if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &tasks) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &nodes) != ESPANK_SUCCESS || !tasks) {
		if (choose_layout)
			plugin_user_message(
				"--llm-parallel=auto: srun cannot tell the step's task count here");
		return choose_layout ? -1 : 0; /* else unknown here: the step checks it */
	}
	if (decide_model(&spec, choose_layout, tasks, nodes, &model) < 0 ||
	    hand_to_step(&model, choose_layout) < 0)
		return -1;
	if (choose_layout)
		spec = model.layout;

	/* With an even spread, advise about groups that cross nodes; renumbered, the step advises. */
	uint32_t per_node = nodes && tasks % nodes == 0 && !plugin_renumber_asked() ? tasks / nodes : 0;
	if (llmp_plan_create(&spec, tasks, per_node, &plan, msg, sizeof msg) != LLMP_OK) {
		plugin_user_message("%s (%u tasks on %u node%s)", msg, tasks, nodes, nodes == 1 ? "" : "s");
		return -1;
	}
	for (size_t i = 0; i < llmp_plan_warning_count(plan); i++)
		plugin_user_message("warning: %s", llmp_plan_warning(plan, i));
	llmp_plan_destroy(plan);
	return give_port_salt();
}

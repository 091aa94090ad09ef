/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * step.c - inside a job step (slurmstepd, remote context).
 *
 * user_init runs once per step on each node, as the user: it resolves the
 * layout, fits it to the step's real geometry and writes the node's layout
 * file. task_init runs in each task just before exec: it exports the task's
 * environment, or fails the task with the reason. Only task_init may fail:
 * Slurm fails the job for it and leaves the node alone, whereas a failure
 * in an earlier remote callback drains the node or is ignored.
 *
 * The extern and interactive steps are left alone, and so is the batch
 * script's own step, but for the checkpoint variables: an sbatch option is
 * meant for the srun steps inside, while the script itself needs to know
 * where the checkpoints go (`llmp job-end` reads the run record there).
 * Nothing in the batch step may fail the job: it warns and goes on, and the
 * srun steps inside refuse a bad spec properly.
 */
#include "plugin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "common/fail.h" /* llmp_show */
#include "gpu_bind.h"
#include "layout_file.h"
#include "common/hostlist.h"
#include "common/netif.h"
#include "common/own_dir.h"
#include <llmp/llmp_env.h>
#include "resolve.h"
#include "resolve_ckpt.h"
#include "serve.h"
#include "serve_token.h"
#include "slurm_env.h"
#include "task_env.h"
#include "task_map.h"

/* Remember why the step cannot run; task_init reports it. */
static int fail_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail_step(const char *fmt, ...)
{
	struct plugin_ctx *c = plugin_ctx();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof c->error, fmt, ap);
	va_end(ap);
	llmp_show_line(c->error); /* one line in slurmd's log whatever the user's values hold */
	c->failed = true;
	slurm_info(PLUGIN_NAME ": %s", c->error); /* the tasks tell the user */
	return 0;
}

/* A variable of the step's environment into buf; NULL when unset or too long. */
static const char *step_env(spank_t sp, const char *name, char *buf, int len)
{
	return spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS ? buf : NULL;
}

/* Tasks per node when every node has the same number in block order, else 0. */
static uint32_t block_tasks_per_node(spank_t sp, uint32_t node_id)
{
	char buf[1024];
	uint32_t first = 0;
	int64_t per_node = plugin_tasks_per_node_uniform(
		step_env(sp, "SLURM_STEP_TASKS_PER_NODE", buf, sizeof buf));

	if (per_node <= 0 || spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, 0u, &first) != ESPANK_SUCCESS ||
	    first != node_id * (uint32_t)per_node)
		return 0;
	return (uint32_t)per_node;
}

/*
 * Like step_env, but a value too long for buf reads as an error (-1), not as
 * unset: a spec cut short, or ignored, would be a different request.
 */
static int step_env_whole(spank_t sp, const char *name, char *buf, int len, const char **value)
{
	char probe[1];

	*value = step_env(sp, name, buf, len);
	return !*value && spank_getenv(sp, name, probe, 1) == ESPANK_NOSPACE ? -1 : 0;
}

/* SLURM_RESTART_COUNT of the step (0 when unset); -1 with msg when malformed. */
static int read_restart_count(spank_t sp, uint32_t *count, char *msg, size_t msglen)
{
	char buf[32];
	const char *text;
	int64_t n = -1;

	if (step_env_whole(sp, "SLURM_RESTART_COUNT", buf, sizeof buf, &text) == 0)
		n = plugin_restart_count(text);
	if (n < 0) {
		char shown[LLMP_SHOW_MAX];
		snprintf(msg, msglen, "SLURM_RESTART_COUNT=%s: not a restart count",
			 text ? llmp_show(shown, text, strlen(text)) : "(too long)");
		return -1;
	}
	*count = (uint32_t)n;
	return 0;
}

/*
 * The checkpoint spec from the site, LLMP_CHECKPOINT and the option. Help is
 * invalid here: it is answered at submission. Returns PLUGIN_ACTIVE,
 * PLUGIN_INACTIVE, or PLUGIN_INVALID with msg saying why.
 */
static enum plugin_resolved resolve_ckpt_in_step(spank_t sp, llmp_ckpt_spec *spec, char *msg, size_t msglen)
{
	struct plugin_ctx *c = plugin_ctx();
	char env[LLMP_CKPT_SPEC_MAX_LEN + 2];
	const char *env_text;

	if (step_env_whole(sp, LLMP_ENV_CHECKPOINT, env, sizeof env, &env_text) < 0) {
		snprintf(msg, msglen, LLMP_ENV_CHECKPOINT ": checkpoint spec is longer than %d characters",
			 LLMP_CKPT_SPEC_MAX_LEN);
		return PLUGIN_INVALID;
	}
	enum plugin_resolved r = plugin_resolve_ckpt(&c->site, env_text, c->ckpt_option, spec, msg, msglen);
	if (r == PLUGIN_HELP) {
		snprintf(msg, msglen, "--llm-checkpoint: 'help' is answered at submission, not inside a job");
		return PLUGIN_INVALID;
	}
	return r;
}

/* The job's user and groups, whom the work on the user's paths is done as (bounded.h). */
static int read_owner(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	gid_t *groups = NULL;
	int n = 0;
	if (spank_get_item(sp, S_JOB_UID, &c->owner.uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &c->owner.gid) != ESPANK_SUCCESS)
		return -1;
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &n) != ESPANK_SUCCESS || n < 0)
		n = 0;
	free(c->owner_groups);
	c->owner_groups = malloc((n ? (size_t)n : 1) * sizeof *groups);
	if (!c->owner_groups)
		return -1;
	if (n)
		memcpy(c->owner_groups, groups, (size_t)n * sizeof *groups);
	c->owner.groups = c->owner_groups;
	c->owner.ngroups = (size_t)n;
	return 0;
}

/*
 * Where the layout file goes: the site's layout_dir, else the job's
 * TMPDIR when absolute (slurmstepd's working directory is not the job's),
 * else /tmp.
 */
static const char *layout_dir(spank_t sp, char *buf, int len)
{
	struct plugin_ctx *c = plugin_ctx();
	if (c->site.layout_dir[0])
		return c->site.layout_dir;
	const char *tmp = step_env(sp, "TMPDIR", buf, len);
	return tmp && tmp[0] == '/' ? tmp : "/tmp";
}

/* The node's layout file under dir, into c->layout_path; -1 with msg (if any) on failure. */
static int write_layout_file(const char *dir, char *msg, size_t msglen)
{
	struct plugin_ctx *c = plugin_ctx();
	char why[LLMP_MSG_MAX];
	if (plugin_layout_file_name(dir, c->job_id, c->step_id, c->node_id, c->layout_path,
				    sizeof c->layout_path, why, sizeof why) == 0 &&
	    plugin_layout_file_write(c->plan, c->has_stage_layers ? c->stage_layers : NULL, c->layout_path,
				     &c->owner, why, sizeof why) == 0)
		return 0;
	c->layout_path[0] = '\0';
	if (msg)
		snprintf(msg, msglen, "%s", why);
	return -1;
}

/* Fit the layout to the step's geometry and write the node's layout file. */
static int plan_step(spank_t sp, const llmp_spec *spec)
{
	struct plugin_ctx *c = plugin_ctx();
	char msg[LLMP_MSG_MAX], dir[PATH_MAX], shown[LLMP_SHOW_MAX];
	uint32_t world = 0;

	if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &world) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &c->nnodes) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NODEID, &c->node_id) != ESPANK_SUCCESS)
		return fail_step("cannot read the step's geometry from Slurm");

	/* Groups spanning nodes in block order: not what a renumbered step gets (job_place.h says). */
	uint32_t per_node = plugin_renumber_asked() ? 0 : block_tasks_per_node(sp, c->node_id);
	if (llmp_plan_create(spec, world, per_node, &c->plan, msg, sizeof msg) != LLMP_OK)
		return fail_step("%s (job step %u.%u: %u tasks on %u node%s)", msg, c->job_id, c->step_id,
				 world, c->nnodes, c->nnodes == 1 ? "" : "s");

	if (c->stage_text[0]) {
		uint32_t pp = llmp_plan_size(c->plan, LLMP_AXIS_PP);
		if (plugin_stage_layers_parse(c->stage_text, pp, c->stage_layers, msg, sizeof msg) < 0)
			return fail_step(LLMP_ENV_STAGE_LAYERS "=%s: %s",
					 llmp_show(shown, c->stage_text, strlen(c->stage_text)), msg);
		c->has_stage_layers = true;
	}
	if (c->peaks_text[0]) {
		uint32_t pp = llmp_plan_size(c->plan, LLMP_AXIS_PP);
		if (plugin_peaks_parse(c->peaks_text, pp, c->peaks, msg, sizeof msg) < 0)
			return fail_step(LLMP_ENV_MODEL_PEAKS "=%s: %s",
					 llmp_show(shown, c->peaks_text, strlen(c->peaks_text)), msg);
		c->has_peaks = true;
	}
	if (read_owner(sp) < 0)
		return fail_step("cannot read the job's user and groups from Slurm");
	if (getrandom(&c->nccl_topo_token, sizeof c->nccl_topo_token, 0) !=
	    (ssize_t)sizeof c->nccl_topo_token)
		return fail_step("no random bytes for the NCCL topology file's name: %s", strerror(errno));
	const char *where = layout_dir(sp, dir, sizeof dir);
	if (write_layout_file(where, msg, sizeof msg) == 0)
		return 0;
	/*
	 * A TMPDIR this node lacks (the submit host's, passed on by srun) is
	 * not the user's error: Slurm itself gives the task /tmp then
	 * (_make_tmpdir, after task_init), and so does the layout file.
	 */
	if (!c->site.layout_dir[0] && strcmp(where, "/tmp") != 0 && write_layout_file("/tmp", NULL, 0) == 0) {
		snprintf(c->layout_note, sizeof c->layout_note,
			 "warning: %.400s; it was written in /tmp instead", msg);
		return 0;
	}
	c->layout_path[0] = '\0';
	return fail_step("%s", msg);
}

/*
 * The whole step on a topology that names all its nodes (job_place.h):
 * always for --llm-placement=topology, which fails the step when it cannot
 * be done; in block order, whenever the description allows (it then also
 * tells what a group leaving its node costs). Returns 0 when placed.
 */
static int place_job_tasks(spank_t sp, const char *topology, const char *text, size_t textlen,
			   const uint32_t *tasks, uint32_t n)
{
	struct plugin_ctx *c = plugin_ctx();
	char nodes[8192], per_node[1024], msg[LLMP_MSG_MAX];
	bool renumber = plugin_renumber_asked();
	if (!topology) {
		if (renumber)
			fail_step("--llm-placement=topology: no topology: set " LLMP_ENV_TOPOLOGY_FILE
				  " or the plugin's topology=");
		return -1;
	}
	struct plugin_job_inputs in = {
		.file = topology,
		.text = text,
		.textlen = textlen,
		.max_hosts = c->nnodes,
		.nodelist = step_env(sp, "SLURM_STEP_NODELIST", nodes, sizeof nodes),
		.tasks_per_node = step_env(sp, "SLURM_STEP_TASKS_PER_NODE", per_node, sizeof per_node),
		.node_id = c->node_id,
		.tasks = tasks,
		.ntasks = n,
		.renumber = renumber,
	};
	if (plugin_job_place(&c->place, &c->job, &in, c->plan, msg, sizeof msg) < 0) {
		if (renumber)
			fail_step("--llm-placement=topology: %s", msg);
		return -1;
	}
	c->placed = c->job_placed = true;
	c->renumbered = renumber;
	return 0;
}

/*
 * A file the user named (the topology file, SLURM_HOSTFILE), read by a
 * child under a deadline (bounded.h): 0, or -1 with why set. The task is
 * the user already; the child only keeps a FIFO or a hung file system from
 * holding it.
 */
static int read_user_file(const char *path, char **text, size_t *len, char *why, size_t whylen)
{
	char shown[PLUGIN_SHOWN], what[PLUGIN_SHOWN + 16];
	struct plugin_file_read r = { .path = path, .cap = PLUGIN_TOPOLOGY_MAX };
	snprintf(what, sizeof what, "reading %s", plugin_show_path(shown, path));
	return plugin_run_bounded(NULL, what, plugin_read_file_work, &r, PLUGIN_PATH_TIMEOUT_MS,
				  PLUGIN_TOPOLOGY_MAX, text, len, why, whylen);
}

/*
 * This node's tasks on its GPUs and HCAs (node_place.h), when the job names
 * a topology file or discovery finds GPUs. In task_init, each task for
 * itself: the user's file is read and parsed in the user's own process,
 * never in slurmstepd. Nothing here fails the step but a placement the job
 * asked for by name: a description that cannot be used is a warning, and
 * tasks keep local order.
 */
static void place_node_tasks(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	char file[PATH_MAX], host[256] = "", addr[1024], pattern[256], nodes[8192], why[LLMP_MSG_MAX],
			     shown[PLUGIN_SHOWN], **names, *text = NULL;
	uint32_t n = 0, *ranks;
	size_t nnames, textlen = 0;
	/* This node as Slurm names it: its place in the step's node list (no SPANK item gives the name). */
	if (step_env(sp, "SLURM_STEP_NODELIST", nodes, sizeof nodes) &&
	    hostlist_expand(nodes, c->nnodes, &names, &nnames, why, sizeof why) == LLMP_OK) {
		if (c->node_id < nnames)
			snprintf(host, sizeof host, "%s", names[c->node_id]);
		hostlist_free(names, nnames);
	}
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &n) != ESPANK_SUCCESS || n == 0 ||
	    !(ranks = calloc(n, sizeof *ranks)))
		return;
	for (uint32_t i = 0; i < n; i++)
		if (spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, i, &ranks[i]) != ESPANK_SUCCESS) {
			free(ranks);
			return;
		}
	const char *topology = step_env(sp, LLMP_ENV_TOPOLOGY_FILE, file, sizeof file) ? file
			       : c->site.topology[0]                                   ? c->site.topology
										       : NULL;
	if (topology && read_user_file(topology, &text, &textlen, why, sizeof why) < 0) {
		if (plugin_renumber_asked())
			fail_step("--llm-placement=topology: %s", why);
		else
			snprintf(c->place_warning, sizeof c->place_warning, "topology %.400s", why);
		free(ranks);
		return;
	}
	const char *name = topology ? plugin_show_path(shown, topology) : NULL; /* for messages */
	if (place_job_tasks(sp, name, text, textlen, ranks, n) == 0 || c->failed) {
		free(text);
		free(ranks);
		return;
	}
	struct plugin_node_inputs in = {
		.file = name,
		.text = text,
		.textlen = textlen,
		.host = host,
		.addr = step_env(sp, "SLURM_TOPOLOGY_ADDR", addr, sizeof addr),
		.pattern = step_env(sp, "SLURM_TOPOLOGY_ADDR_PATTERN", pattern, sizeof pattern),
		.ranks = ranks,
		.ntasks = n,
	};
	c->placed = plugin_node_place(&c->place, &in, c->plan, c->place_warning, sizeof c->place_warning) ==
		    0;
	free(text);
	free(ranks);
}

/*
 * --llm-parallel=auto: the layout srun chose (submit.c) in place of the
 * option and the variable, and the Megatron flags of the model, which
 * LLMP_MEGATRON_ARGS carries on. Strings, checked and bounded.
 */
static bool chosen_layout_of_step(spank_t sp, char *buf, int len, const char **layout)
{
	static const char start[] = "start the step with srun, whose llm_parallel plugin chooses";
	char why[LLMP_MSG_MAX], shown[LLMP_SHOW_MAX];
	llmp_spec probe;
	plugin_ctx()->active = true;
	if (step_env_whole(sp, LLMP_ENV_AUTO_LAYOUT, buf, len, layout) < 0)
		fail_step("--llm-parallel=auto: " LLMP_ENV_AUTO_LAYOUT " is longer than %d bytes; %s",
			  LLMP_SPEC_MAX_LEN, start);
	else if (!*layout)
		fail_step("--llm-parallel=auto: no layout was chosen for this step (" LLMP_ENV_AUTO_LAYOUT
			  " is not set); %s",
			  start);
	else if (!**layout || strcmp(*layout, "auto") == 0)
		fail_step("--llm-parallel=auto: " LLMP_ENV_AUTO_LAYOUT "='%s' names no layout; %s",
			  llmp_show(shown, *layout, strlen(*layout)), start);
	/* Parsed here too, so that a bad choice is named as this variable, not as LLMP_PARALLEL. */
	else if (llmp_spec_parse_partial(*layout, &probe, why, sizeof why) != LLMP_OK)
		fail_step(LLMP_ENV_AUTO_LAYOUT "=%s: %s", llmp_show(shown, *layout, strlen(*layout)), why);
	else
		return true;
	return false;
}

/* LLMP_MODEL_ARGS from srun (model_layout.h) into the context; false (the step failed) when malformed. */
static bool read_model_args(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	const char *args;
	if (step_env_whole(sp, LLMP_ENV_MODEL_ARGS, c->model_args, sizeof c->model_args, &args) == 0 &&
	    (!args || plugin_model_args_valid(args))) {
		if (!args)
			c->model_args[0] = '\0';
		return true;
	}
	c->model_args[0] = '\0';
	fail_step(LLMP_ENV_MODEL_ARGS ": not the Megatron flags srun's plugin writes");
	return false;
}

/* LLMP_STAGE_LAYERS from srun (model_layout.h), as text; checked against the plan in plan_step. */
static bool read_stage_layers(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	const char *text;
	c->stage_text[0] = '\0';
	if (step_env_whole(sp, LLMP_ENV_STAGE_LAYERS, c->stage_text, sizeof c->stage_text, &text) == 0) {
		if (!text)
			c->stage_text[0] = '\0';
		return true;
	}
	c->stage_text[0] = '\0';
	fail_step(LLMP_ENV_STAGE_LAYERS ": longer than srun's plugin writes");
	return false;
}

/* LLMP_MODEL_PEAKS from srun (gpu_check.h), as text; checked against the plan in plan_step. */
static bool read_peaks(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	const char *text;
	c->peaks_text[0] = '\0';
	if (step_env_whole(sp, LLMP_ENV_MODEL_PEAKS, c->peaks_text, sizeof c->peaks_text, &text) == 0) {
		if (!text)
			c->peaks_text[0] = '\0';
		return true;
	}
	c->peaks_text[0] = '\0';
	fail_step(LLMP_ENV_MODEL_PEAKS ": longer than srun's plugin writes");
	return false;
}

/*
 * LLMP_MODEL_GUARD from srun: a layout the memory guard doubted, or one run
 * against its refusal, is logged in slurmd's log with the job, so a site
 * sees who overrode it. Only the plugin's own words are logged.
 */
static void log_guard(spank_t sp)
{
	static const char *const words[] = { PLUGIN_GUARD_DOUBTFUL, PLUGIN_GUARD_OVERRIDDEN,
					     PLUGIN_GUARD_WARNED, PLUGIN_GUARD_OFF };
	struct plugin_ctx *c = plugin_ctx();
	char buf[16];
	const char *text;
	if (step_env_whole(sp, LLMP_ENV_MODEL_GUARD, buf, sizeof buf, &text) < 0 || !text)
		return;
	for (size_t i = 0; i < sizeof words / sizeof *words; i++)
		if (strcmp(text, words[i]) == 0)
			slurm_info(PLUGIN_NAME ": job %u step %u: the layout is beyond the memory estimate; "
					       "memory guard: %s",
				   c->job_id, c->step_id, words[i]);
}

/* The owner of a process as this node's /proc shows it; (uid_t)-1 when it shows none. */
static uid_t process_owner(unsigned pid)
{
	char path[32];
	struct stat sb;
	snprintf(path, sizeof path, "/proc/%u", pid);
	return stat(path, &sb) == 0 ? sb.st_uid : (uid_t)-1;
}

/*
 * In the task (before exec: slurmstepd's child as the user): the GPU it will use,
 * through NVML. A GPU that already runs another user's process fails the
 * task (each task whose GPU it is says which), in every step: the task would
 * share its memory with a job that escaped its cleanup. With a model
 * (srun's estimate), the GPU against the one the estimate assumed for the
 * task's pipeline stage (gpu_check.h): local task 0 names a different GPU
 * once per node; a GPU smaller than the stage's peak fails the task (local
 * task 0 says why). No NVML (no driver, or no GPU NVML and
 * CUDA_VISIBLE_DEVICES agree on): nothing is said.
 */
static int check_task_gpu(spank_t sp, uint32_t rank, uint32_t local_rank, uint32_t entry, const char *bound)
{
	struct plugin_ctx *c = plugin_ctx();
	static struct topo_nvml_device devs[TOPO_NVML_DEVICES_MAX];
	char visible[4096], why[LLMP_MSG_MAX], mismatch[LLMP_MSG_MAX], fail[LLMP_MSG_MAX];
	char host[256] = "this node";
	uint32_t coords[LLMP_NAXES];
	bool model = c->has_peaks && llmp_plan_coords(c->plan, rank, coords) == LLMP_OK;
	const char *list = bound[0] ? bound : step_env(sp, "CUDA_VISIBLE_DEVICES", visible, sizeof visible);
	/* The site's library only, never one the job names: this is still slurmstepd's child (site.h). */
	int n = topo_nvml_devices(c->site.nvml[0] ? c->site.nvml : NULL, devs, TOPO_NVML_DEVICES_MAX, why,
				  sizeof why);
	if (n <= 0)
		return 0;
	if (!step_env(sp, "SLURMD_NODENAME", host, sizeof host)) /* Slurm's name for the node */
		gethostname(host, sizeof host - 1);
	const struct topo_nvml_device *mine = plugin_task_device_named(devs, (unsigned)n, list, entry);
	if (mine && plugin_gpu_busy(mine, getuid(), process_owner, host, fail, sizeof fail) < 0) {
		plugin_task_message("%s", fail); /* by each task whose GPU it is */
		return -1;
	}
	if (!model)
		return 0;
	const struct topo_nvml_device *d = plugin_task_device(devs, (unsigned)n, list, entry);
	if (!d && why[0] && local_rank == 0) /* a list cut short: said, not taken for no GPU */
		plugin_task_message("this task's GPU was not checked against the estimate: %s", why);
	if (!d)
		return 0;
	uint32_t stage = coords[LLMP_AXIS_PP];
	if (plugin_gpu_check(&c->peaks[stage], stage, d, host, mismatch, sizeof mismatch, fail, sizeof fail) <
	    0) {
		if (local_rank == 0) /* once per node is enough to read; every task fails */
			plugin_task_message("%s", fail);
		return -1;
	}
	if (local_rank == 0 && mismatch[0])
		plugin_task_message("%s", mismatch);
	return 0;
}

/*
 * A serving step (serve.h), in user_init: the engine and the layout
 * resolved, the step's geometry and owner read, and the token srun drew
 * written to this node's 0600 file (serve_token.h). No plan: the tasks are
 * one per node, the layout is the GPUs'. Failures are kept for task_init.
 */
static int prepare_serve_step(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	char env[LLMP_SPEC_MAX_LEN + 2], msg[LLMP_MSG_MAX], dir[PATH_MAX], token[PLUGIN_SERVE_TOKEN_LEN + 2];
	const char *env_text, *text;

	c->serve_engine = plugin_serve_engine_parse(c->serve_option);
	if (c->serve_engine < 0)
		return fail_step("--llm-serve: expected 'ray', 'vllm' or 'sglang'");
	if (step_env_whole(sp, LLMP_ENV_PARALLEL, env, sizeof env, &env_text) < 0)
		return fail_step(LLMP_ENV_PARALLEL ": layout is longer than %d characters",
				 LLMP_SPEC_MAX_LEN);
	if (plugin_choice_asked(env_text, c->option))
		return fail_step("--llm-serve: give the layout (--llm-parallel=tp=N,pp=N[,dp=N])");
	if (plugin_resolve(&c->site, env_text, c->option, true, &c->serve_spec, msg, sizeof msg) !=
	    PLUGIN_ACTIVE)
		return fail_step("%s", msg);
	if (spank_get_item(sp, S_JOB_NNODES, &c->nnodes) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NODEID, &c->node_id) != ESPANK_SUCCESS)
		return fail_step("cannot read the step's geometry from Slurm");
	if (read_owner(sp) < 0)
		return fail_step("cannot read the job's user and groups from Slurm");
	if (step_env_whole(sp, LLMP_ENV_SERVE_TOKEN, token, sizeof token, &text) < 0 ||
	    (text && !plugin_serve_token_valid(text)))
		return fail_step(LLMP_ENV_SERVE_TOKEN ": not the token srun's plugin draws");
	if (!text)
		return 0; /* a step srun's plugin did not see: no token, said in the task */
	const char *where = layout_dir(sp, dir, sizeof dir);
	if (plugin_serve_token_name(where, c->job_id, c->step_id, c->node_id, c->serve_token_path,
				    sizeof c->serve_token_path, msg, sizeof msg) == 0 &&
	    plugin_serve_token_write(text, c->serve_token_path, &c->owner, msg, sizeof msg) == 0)
		return 0;
	c->serve_token_path[0] = '\0';
	return fail_step("--llm-serve: %s", msg);
}

/*
 * Resolve the checkpoint spec and the layout, read the restart count and plan
 * the step. Any failure is kept for task_init (fail_step).
 */
static int prepare_normal_step(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	char env[LLMP_SPEC_MAX_LEN + 2], msg[LLMP_MSG_MAX];
	const char *env_text;
	llmp_spec spec;

	switch (resolve_ckpt_in_step(sp, &c->ckpt, msg, sizeof msg)) {
	case PLUGIN_INACTIVE: break;
	case PLUGIN_ACTIVE: c->ckpt_active = true; break;
	case PLUGIN_HELP:
	case PLUGIN_INVALID: c->active = true; return fail_step("%s", msg);
	}
	if (step_env_whole(sp, LLMP_ENV_PARALLEL, env, sizeof env, &env_text) < 0) {
		c->active = true;
		return fail_step(LLMP_ENV_PARALLEL ": layout is longer than %d characters",
				 LLMP_SPEC_MAX_LEN);
	}
	const char *option = c->option;
	if (plugin_choice_asked(env_text, option)) {
		if (!chosen_layout_of_step(sp, env, sizeof env, &env_text))
			return 0;
		option = NULL; /* the choice replaces the option's "auto" */
	}
	switch (plugin_resolve(&c->site, env_text, option, c->ckpt_active, &spec, msg, sizeof msg)) {
	case PLUGIN_INACTIVE: return 0;
	case PLUGIN_HELP:
		c->active = true;
		return fail_step("'help' is answered at submission, not inside a job");
	case PLUGIN_INVALID: c->active = true; return fail_step("%s", msg);
	case PLUGIN_ACTIVE: break;
	}
	c->active = true;
	if (read_restart_count(sp, &c->restart_count, msg, sizeof msg) < 0)
		return fail_step("%s", msg);
	if (!read_model_args(sp) || !read_stage_layers(sp) || !read_peaks(sp))
		return 0;
	log_guard(sp);
	return plan_step(sp, &spec);
}

int plugin_step_prepare(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();

	if (spank_get_item(sp, S_JOB_ID, &c->job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &c->step_id) != ESPANK_SUCCESS)
		return 0;
	if (c->step_id == SLURM_BATCH_SCRIPT) {
		c->batch = true; /* task_init does the little there is to do */
		return 0;
	}
	if (c->step_id > SLURM_MAX_NORMAL_STEP_ID)
		return 0; /* the extern and interactive steps */
	if (c->serve_option)
		return prepare_serve_step(sp);
	return prepare_normal_step(sp);
}

/*
 * The task's GPU (gpu_bind.h): its entry in the step's CUDA_VISIBLE_DEVICES
 * is the placement's, when the step sees every GPU of the node (Slurm lists
 * them in PCI bus order, as the placement counts them), else its local id.
 * Node mode gives that entry as LOCAL_RANK; task mode cuts the list to it,
 * in *bind, and gives LOCAL_RANK 0. Advice goes to the job's output once per
 * node.
 */
static uint32_t choose_gpu(spank_t sp, uint32_t local_rank, uint32_t local_tasks, char *bind, size_t len)
{
	struct plugin_ctx *c = plugin_ctx();
	char visible[4096];
	uint32_t ngpus;
	int mode = c->gpu_bind >= 0 ? c->gpu_bind : c->site.gpu_bind;
	const char *list = step_env(sp, "CUDA_VISIBLE_DEVICES", visible, sizeof visible);
	uint32_t entries = plugin_gpu_entries(list), entry = local_rank;
	bind[0] = '\0';
	if (mode == PLUGIN_GPUS_NONE || entries == 0)
		return local_rank;
	if (c->placed && local_rank < c->place.n && c->place.gpu[local_rank] >= 0 &&
	    entries == c->place.type->ngpus)
		entry = (uint32_t)c->place.gpu[local_rank];
	if (entries == 1 && local_tasks > 1) {
		if (local_rank == 0 && mode == PLUGIN_GPUS_NODE)
			plugin_task_message(
				"warning: each task sees one GPU (--gpus-per-task or --gpu-bind?): "
				"LOCAL_RANK=0 in every task, and NCCL cannot see the node's other "
				"GPUs; --gpus-per-node keeps them visible");
		return 0;
	}
	if (entries < local_tasks) {
		if (local_rank == 0)
			plugin_task_message(
				"warning: %u tasks on this node but %u GPUs in the step; GPUs left as "
				"Slurm set them (use --gpus-per-node=%u, or --llm-gpu-bind=none to "
				"silence this)",
				local_tasks, entries, local_tasks);
		return local_rank;
	}
	if (mode == PLUGIN_GPUS_NODE)
		return entry;
	if (plugin_gpu_pick(list, entry, local_tasks, bind, len, &ngpus) != PLUGIN_GPU_BOUND)
		bind[0] = '\0';
	return 0;
}

/* Set every variable of env in the task; -1 with a message naming the failed one. */
static int set_task_env(spank_t sp, const struct llmp_env *env)
{
	for (size_t i = 0; i < env->n; i++)
		if (spank_setenv(sp, env->var[i].name, env->var[i].value, 1) != ESPANK_SUCCESS) {
			plugin_task_message("cannot set %s in the task environment", env->var[i].name);
			return -1;
		}
	return 0;
}

/*
 * --llm-checkpoint as sbatch sent it in the job control environment, when
 * the batch step's own option was lost: Slurm 22.05 and 23.02 keep only
 * SLURM* names under sbatch --export=NONE, NIL or VAR,..., so the
 * _SLURM_SPANK_OPTION_* variable that carries it to the batch step is gone,
 * while its SLURM_SPANK_ copy stays (the srun steps inside find that one
 * themselves). Read as a string of bounded length, like the option.
 */
static void batch_ckpt_option(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	char text[LLMP_CKPT_SPEC_MAX_LEN + 2];
	const char *value;
	if (c->ckpt_option)
		return;
	if (step_env_whole(sp, "SLURM_SPANK__SLURM_SPANK_OPTION_" PLUGIN_NAME "_llm_checkpoint", text,
			   sizeof text, &value) < 0)
		plugin_task_message(
			"warning: --llm-checkpoint is longer than %d characters; the batch script "
			"gets no checkpoint variables",
			LLMP_CKPT_SPEC_MAX_LEN);
	else if (value)
		c->ckpt_option = strdup(value);
}

/*
 * The batch script: the checkpoint variables when checkpointing is asked
 * for, nothing else. Fails only past the site's max_requeues: the srun
 * steps inside refuse a bad spec.
 */
static int batch_task(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	static struct llmp_env env;
	char msg[LLMP_MSG_MAX];
	llmp_ckpt_spec spec;
	uint32_t restarts;

	/*
	 * The site's ceiling on requeues, for every batch job: the one thing
	 * here that fails the job, since RequeueExit=75 would otherwise let a
	 * script that exits 75 by itself come back for ever (tests/security.bats L4).
	 */
	if (c->site.max_requeues && read_restart_count(sp, &restarts, msg, sizeof msg) == 0 &&
	    restarts > c->site.max_requeues) {
		plugin_task_message(
			"job %u was requeued %u times, more than this site allows (max_requeues=%u, set "
			"by the administrator in plugstack.conf): not run again",
			c->job_id, restarts, c->site.max_requeues);
		return -1;
	}

	batch_ckpt_option(sp);
	switch (resolve_ckpt_in_step(sp, &spec, msg, sizeof msg)) {
	case PLUGIN_INACTIVE: return 0;
	case PLUGIN_HELP:
	case PLUGIN_INVALID:
		plugin_task_message("warning: %s; the batch script gets no checkpoint variables", msg);
		return 0;
	case PLUGIN_ACTIVE: break;
	}
	if (read_restart_count(sp, &restarts, msg, sizeof msg) < 0) {
		plugin_task_message("warning: %s; the batch script gets no checkpoint variables", msg);
		return 0;
	}
	env.n = 0;
	if (plugin_ckpt_env(&spec, restarts, &env) < 0 || set_task_env(sp, &env) < 0)
		plugin_task_message("warning: the batch script's checkpoint variables could not be set");
	return 0;
}

/*
 * GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME, where the task has neither
 * its own nor the user's: the interface toward the node srun ran on
 * (common/netif.h), the network Slurm itself reaches the job through.
 * gloo and NCCL would pick theirs from the address the host name resolves
 * to; where that is loopback (Debian's 127.0.1.1 line, the test cluster) a
 * PyTorch job hangs in its rendezvous. Nothing is set when there is no
 * such route to name.
 */
static void socket_ifname(spank_t sp);

/*
 * UCX_NET_DEVICES (the HCA port nearest the task's GPU, for llmp's own UCX
 * traffic) and NCCL_IB_HCA (every HCA the node's tasks use, "=" exact, the
 * same on every task, so NCCL keeps its own choice among them and PXN),
 * where the task has no value of its own.
 */
static void network_devices(spank_t sp, uint32_t local_rank)
{
	struct plugin_ctx *c = plugin_ctx();
	char buf[1024];
	if (local_rank == 0 && c->place_warning[0])
		plugin_task_message("warning: %s; tasks take GPUs in local order", c->place_warning);
	if (!c->placed || local_rank >= c->place.n || c->place.hca[local_rank] < 0)
		return;
	const struct topo_hca *h = &c->place.type->hcas[c->place.hca[local_rank]];
	for (unsigned p = 0; p < h->nports; p++)
		if (topo_port_usable(&h->ports[p])) {
			snprintf(buf, sizeof buf, "%s:%u", h->name, h->ports[p].port);
			spank_setenv(sp, "UCX_NET_DEVICES", buf, 0);
			break;
		}
	if (plugin_node_hca_list(&c->place, buf, sizeof buf) == 0)
		spank_setenv(sp, "NCCL_IB_HCA", buf, 0);
	plugin_step_gdr(sp, local_rank); /* NCCL_NET_GDR_LEVEL, and why GDR is not used (step_gdr.c) */
}

/*
 * PyTorch's flight recorder, where the task has no setting of its own: a
 * trace of each process group's last 2000 collectives, dumped on a
 * timeout into the job's directory (LLMP_METRICS's, else the checkpoint
 * root) as fr/rank_<RANK>, for torchfrtrace. The old names and the new
 * (TORCH_FR_*) both, as Megatron sets them. Runs in the task, as the user,
 * in its working directory: a relative directory means the same to torch.
 * -1 when the directory is not the user's own (own_dir.h): the task fails.
 */
static int flight_recorder(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	char metrics[PATH_MAX], dir[PATH_MAX], frdir[PATH_MAX], prefix[PATH_MAX];
	const char *m = step_env(sp, LLMP_ENV_METRICS, metrics, sizeof metrics);
	if (m && *m && *m != ',')
		snprintf(dir, sizeof dir, "%.*s", (int)strcspn(m, ","), m);
	else if (c->ckpt_active && c->ckpt.dir[0])
		snprintf(dir, sizeof dir, "%s", c->ckpt.dir);
	else
		return 0;
	if (snprintf(frdir, sizeof frdir, "%s/fr", dir) >= (int)sizeof frdir ||
	    snprintf(prefix, sizeof prefix, "%s/rank_", frdir) >= (int)sizeof prefix)
		return 0;
	/*
	 * Another user's directory (made first in a shared place, or above it)
	 * or link could hold links where torch dumps, or lead elsewhere: the
	 * whole path is checked, each directory made only inside a checked one.
	 */
	char why[512];
	const char *const dirs[] = { dir, frdir }; /* the user's first: the messages name it */
	for (size_t i = 0; i < 2; i++) {
		int rc = llmp_dir_make_own(dirs[i], geteuid(), 0755, NULL, why, sizeof why);
		if (rc == LLMP_DIR_FAILED)
			return 0; /* torch would fail to dump there: leave the recorder as the user has it */
		if (rc != 0) {
			plugin_task_message("%s", why);
			return -1;
		}
	}
	static const char *const names[] = { "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		spank_setenv(sp, names[i], "2000", 0);
	spank_setenv(sp, "TORCH_NCCL_DUMP_ON_TIMEOUT", "1", 0);
	spank_setenv(sp, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", prefix, 0);
	spank_setenv(sp, "TORCH_FR_DUMP_TEMP_FILE", prefix, 0);
	return 0;
}

/*
 * The layout file where this task sees it (layout_file.h): under
 * job_container/tmpfs the task has the job's own /tmp, not the one user_init
 * wrote in. -1 after the message: LLMP_LAYOUT_FILE must name a file.
 */
static int layout_file_visible(void)
{
	struct plugin_ctx *c = plugin_ctx();
	char msg[LLMP_MSG_MAX];
	bool written;
	if (!c->layout_path[0] ||
	    plugin_layout_file_ensure(c->plan, c->has_stage_layers ? c->stage_layers : NULL, c->layout_path,
				      &written, msg, sizeof msg) == 0)
		return 0;
	plugin_task_message(
		"%s (a directory every task of the job sees can be set with the plugin's layout_dir=)", msg);
	return -1;
}

/* OMP_NUM_THREADS, where the task has none: its CPUs (SLURM_CPUS_PER_TASK), else 1, as torchrun does. */
static void thread_default(spank_t sp)
{
	char cpus[32];
	const char *n = step_env(sp, "SLURM_CPUS_PER_TASK", cpus, sizeof cpus);
	bool number = n && *n && n[0] != '0' && strspn(n, "0123456789") == strlen(n);
	spank_setenv(sp, "OMP_NUM_THREADS", number ? n : "1", 0);
}

static void socket_ifname(spank_t sp)
{
	static const char *const names[] = { "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME" };
	char launch[256], ifname[64];
	if (!step_env(sp, "SLURM_LAUNCH_NODE_IPADDR", launch, sizeof launch) ||
	    netif_route_ifname(launch, ifname, sizeof ifname) < 0)
		return;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		spank_setenv(sp, names[i], ifname, 0); /* 0: a value already there stays */
}

/* MASTER_PORT (site.h): Slurm's reserved port, else the salted hash. */
static uint32_t master_port(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	char salt_text[32], resv[64];
	const char *salt = step_env(sp, LLMP_ENV_PORT_SALT, salt_text, sizeof salt_text);
	return plugin_site_port(&c->site, c->job_id, c->step_id, salt ? strtoull(salt, NULL, 16) : 0,
				step_env(sp, "SLURM_STEP_RESV_PORTS", resv, sizeof resv));
}

/*
 * Rank 0 runs on the master node and its framework will listen on the
 * port: when another process holds it already (another job, another user
 * who took it first), say so now rather than let the other ranks find a
 * stranger there. -1 after the message.
 */
static int master_port_held(uint32_t port, const char *host)
{
	if (netif_port_held(port) != 1)
		return 0;
	/*
	 * Only a denial, but nothing the plugin can prevent: any process on the
	 * node may bind any free port, Slurm's reserved ones too. Only nodes no
	 * other user runs on rule it out; the message says so to the site.
	 */
	plugin_task_message(
		"MASTER_PORT %u is held on %s by another process: rank 0 cannot listen there "
		"(the administrator sets the range with port_base= and port_range=, or has Slurm "
		"reserve ports with MpiParams=ports=; another user's process on a shared node can "
		"hold any port, which only ExclusiveUser=YES on the partition rules out)",
		port, host);
	return -1;
}

/*
 * Where task 0 runs and this node's NODE_RANK (task_map.h), from the
 * PMIx map, the arbitrary host file or node order. In task_init: the
 * host file is the user's, read for the user. -1 after fail_step.
 */
static int map_tasks(spank_t sp, struct plugin_task_map *map)
{
	struct plugin_ctx *c = plugin_ctx();
	enum { PMIX_MAP_MAX = 1 << 20 };
	char nodes[8192], per_node[1024], dist[64], hostfile[PATH_MAX], msg[LLMP_MSG_MAX], *text = NULL;
	char *pmix = malloc(PMIX_MAP_MAX);
	const char *pmix_map = NULL;
	uint32_t n = 0, *tasks = NULL;
	size_t textlen = 0;
	int rc = -1;
	if (!pmix || spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &n) != ESPANK_SUCCESS ||
	    !(tasks = calloc(n ? n : 1, sizeof *tasks))) {
		fail_step("cannot read this node's tasks from Slurm");
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		if (spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, i, &tasks[i]) != ESPANK_SUCCESS) {
			fail_step("cannot read this node's tasks from Slurm");
			goto out;
		}
	if (step_env_whole(sp, "SLURM_PMIX_MAPPING_SERV", pmix, PMIX_MAP_MAX, &pmix_map) < 0) {
		fail_step("SLURM_PMIX_MAPPING_SERV is longer than %d bytes", PMIX_MAP_MAX);
		goto out;
	}
	struct plugin_task_map_inputs in = {
		.pmix_map = pmix_map,
		.distribution = step_env(sp, "SLURM_DISTRIBUTION", dist, sizeof dist),
		.nodelist = step_env(sp, "SLURM_STEP_NODELIST", nodes, sizeof nodes),
		.tasks_per_node = step_env(sp, "SLURM_STEP_TASKS_PER_NODE", per_node, sizeof per_node),
		.nnodes = c->nnodes,
		.node_id = c->node_id,
		.world = llmp_plan_world(c->plan),
		.tasks = tasks,
		.ntasks = n,
	};
	if (!pmix_map && in.distribution && strncmp(in.distribution, "arbitrary", 9) == 0 &&
	    (in.hostfile = step_env(sp, "SLURM_HOSTFILE", hostfile, sizeof hostfile))) {
		if (read_user_file(in.hostfile, &text, &textlen, msg, sizeof msg) < 0) {
			fail_step("SLURM_HOSTFILE: %s", msg);
			goto out;
		}
		in.hostfile_text = text;
		in.hostfile_len = textlen;
	}
	if (plugin_task_map(&in, map, msg, sizeof msg) < 0)
		fail_step("%s", msg);
	else
		rc = 0;
out:
	free(text);
	free(tasks);
	free(pmix);
	return rc;
}

/*
 * A serving step's task, the only one on its node (serve.h): the GPUs
 * against the layout, the head (the step's first node), the port block,
 * the interface, and the engine's variables. -1 after the message.
 */
static int serve_task(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	static struct llmp_env env;
	char visible[4096], nodes[8192], head[256] = "", launch[256], addr[96] = "", ifname[64],
					 salt_text[32], resv[64], temp[128], why[LLMP_MSG_MAX], **names;
	uint32_t local_tasks = 0;
	size_t nnames;
	int local_rank = 0;

	if (c->failed) {
		plugin_task_message("%s", c->error);
		return -1;
	}
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_ID, &local_rank) != ESPANK_SUCCESS) {
		plugin_task_message("cannot read the task's place in the step from Slurm");
		return -1;
	}
	if (local_tasks != 1) {
		if (local_rank == 0)
			plugin_task_message(
				"--llm-serve runs one task per node, which sees all the node's GPUs: "
				"this node has %u (use --ntasks-per-node=1)",
				local_tasks);
		return -1;
	}
	spank_unsetenv(sp, LLMP_ENV_SERVE_TOKEN); /* the file holds it; the engine's environment need not */
	uint32_t gpus = plugin_gpu_entries(step_env(sp, "CUDA_VISIBLE_DEVICES", visible, sizeof visible));
	char warning[LLMP_MSG_MAX];
	if (plugin_serve_check(&c->serve_spec, c->nnodes, 0, gpus, NULL, NULL, warning, sizeof warning,
			       c->error, sizeof c->error) < 0) {
		plugin_task_message("%s", c->error);
		return -1;
	}
	if (step_env(sp, "SLURM_STEP_NODELIST", nodes, sizeof nodes) &&
	    hostlist_expand(nodes, c->nnodes, &names, &nnames, why, sizeof why) == LLMP_OK) {
		if (nnames)
			snprintf(head, sizeof head, "%s", names[0]);
		hostlist_free(names, nnames);
	}
	if (!head[0]) {
		plugin_task_message(
			"--llm-serve: cannot tell the step's first node from SLURM_STEP_NODELIST");
		return -1;
	}
	const char *salt = step_env(sp, LLMP_ENV_PORT_SALT, salt_text, sizeof salt_text);
	uint64_t salt_value = salt ? strtoull(salt, NULL, 16) : 0;
	uint32_t port = plugin_serve_port_block(&c->site, c->job_id, c->step_id, salt_value,
						step_env(sp, "SLURM_STEP_RESV_PORTS", resv, sizeof resv));
	if (!port) {
		plugin_task_message("--llm-serve: the site's port_range=%u holds no block of %d ports",
				    c->site.port_range, PLUGIN_SERVE_PORTS);
		return -1;
	}
	/* The interface and address toward the node srun ran on: the network Slurm reaches the job by. */
	if (step_env(sp, "SLURM_LAUNCH_NODE_IPADDR", launch, sizeof launch)) {
		if (netif_route_addr(launch, addr, sizeof addr) < 0)
			addr[0] = '\0';
		if (netif_route_ifname(launch, ifname, sizeof ifname) == 0) {
			static const char *const names_if[] = { "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME",
								"TP_SOCKET_IFNAME" };
			for (size_t i = 0; i < sizeof names_if / sizeof names_if[0]; i++)
				spank_setenv(sp, names_if[i], ifname, 0);
		}
	}
	/* Ray's sockets live under its temp dir: short, the node's own, named by the job's secret salt. */
	snprintf(temp, sizeof temp, "/tmp/llmp-ray-%u.%u.%u.%08x", c->job_id, c->step_id, c->node_id,
		 (unsigned)(salt_value >> 32));
	struct plugin_serve_node node = {
		.engine = c->serve_engine,
		.tp = c->serve_spec.size[LLMP_DIM_TP],
		.pp = c->serve_spec.size[LLMP_DIM_PP],
		.dp = c->serve_spec.size[LLMP_DIM_DP],
		.nnodes = c->nnodes,
		.node_rank = c->node_id,
		.gpus = gpus,
		.head = head,
		.node_addr = addr,
		.port = port,
		.temp_dir = temp,
		.token_file = c->serve_token_path,
	};
	env.n = 0;
	if (plugin_serve_env(&node, &env) < 0) {
		plugin_task_message("cannot compute the serving environment of node %u", c->node_id);
		return -1;
	}
	if (set_task_env(sp, &env) < 0)
		return -1;
	if (!c->serve_token_path[0])
		plugin_task_message("warning: --llm-serve: no token for this step (start it with srun, whose "
				    "llm_parallel plugin draws one): the engine runs without authentication");
	if (warning[0] && c->node_id == 0)
		plugin_task_message("%s", warning);
	return 0;
}

int plugin_step_task(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	static struct llmp_env env; /* large; one task per process */
	struct plugin_task_map map;
	uint32_t rank = 0, local_tasks = 0;
	int local_rank = 0;

	if (c->batch)
		return batch_task(sp);
	if (c->serve_option && c->step_id <= SLURM_MAX_NORMAL_STEP_ID)
		return serve_task(sp);
	if (!c->active)
		return 0;
	if (spank_get_item(sp, S_TASK_ID, &local_rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) != ESPANK_SUCCESS)
		fail_step("cannot read the task's place in the step from Slurm");
	if (!c->failed)
		place_node_tasks(sp);
	if (!c->failed)
		map_tasks(sp, &map);
	if (c->failed) {
		if (local_rank == 0) /* once per node is enough to read */
			plugin_task_message("%s", c->error);
		return -1;
	}

	/* Renumbered: the grid rank is the task's rank, and rank 0's host the master. */
	char placement[64] = "block";
	if (c->renumbered && (uint32_t)local_rank < c->place.n) {
		rank = c->job.rank[local_rank];
		snprintf(map.master, sizeof map.master, "%s", c->job.master);
		snprintf(placement, sizeof placement, "topology:%016llx", (unsigned long long)c->job.digest);
	}
	char gpu[256];
	uint32_t torch_local = choose_gpu(sp, (uint32_t)local_rank, local_tasks, gpu, sizeof gpu);
	struct plugin_task task = {
		.rank = rank,
		.local_rank = (uint32_t)local_rank,
		.torch_local_rank = torch_local,
		.local_tasks = local_tasks,
		.node_rank = map.node_rank,
		.nnodes = c->nnodes,
		.master_addr = map.master,
		.placement = placement,
		.master_port = master_port(sp),
		.layout_file = c->layout_path[0] ? c->layout_path : NULL,
		.model_args = c->model_args,
		.ckpt = c->ckpt_active ? &c->ckpt : NULL,
		.restart_count = c->restart_count,
	};
	if (rank == 0 && master_port_held(task.master_port, map.master) < 0)
		return -1;
	if (plugin_task_env(c->plan, &task, &env) < 0) {
		plugin_task_message("cannot compute the task environment of rank %u", rank);
		return -1;
	}
	if (set_task_env(sp, &env) < 0 || layout_file_visible() < 0)
		return -1;
	socket_ifname(sp);
	network_devices(sp, (uint32_t)local_rank);
	thread_default(sp);
	if (flight_recorder(sp) < 0)
		return -1;
	if (gpu[0] && spank_setenv(sp, "CUDA_VISIBLE_DEVICES", gpu, 1) != ESPANK_SUCCESS) {
		plugin_task_message("cannot set CUDA_VISIBLE_DEVICES");
		return -1;
	}
	if (check_task_gpu(sp, rank, (uint32_t)local_rank, torch_local, gpu) < 0)
		return -1;
	/* Placed on the topology, its advice has the cost; in block order without one, the plan's. */
	if (local_rank == 0 && c->layout_note[0])
		plugin_task_message("%s", c->layout_note);
	if (rank == 0 && c->job_placed && c->job.advice[0])
		plugin_task_message("warning: %s", c->job.advice);
	for (size_t i = 0; rank == 0 && !c->job_placed && i < llmp_plan_warning_count(c->plan); i++)
		plugin_task_message("warning: %s", llmp_plan_warning(c->plan, i));
	return 0;
}

int plugin_step_finish(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	char msg[LLMP_MSG_MAX];
	(void)sp;
	if (c->serve_token_path[0]) {
		if (plugin_layout_file_remove(c->serve_token_path, &c->owner, msg, sizeof msg) < 0)
			plugin_log_error("%s", msg);
		c->serve_token_path[0] = '\0';
	}
	if (!c->layout_path[0])
		return 0;
	/* Root again here: the child takes the job owner's ids and groups (plan_step read them). */
	if (plugin_layout_file_remove(c->layout_path, &c->owner, msg, sizeof msg) < 0)
		plugin_log_error("%s", msg);
	plugin_step_nccl_topo_remove(); /* the tasks' NCCL_TOPO_FILE beside it (step_gdr.c) */
	c->layout_path[0] = '\0';
	return 0;
}

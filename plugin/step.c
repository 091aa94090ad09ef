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
 * The batch script's own step (and the extern and interactive steps) are
 * left alone: an sbatch option is meant for the srun steps inside.
 */
#include "plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <slurm/slurm.h>

#include "gpu_bind.h"
#include "layout_file.h"
#include "resolve.h"
#include "slurm_env.h"
#include "task_env.h"

/* Remember why the step cannot run; task_init reports it. */
static int fail_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail_step(const char *fmt, ...)
{
	struct llmp_ctx *c = llmp_ctx();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
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
	int64_t per_node = llmp_tasks_per_node_uniform(
		step_env(sp, "SLURM_STEP_TASKS_PER_NODE", buf, sizeof(buf)));

	if (per_node <= 0 ||
	    spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, 0u, &first) != ESPANK_SUCCESS ||
	    first != node_id * (uint32_t)per_node)
		return 0;
	return (uint32_t)per_node;
}

int llmp_step_prepare(spank_t sp)
{
	struct llmp_ctx *c = llmp_ctx();
	char env[LLMP_SPEC_MAX_LEN + 2], msg[LLMP_MSG_MAX], dir[PATH_MAX];
	uint32_t world = 0;
	llmp_spec spec;

	if (spank_get_item(sp, S_JOB_ID, &c->job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &c->step_id) != ESPANK_SUCCESS ||
	    c->step_id > SLURM_MAX_NORMAL_STEP_ID)
		return 0;

	/* A variable too long for the buffer would read as unset: say so instead. */
	const char *env_text = step_env(sp, "LLMP_PARALLEL", env, sizeof(env));
	if (!env_text && spank_getenv(sp, "LLMP_PARALLEL", env, 1) == ESPANK_NOSPACE) {
		c->active = true;
		return fail_step("LLMP_PARALLEL: layout is longer than %d characters",
				 LLMP_SPEC_MAX_LEN);
	}
	switch (llmp_resolve(&c->site, env_text, c->option, &spec, msg, sizeof(msg))) {
	case LLMP_INACTIVE:
		return 0;
	case LLMP_HELP:
		c->active = true;
		return fail_step("'help' is answered at submission, not inside a job");
	case LLMP_INVALID:
		c->active = true;
		return fail_step("%s", msg);
	case LLMP_ACTIVE:
		break;
	}
	c->active = true;

	if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &world) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &c->nnodes) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NODEID, &c->node_id) != ESPANK_SUCCESS)
		return fail_step("cannot read the step's geometry from Slurm");

	uint32_t per_node = block_tasks_per_node(sp, c->node_id);
	if (llmp_plan_create(&spec, world, per_node, &c->plan, msg, sizeof(msg)) != LLMP_OK)
		return fail_step("%s (job step %u.%u: %u tasks on %u node%s)", msg, c->job_id,
				 c->step_id, world, c->nnodes, c->nnodes == 1 ? "" : "s");

	const char *where = c->site.layout_dir[0] ? c->site.layout_dir
			    : step_env(sp, "TMPDIR", dir, sizeof(dir)) ? dir : "/tmp";
	if (llmp_layout_file_write(c->plan, where, c->job_id, c->step_id, c->node_id,
				   c->layout_path, sizeof(c->layout_path), msg, sizeof(msg)) < 0) {
		c->layout_path[0] = '\0';
		return fail_step("%s", msg);
	}
	return 0;
}

/* Bind the task to its GPU; advice goes to the job's output once per node. */
static int bind_gpu(spank_t sp, uint32_t local_rank, uint32_t local_tasks)
{
	struct llmp_ctx *c = llmp_ctx();
	char visible[4096], gpu[256];
	uint32_t ngpus;

	if (!(c->gpu_bind >= 0 ? c->gpu_bind : c->site.gpu_bind))
		return 0;
	switch (llmp_gpu_pick(step_env(sp, "CUDA_VISIBLE_DEVICES", visible, sizeof(visible)),
			      local_rank, local_tasks, gpu, sizeof(gpu), &ngpus)) {
	case LLMP_GPU_BOUND:
		if (spank_setenv(sp, "CUDA_VISIBLE_DEVICES", gpu, 1) != ESPANK_SUCCESS)
			return -1;
		break;
	case LLMP_GPU_TOO_FEW:
		if (local_rank == 0)
			llmp_task_message("warning: %u tasks on this node but %u GPUs in the "
					  "step; GPUs left unbound (use --gpus-per-node=%u, "
					  "or --llm-gpu-bind=none to silence this)",
					  local_tasks, ngpus, local_tasks);
		break;
	case LLMP_GPU_NONE:
	case LLMP_GPU_ALREADY_BOUND:
		break;
	}
	return 0;
}

int llmp_step_task(spank_t sp)
{
	struct llmp_ctx *c = llmp_ctx();
	static struct llmp_env env; /* large; one task per process */
	char nodes[8192], first[256];
	uint32_t rank = 0, local_tasks = 0;
	int local_rank = 0;

	if (!c->active)
		return 0;
	if (spank_get_item(sp, S_TASK_ID, &local_rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks) != ESPANK_SUCCESS)
		fail_step("cannot read the task's place in the step from Slurm");
	if (!c->failed &&
	    llmp_hostlist_first(step_env(sp, "SLURM_STEP_NODELIST", nodes, sizeof(nodes)),
				first, sizeof(first)) < 0)
		fail_step("cannot find the step's first node in SLURM_STEP_NODELIST");
	if (c->failed) {
		if (local_rank == 0) /* once per node is enough to read */
			llmp_task_message("%s", c->error);
		return -1;
	}

	struct llmp_task task = {
		.rank = rank,
		.local_rank = (uint32_t)local_rank,
		.local_tasks = local_tasks,
		.node_rank = c->node_id,
		.nnodes = c->nnodes,
		.master_addr = first,
		.master_port = llmp_site_port(&c->site, c->job_id, c->step_id),
		.layout_file = c->layout_path[0] ? c->layout_path : NULL,
	};
	if (llmp_task_env(c->plan, &task, &env) < 0) {
		llmp_task_message("cannot compute the task environment of rank %u", rank);
		return -1;
	}
	for (size_t i = 0; i < env.n; i++)
		if (spank_setenv(sp, env.var[i].name, env.var[i].value, 1) != ESPANK_SUCCESS) {
			llmp_task_message("cannot set %s in the task environment",
					  env.var[i].name);
			return -1;
		}
	if (bind_gpu(sp, (uint32_t)local_rank, local_tasks) < 0) {
		llmp_task_message("cannot set CUDA_VISIBLE_DEVICES");
		return -1;
	}
	for (size_t i = 0; rank == 0 && i < llmp_plan_warning_count(c->plan); i++)
		llmp_task_message("warning: %s", llmp_plan_warning(c->plan, i));
	return 0;
}

int llmp_step_finish(spank_t sp)
{
	struct llmp_ctx *c = llmp_ctx();
	uid_t uid;
	gid_t gid;

	if (!c->layout_path[0])
		return 0;
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS ||
	    llmp_layout_file_remove(c->layout_path, uid, gid) < 0)
		slurm_error(PLUGIN_NAME ": could not remove %s", c->layout_path);
	c->layout_path[0] = '\0';
	return 0;
}

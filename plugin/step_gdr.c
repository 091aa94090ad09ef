/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * step_gdr.c - in each task (task_init, the user's own process), after
 * its GPU and HCA are chosen: GPUDirect RDMA as NCCL will decide it on
 * this node's task pairs (plugin/nccl_env.c), from the node's sysfs and
 * procfs; NCCL_NET_GDR_LEVEL=LOC where the path is known bad and the
 * user set none; on local task 0, one line in the job's output when a
 * pair goes without it, with the reason. ACS needs root to read and is
 * reported as not checked here.
 */
#include "plugin.h"

#include <stdio.h>
#include <sys/resource.h>

#include "plugin/nccl_env.h"
#include "topology/discover/gdr_read.h"

void plugin_step_gdr(spank_t sp, uint32_t local_rank)
{
	struct plugin_ctx *c = plugin_ctx();
	struct gdr_node facts;
	struct plugin_gdr gdr;
	char level[64] = "", host[256] = "", why[LLMP_MSG_MAX];
	if (!c->placed || !c->place.type ||
	    gdr_read_node("/", c->place.type, &facts, why, sizeof why) != LLMP_OK)
		return;
	struct rlimit lim;
	if (getrlimit(RLIMIT_MEMLOCK, &lim) == 0)
		facts.memlock = lim.rlim_cur == RLIM_INFINITY ? GDR_MEMLOCK_UNLIMITED
							      : (unsigned long long)lim.rlim_cur;
	bool user_set = spank_getenv(sp, "NCCL_NET_GDR_LEVEL", level, sizeof level) == ESPANK_SUCCESS;
	if (spank_getenv(sp, "SLURMD_NODENAME", host, sizeof host) != ESPANK_SUCCESS)
		host[0] = '\0';
	int rc = plugin_gdr_judge(&c->place, &facts, user_set ? level : NULL, host, &gdr);
	if (rc == 0 && gdr.loc)
		spank_setenv(sp, "NCCL_NET_GDR_LEVEL", "LOC", 0);
	if (local_rank == 0 && gdr.line[0])
		plugin_task_message("%s", gdr.line);
	gdr_node_free(&facts);
}

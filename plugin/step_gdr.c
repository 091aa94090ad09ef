/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * step_gdr.c - in each task (task_init, the user's own process), after
 * its GPU and HCA are chosen: GPUDirect RDMA as NCCL will decide it on
 * this node's task pairs (plugin/nccl_env.c), from the node's sysfs and
 * procfs; NCCL_NET_GDR_LEVEL=LOC where the path is known bad and the
 * user set none; on local task 0, one line in the job's output when a
 * pair goes without it, with the reason. ACS needs root to read: it is
 * read for every bridge in task_init_privileged (root, the same process)
 * and handed down in the context.
 *
 * And NCCL_TOPO_FILE, when the topology came from a file (the job's
 * LLMP_TOPOLOGY_FILE, the site's topology=) whose PCIe tree this node's
 * sysfs hides (nccl_env.h), or when the platform's own file is one NCCL
 * cannot parse: the node type's XML (topology/nccl_topo.h), checked, each
 * task writing the same bytes and renaming them into place beside the
 * layout file; never over the user's own NCCL_TOPO_FILE. slurmstepd
 * removes it at the step's end through the layout file's bounded child.
 */
#include "plugin.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/layout_file.h"
#include "plugin/nccl_env.h"
#include "topology/discover/discover.h"
#include "topology/discover/gdr_read.h"
#include "topology/nccl_topo.h"
#include <llmp/llmp_env.h>

#define PLATFORM_TOPO "/var/run/nvidia-topologyd/virtualTopology.xml"
#define XML_MAX ((size_t)1 << 20)

/* The platform's file checked: 1 absent, 0 good, -1 bad (why says). */
static int platform_file(char *why, size_t len)
{
	FILE *f = fopen(PLATFORM_TOPO, "re");
	if (!f)
		return 1;
	char *text = malloc(XML_MAX);
	size_t n = text ? fread(text, 1, XML_MAX, f) : 0;
	fclose(f);
	struct nccl_xml x;
	int rc = -1;
	if (!text)
		snprintf(why, len, "out of memory");
	else if (n == XML_MAX)
		snprintf(why, len, "larger than %zu bytes", XML_MAX);
	else if (nccl_topo_check(text, n, false, &x, why, len) == LLMP_OK) {
		nccl_xml_free(&x);
		rc = 0;
	}
	free(text);
	return rc;
}

/* Whether sysfs shows less of the PCIe tree than the file's node type. */
static bool sysfs_hides(const struct topo_type *ty)
{
	struct topo seen = { 0 };
	char why[LLMP_MSG_MAX];
	if (!(seen.types = calloc(1, sizeof *seen.types)))
		return false;
	seen.ntypes = 1;
	bool hides = topo_discover_sysfs("/", &seen.types[0], why, sizeof why) == LLMP_OK &&
		     plugin_sysfs_hides(ty, &seen.types[0]);
	topo_free(&seen);
	return hides;
}

/* Write the node type's XML to path: a file of this task's, renamed over it. */
static int write_xml(const struct topo_type *ty, const char *path, char *why, size_t len)
{
	char tmp[PATH_MAX + 32];
	char *buf = malloc(XML_MAX);
	size_t used = 0;
	struct nccl_xml x;
	if (!buf)
		return snprintf(why, len, "out of memory"), -1;
	if (nccl_topo_write(ty, NCCL_TOPO_LINK_SPEED, NCCL_TOPO_LINK_WIDTH, buf, XML_MAX, &used, why, len) !=
		    LLMP_OK ||
	    nccl_topo_check(buf, used, true, &x, why, len) != LLMP_OK) {
		free(buf);
		return -1;
	}
	nccl_xml_free(&x);
	/* A fresh name each task (mkostemp: O_EXCL, random): nobody can take it first. */
	snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	bool ok = fd >= 0 && fchmod(fd, 0644) == 0 && write(fd, buf, used) == (ssize_t)used;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	if (ok && rename(tmp, path) != 0)
		ok = false;
	if (!ok) {
		snprintf(why, len, "writing %.300s failed", path);
		if (fd >= 0)
			unlink(tmp);
	}
	free(buf);
	return ok ? 0 : -1;
}

static void nccl_topo_file(spank_t sp, uint32_t local_rank)
{
	struct plugin_ctx *c = plugin_ctx();
	char probe[8], path[PATH_MAX], why[LLMP_MSG_MAX] = "", pwhy[LLMP_MSG_MAX] = "";
	if (spank_getenv(sp, "NCCL_TOPO_FILE", probe, sizeof probe) != ESPANK_ENV_NOEXIST)
		return; /* the user's own */
	bool from_file = spank_getenv(sp, LLMP_ENV_TOPOLOGY_FILE, probe, sizeof probe) !=
				 ESPANK_ENV_NOEXIST ||
			 c->site.topology[0];
	int platform = platform_file(pwhy, sizeof pwhy);
	if (platform == 0 || (platform == 1 && !(from_file && sysfs_hides(c->place.type))))
		return;
	if (plugin_nccl_topo_path(c->layout_path, c->nccl_topo_token, path, sizeof path) < 0)
		snprintf(why, sizeof why, "no layout file to write it beside");
	else if (write_xml(c->place.type, path, why, sizeof why) == 0)
		spank_setenv(sp, "NCCL_TOPO_FILE", path, 0);
	if (local_rank != 0)
		return;
	if (platform < 0)
		plugin_task_message(
			"warning: %s: %s; NCCL would fail every communicator's init: %s", PLATFORM_TOPO, pwhy,
			why[0] ? "and llmp's own could not be written" : "NCCL_TOPO_FILE set to llmp's");
	else if (why[0])
		plugin_task_message("warning: NCCL_TOPO_FILE not written: %s", why);
}

void plugin_step_gdr_privileged(void)
{
	struct plugin_ctx *c = plugin_ctx();
	char why[LLMP_MSG_MAX];
	/* Fixed system paths, 4 KiB each: nothing a user names. Unreadable: left unchecked. */
	if (!c->acs && gdr_read_bridges_acs("/", &c->acs, &c->nacs, why, sizeof why) != LLMP_OK)
		c->nacs = 0;
}

void plugin_step_nccl_topo_remove(void)
{
	struct plugin_ctx *c = plugin_ctx();
	char path[PATH_MAX], msg[LLMP_MSG_MAX];
	if (plugin_nccl_topo_path(c->layout_path, c->nccl_topo_token, path, sizeof path) == 0 &&
	    plugin_layout_file_remove(path, &c->owner, msg, sizeof msg) < 0)
		plugin_log_error("%s", msg);
}

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
	gdr_node_merge_acs(&facts, c->acs, c->nacs);
	bool user_set = spank_getenv(sp, "NCCL_NET_GDR_LEVEL", level, sizeof level) == ESPANK_SUCCESS;
	if (spank_getenv(sp, "SLURMD_NODENAME", host, sizeof host) != ESPANK_SUCCESS)
		host[0] = '\0';
	int rc = plugin_gdr_judge(&c->place, &facts, user_set ? level : NULL, c->site.gdr_level, host, &gdr);
	if (rc == 0 && gdr.level[0])
		spank_setenv(sp, "NCCL_NET_GDR_LEVEL", gdr.level, 0);
	if (local_rank == 0 && gdr.line[0])
		plugin_task_message("%s", gdr.line);
	gdr_node_free(&facts);
	nccl_topo_file(sp, local_rank);
}

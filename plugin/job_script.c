/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_script.c - the job prolog and epilog, and the step of
 * --llm-node-check: is the node fit for the next job, or for the next run
 * of this one (node_clean.h)?
 *
 * slurmd runs them as root, with an environment of its own making (the
 * job's id, user and GPUs; nothing the job set). They read NVML from the
 * site's library only (plugstack nvml=), /proc, and that environment;
 * they never fail a job for what they find: a dirty node is drained with a
 * reason that starts "llmp:", so the next job lands elsewhere and the
 * administrator reads why, and the callback returns 0 (a failing epilog
 * would drain the node too, with "Epilog error" and no reason; a failing
 * prolog would requeue the job).
 */
#include "config.h"

#include "plugin.h"
#include "node_clean.h"
#include "common/run_bounded.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LEFTOVERS_MAX 8          /* named in a reason: enough to find the rest */
#define SCONTROL_TIMEOUT_S 15.0  /* slurmctld answers an update in well under a second */
#define ENVIRON_MAX (256 * 1024) /* the most of a process's initial environment read */

struct job {
	uint32_t id;
	uid_t uid;
	pid_t ancestors[16]; /* this process and its parents: slurmd's own epilog carries the job's id */
	unsigned nancestors;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Up to len-1 bytes of a /proc file, NUL-terminated; its length, or -1. */
static ssize_t read_proc(unsigned pid, const char *what, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/%s", pid, what);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < len - 1) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

static uid_t owner_of(unsigned pid, void *arg)
{
	(void)arg;
	char path[32];
	struct stat sb;
	snprintf(path, sizeof path, "/proc/%u", pid);
	return stat(path, &sb) == 0 ? sb.st_uid : (uid_t)-1;
}

static pid_t parent_of(pid_t pid)
{
	char stat[512];
	if (read_proc((unsigned)pid, "stat", stat, sizeof stat) <= 0)
		return 0;
	const char *close_paren = strrchr(stat, ')'); /* comm may hold spaces and parentheses */
	int ppid = 0;
	char state;
	if (!close_paren || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2)
		return 0;
	return ppid;
}

/* A zombie (state Z) holds nothing but its entry: not a leftover. */
static bool is_zombie(unsigned pid)
{
	char stat[512];
	const char *close_paren;
	return read_proc(pid, "stat", stat, sizeof stat) > 0 && (close_paren = strrchr(stat, ')')) &&
	       close_paren[1] == ' ' && close_paren[2] == 'Z';
}

/*
 * Does pid carry job's id: SLURM_JOB_ID=<id> in the environment it was
 * started with (every task of a step has it), or a cgroup of the job's
 * (proctrack/cgroup: ".../job_<id>/...")? The environment is the user's
 * to forge, but forging it only marks one's own process as one's job's.
 */
static bool carries_job(unsigned pid, uint32_t id)
{
	static char env[ENVIRON_MAX];
	char want[32], cg[4096], dir[32];
	int wn = snprintf(want, sizeof want, "SLURM_JOB_ID=%u", id);
	ssize_t n = read_proc(pid, "environ", env, sizeof env);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(env + i) + 1)
		if (strncmp(env + i, want, (size_t)wn) == 0 && env[i + wn] == '\0')
			return true;
	snprintf(dir, sizeof dir, "/job_%u", id);
	if (read_proc(pid, "cgroup", cg, sizeof cg) > 0)
		for (char *p = strstr(cg, dir); p; p = strstr(p + 1, dir))
			if (p[strlen(dir)] == '/' || p[strlen(dir)] == '\n' || p[strlen(dir)] == '\0')
				return true;
	return false;
}

static bool is_ancestor(const struct job *j, unsigned pid)
{
	for (unsigned i = 0; i < j->nancestors; i++)
		if ((unsigned)j->ancestors[i] == pid)
			return true;
	return false;
}

/* A process of the job's: its user's (never root's: root's daemons are no job's), carrying its id. */
static bool is_jobs(unsigned pid, void *arg)
{
	const struct job *j = arg;
	return j->uid != 0 && owner_of(pid, NULL) == j->uid && !is_ancestor(j, pid) && !is_zombie(pid) &&
	       carries_job(pid, j->id);
}

/* The job's processes still running, the first LEFTOVERS_MAX of them. */
static unsigned leftovers(struct job *j, struct plugin_leftover *left)
{
	unsigned n = 0;
	DIR *d = j->uid != 0 ? opendir("/proc") : NULL;
	struct dirent *e;
	while (d && n < LEFTOVERS_MAX && (e = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(e->d_name, &end, 10);
		if (*end || !isdigit((unsigned char)e->d_name[0]) || !is_jobs((unsigned)pid, j))
			continue;
		left[n].pid = (unsigned)pid;
		if (read_proc((unsigned)pid, "comm", left[n].comm, sizeof left[n].comm) < 0)
			left[n].comm[0] = '\0';
		for (char *c = left[n].comm; *c; c++)
			if (*c == '\n')
				*c = '\0';
			else if (!isprint((unsigned char)*c) || *c == ';')
				*c = '?';
		n++;
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * What the verdict is made from, on this node now: NVML's devices (into
 * devs) and the job; gpus, the job's GPUs (SLURM_JOB_GPUS). No leftover
 * processes yet: the caller adds them where the job has left.
 */
static struct plugin_clean_facts facts_now(const struct plugin_site *site, struct job *j,
					   struct topo_nvml_device *devs, const char *gpus)
{
	char why[LLMP_MSG_MAX];
	int n = topo_nvml_devices(site->nvml, devs, TOPO_NVML_DEVICES_MAX, why, sizeof why);
	return (struct plugin_clean_facts){
		.devs = devs,
		.ndevs = n > 0 ? (unsigned)n : 0,
		.job_gpus = gpus && *gpus ? gpus : NULL,
		.all_gpus = site->clean_all_gpus,
		.job_uid = j->uid,
		.is_jobs = is_jobs,
		.owner = owner_of,
		.arg = j,
		.mem_tolerance_mib = site->clean_mem_mib,
	};
}

/* The verdict on this node once the job has left: 0 clean, else the findings with reason set. */
static unsigned check_once(const struct plugin_site *site, struct job *j, char *reason, size_t len)
{
	static struct topo_nvml_device devs[TOPO_NVML_DEVICES_MAX];
	struct plugin_leftover left[LEFTOVERS_MAX];
	struct plugin_clean_facts f = facts_now(site, j, devs, getenv("SLURM_JOB_GPUS"));
	f.left = left;
	f.nleft = leftovers(j, left);
	return plugin_node_dirty(&f, reason, len);
}

/* scontrol update NodeName=node State=DRAIN Reason=reason, bounded; 0 when it said yes. */
static int drain(const struct plugin_site *site, const char *node, const char *reason, char *why, size_t len)
{
	char name_arg[320], reason_arg[LLMP_MSG_MAX + 16], conf[1100], failed[320];
	char *argv[] = { (char *)site->scontrol, "update", name_arg, "State=DRAIN", reason_arg, NULL };
	/* scontrol finds slurmctld through slurm.conf: slurmd's own SLURM_CONF, nothing of the job's */
	const char *slurm_conf = getenv("SLURM_CONF");
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", slurm_conf ? conf : NULL, NULL };
	const struct llmp_run_how how = { .env = envp, .quiet = 1, .timeout_s = SCONTROL_TIMEOUT_S };

	snprintf(name_arg, sizeof name_arg, "NodeName=%s", node);
	snprintf(reason_arg, sizeof reason_arg, "Reason=%s", reason);
	if (slurm_conf)
		snprintf(conf, sizeof conf, "SLURM_CONF=%s", slurm_conf);
	if (llmp_run_bounded(argv, &how, failed, sizeof failed) == 0)
		return 0;
	snprintf(why, len, "update NodeName=%.64s State=DRAIN: %s", node, failed);
	return -1;
}

int plugin_job_script(spank_t sp, int argc, char **argv, bool prolog)
{
	struct plugin_site *site = &plugin_ctx()->site;
	struct job j = { 0 };
	char reason[200], why[LLMP_MSG_MAX]; /* a reason fits a line of sinfo -R: its first findings */
	const char *node = getenv("SLURMD_NODENAME");
	const char *when = prolog ? "before" : "after";

	if (plugin_site_parse(site, argc, argv, why, sizeof why) < 0) {
		/* the same arguments failed every srun already: the administrator's to fix, not a job's */
		slurm_error(PLUGIN_NAME ": %s: the node is not checked", why);
		return 0;
	}
	if (!(prolog ? site->clean_prolog : site->clean_epilog))
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &j.id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &j.uid) != ESPANK_SUCCESS) {
		slurm_error(PLUGIN_NAME ": job %s: no job id or user from Slurm: the node is not checked",
			    prolog ? "prolog" : "epilog");
		return 0;
	}
	for (pid_t p = getpid(); p > 1 && j.nancestors < sizeof j.ancestors / sizeof j.ancestors[0];
	     p = parent_of(p))
		j.ancestors[j.nancestors++] = p;

	/* A leftover may be on its way out (proctrack's signal, a GPU context being torn down): wait for it. */
	double deadline = now_s() + site->clean_wait_s;
	unsigned findings;
	while ((findings = check_once(site, &j, reason, sizeof reason)) && now_s() < deadline)
		usleep(250 * 1000);
	if (!findings)
		return 0;
	if (!node || !*node) {
		slurm_error(PLUGIN_NAME ": %s job %u: %s (no SLURMD_NODENAME: the node is not drained)", when,
			    j.id, reason);
		return 0;
	}
	if (!site->drain) {
		slurm_error(PLUGIN_NAME ": %s job %u, %s is not clean (drain=no): %s", when, j.id, node,
			    reason);
		return 0;
	}
	if (drain(site, node, reason, why, sizeof why) < 0)
		slurm_error(PLUGIN_NAME ": %s job %u, %s is not clean and could not be drained (%s): %s",
			    when, j.id, node, why, reason);
	else
		slurm_info(PLUGIN_NAME ": %s job %u, %s drained: %s", when, j.id, node, reason);
	return 0;
}

void plugin_node_check(spank_t sp)
{
	struct plugin_ctx *c = plugin_ctx();
	static struct topo_nvml_device devs[TOPO_NVML_DEVICES_MAX];
	struct job j = { 0 };
	char gpus[1024], host[256] = "this node", reason[LLMP_MSG_MAX - 300];

	c->node_unfit[0] = '\0';
	if (!c->site.clean_check)
		return;
	if (spank_get_item(sp, S_JOB_ID, &j.id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &j.uid) != ESPANK_SUCCESS) {
		snprintf(c->node_unfit, sizeof c->node_unfit,
			 "--llm-node-check: no job id or user from Slurm");
		return;
	}
	/* The job's GPUs as its steps see them: the user's to misstate, which only fails the user's own check. */
	if (spank_getenv(sp, "SLURM_JOB_GPUS", gpus, sizeof gpus) != ESPANK_SUCCESS)
		gpus[0] = '\0';
	/* slurmstepd's own environment has slurmd's name for the node; the task's gets it later */
	const char *node = getenv("SLURMD_NODENAME");
	if (node && *node)
		snprintf(host, sizeof host, "%s", node);
	else if (spank_getenv(sp, "SLURMD_NODENAME", host, sizeof host) != ESPANK_SUCCESS)
		gethostname(host, sizeof host - 1);
	/* This task is still root's: none of the job's processes is this check's own. */
	struct plugin_clean_facts f = facts_now(&c->site, &j, devs, gpus);
	if (plugin_node_dirty(&f, reason, sizeof reason))
		snprintf(c->node_unfit, sizeof c->node_unfit, "%.255s is unfit for the job's next run: %s",
			 host, reason);
}

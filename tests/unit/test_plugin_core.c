/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plugin_core.c - the parts of the SPANK plugin that need no Slurm:
 * hostlists, task and restart counts, GPU choice, plugstack arguments,
 * precedence of the layout's and the checkpoint spec's sources, and the
 * environment each task (and the batch script) gets.
 */
#define _GNU_SOURCE /* struct ifaddrs, inet_pton */
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fail.h"
#include "common/netif.h"
#include "plugin/gpu_bind.h"
#include "plugin/job_place.h"
#include "plugin/nccl_env.h"
#include "plugin/resolve.h"
#include "plugin/resolve_ckpt.h"
#include "plugin/srun_args.h"
#include "plugin/site.h"
#include "planner/mem_guard.h"
#include "plugin/slurm_env.h"
#include "plugin/task_env.h"

static void first_host_of_hostlists(void **state)
{
	(void)state;
	char host[32];
	static const struct {
		const char *list, *first;
	} cases[] = {
		{ "node1", "node1" },       { "node[1-3]", "node1" }, { "node[01-04,7],gpu1", "node01" },
		{ "node[7,1-3]", "node7" }, { "a,b", "a" },           { "rack[2-3]-n[05-08]", "rack2-n05" },
		{ "n[3]x", "n3x" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(plugin_hostlist_first(cases[i].list, host, sizeof host), 0);
		assert_string_equal(host, cases[i].first);
	}
	const char *bad[] = { "", ",a", "node[", "node[a-b]", "n]", "[1-2" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(plugin_hostlist_first(bad[i], host, sizeof host), -1);
	assert_int_equal(plugin_hostlist_first(NULL, host, sizeof host), -1);
	/* "node12345" needs 10 bytes */
	assert_int_equal(plugin_hostlist_first("node12345", host, 9), -1);
	assert_int_equal(plugin_hostlist_first("node12345", host, 10), 0);
}

static void uniform_tasks_per_node(void **state)
{
	(void)state;
	assert_int_equal(plugin_tasks_per_node_uniform("4"), 4);
	assert_int_equal(plugin_tasks_per_node_uniform("4(x2)"), 4);
	assert_int_equal(plugin_tasks_per_node_uniform("2,2,2"), 2);
	assert_int_equal(plugin_tasks_per_node_uniform("2(x2),2"), 2);
	assert_int_equal(plugin_tasks_per_node_uniform("3,1"), 0);
	assert_int_equal(plugin_tasks_per_node_uniform("4(x2),3"), 0);
	const char *bad[] = { "", "x", "4,", "4(y2)", "4(x)", "4(x2", ",4", "3,1,z" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(plugin_tasks_per_node_uniform(bad[i]), -1);
	assert_int_equal(plugin_tasks_per_node_uniform(NULL), -1);
}

static void tasks_per_node_lists(void **state)
{
	(void)state;
	uint32_t t[6];
	assert_int_equal(plugin_tasks_per_node_list("2(x3),1", t, 4), 0);
	assert_true(t[0] == 2 && t[1] == 2 && t[2] == 2 && t[3] == 1);
	assert_int_equal(plugin_tasks_per_node_list("3,1,4", t, 3), 0);
	assert_true(t[0] == 3 && t[1] == 1 && t[2] == 4);
	assert_int_equal(plugin_tasks_per_node_list("8", t, 1), 0);
	assert_int_equal(t[0], 8);
	/* Too few, too many, malformed. */
	assert_int_equal(plugin_tasks_per_node_list("2(x3)", t, 4), -1);
	assert_int_equal(plugin_tasks_per_node_list("2(x3),1,1", t, 4), -1);
	assert_int_equal(plugin_tasks_per_node_list("2(x0)", t, 1), -1);
	const char *bad[] = { "", "x", "4,", "4(y2)", "4(x)", "4(x2", ",4" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(plugin_tasks_per_node_list(bad[i], t, 2), -1);
	assert_int_equal(plugin_tasks_per_node_list(NULL, t, 1), -1);
}

static void restart_counts(void **state)
{
	(void)state;
	assert_int_equal(plugin_restart_count(NULL), 0); /* unset: never requeued */
	assert_int_equal(plugin_restart_count("0"), 0);
	assert_int_equal(plugin_restart_count("3"), 3);
	assert_int_equal(plugin_restart_count("65535"), 65535);
	const char *bad[] = { "", "x", "-1", "+1", "1x", " 1", "1 ", "1.0", "99999999999" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (plugin_restart_count(bad[i]) != -1)
			fail_msg("'%s' read as a restart count", bad[i]);
}

static void one_gpu_per_local_task(void **state)
{
	(void)state;
	char gpu[16];
	uint32_t n;

	assert_int_equal(plugin_gpu_pick(NULL, 0, 4, gpu, sizeof gpu, &n), PLUGIN_GPU_NONE);
	assert_int_equal(plugin_gpu_pick("", 0, 4, gpu, sizeof gpu, &n), PLUGIN_GPU_NONE);
	assert_int_equal(plugin_gpu_pick("3", 0, 1, gpu, sizeof gpu, &n), PLUGIN_GPU_ALREADY_BOUND);
	assert_int_equal(plugin_gpu_pick("0,1,2,3", 2, 4, gpu, sizeof gpu, &n), PLUGIN_GPU_BOUND);
	assert_string_equal(gpu, "2");
	assert_int_equal(n, 4);
	/* Entries are taken as written: the step may hold GPUs 4-7 of the node. */
	assert_int_equal(plugin_gpu_pick("4,5,6,7", 0, 4, gpu, sizeof gpu, &n), PLUGIN_GPU_BOUND);
	assert_string_equal(gpu, "4");
	assert_int_equal(plugin_gpu_pick("GPU-aa,GPU-bb", 1, 2, gpu, sizeof gpu, &n), PLUGIN_GPU_BOUND);
	assert_string_equal(gpu, "GPU-bb");
	/* More GPUs than tasks: each task still takes the one at its index. */
	assert_int_equal(plugin_gpu_pick("0,1,2,3,4,5,6,7", 3, 4, gpu, sizeof gpu, &n), PLUGIN_GPU_BOUND);
	assert_string_equal(gpu, "3");
	assert_int_equal(plugin_gpu_pick("0,1", 1, 4, gpu, sizeof gpu, &n), PLUGIN_GPU_TOO_FEW);
	assert_int_equal(n, 2);
	assert_int_equal(plugin_gpu_pick("GPU-0123456789abcdef,GPU-1", 0, 2, gpu, 8, &n),
			 PLUGIN_GPU_TOO_FEW); /* does not fit the buffer: left alone */
	/* The modes by name, and the entries of a list. */
	assert_int_equal(plugin_gpus_parse("node"), PLUGIN_GPUS_NODE);
	assert_int_equal(plugin_gpus_parse("task"), PLUGIN_GPUS_TASK);
	assert_int_equal(plugin_gpus_parse("none"), PLUGIN_GPUS_NONE);
	assert_int_equal(plugin_gpus_parse("Node"), -1);
	assert_int_equal(plugin_gpus_parse(NULL), -1);
	assert_int_equal(plugin_gpu_entries(NULL), 0);
	assert_int_equal(plugin_gpu_entries(""), 0);
	assert_int_equal(plugin_gpu_entries("3"), 1);
	assert_int_equal(plugin_gpu_entries("0,1,2,3"), 4);
	assert_int_equal(plugin_gpu_entries("GPU-aa,,GPU-bb,"), 2);
}

static int site_of(struct plugin_site *site, const char *args, char *msg)
{
	char buf[512], *argv[16];
	int argc = 0;

	snprintf(buf, sizeof buf, "%s", args);
	for (char *tok = strtok(buf, " "); tok && argc < 16; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	return plugin_site_parse(site, argc, argv, msg, LLMP_MSG_MAX);
}

static void site_arguments(void **state)
{
	(void)state;
	struct plugin_site site;
	char msg[LLMP_MSG_MAX];

	assert_int_equal(site_of(&site, "", msg), 0);
	assert_int_equal(site.gpu_bind, PLUGIN_GPUS_NODE);
	assert_int_equal(site.port_base, 20000);
	assert_int_equal(site.port_range, 10000);
	assert_int_equal(site.defaults.given, 0);
	assert_int_equal(site.ckpt_defaults.given, 0);
	assert_string_equal(site.layout_dir, "");

	assert_int_equal(site_of(&site,
				 "defaults=order=tp-cp-ep-pp-dp,tp=2 max_tp=8 "
				 "max_ep=4 gpu_bind=none port_base=40000 port_range=100 layout_dir=/var/tmp",
				 msg),
			 0);
	assert_int_equal(site.defaults.size[LLMP_DIM_TP], 2);
	assert_int_equal(site.defaults.order[3], LLMP_DIM_PP);
	assert_int_equal(site.max[LLMP_KEY_TP], 8);
	assert_int_equal(site.max[LLMP_KEY_EP], 4);
	assert_int_equal(site.gpu_bind, PLUGIN_GPUS_NONE);
	assert_int_equal(site.port_base, 40000);
	assert_int_equal(site.port_range, 100);
	assert_string_equal(site.layout_dir, "/var/tmp");
	assert_string_equal(site.nvml, ""); /* libnvidia-ml.so.1 */

	/* The NVML library tasks load: the site's, an absolute path. */
	assert_int_equal(site_of(&site, "nvml=/opt/nvidia/lib/libnvidia-ml.so.1", msg), 0);
	assert_string_equal(site.nvml, "/opt/nvidia/lib/libnvidia-ml.so.1");
	assert_int_equal(site_of(&site, "nvml=libnvidia-ml.so.1", msg), -1);
	assert_string_equal(msg,
			    "plugstack argument 'nvml=libnvidia-ml.so.1': expected an absolute path under "
			    "1024 bytes");

	assert_int_equal(site_of(&site, "checkpoint=every=30min,keep=3,restarts=5", msg), 0);
	assert_int_equal(site.ckpt_defaults.given,
			 LLMP_CKPT_GIVEN_EVERY | LLMP_CKPT_GIVEN_KEEP | LLMP_CKPT_GIVEN_RESTARTS);
	assert_int_equal(site.ckpt_defaults.every, 30);
	assert_true(site.ckpt_defaults.every_minutes);
	assert_int_equal(site.ckpt_defaults.keep, 3);
	assert_int_equal(site.ckpt_defaults.max_restarts, 5);
	assert_int_equal(site_of(&site, "checkpoint=/scratch/ckpt", msg), 0);
	assert_string_equal(site.ckpt_defaults.dir, "/scratch/ckpt");
	assert_string_equal(site.gdr_level, "");
	assert_int_equal(site_of(&site, "gdr_level=PHB", msg), 0);
	assert_string_equal(site.gdr_level, "PHB");

	static const struct {
		const char *args, *culprit, *why;
	} bad[] = {
		{ "colour=blue", "'colour=blue'", "unknown" },
		{ "max_tp", "'max_tp'", "key=value" },
		{ "max_tp=0", "'max_tp=0'", "size" },
		{ "max_xx=4", "'max_xx=4'", "unknown" },
		{ "defaults=tp=0", "'defaults=tp=0'", "at least 1" },
		{ "defaults=help", "'defaults=help'", "help" },
		{ "gpu_bind=all", "'gpu_bind=all'", "node, task or none" },
		{ "placement=tree", "'placement=tree'", "block or topology" },
		{ "port_base=80", "'port_base=80'", "1024" },
		{ "port_base=60000 port_range=10000", "port_base=60000", "65535" },
		{ "layout_dir=tmp", "'layout_dir=tmp'", "absolute" },
		{ "gdr_level=3", "'gdr_level=3'", "LOC, PIX, PXB, PHB or SYS" },
		{ "gdr_level=NET", "'gdr_level=NET'", "LOC, PIX, PXB, PHB or SYS" },
		{ "gdr_level=phb", "'gdr_level=phb'", "LOC, PIX, PXB, PHB or SYS" },
		{ "checkpoint=keep=0", "'checkpoint=keep=0'", "keep=0: must be at least 1" },
		{ "checkpoint=every=5m", "'checkpoint=every=5m'", "not a number" },
		{ "checkpoint=kept=2", "'checkpoint=kept=2'", "unknown key 'kept'" },
		{ "checkpoint=help", "'checkpoint=help'", "'help' is not a default" },
		{ "checkpoint=", "'checkpoint='", "empty checkpoint spec" },
		{ "checkpoints=keep=2", "'checkpoints=keep=2'", "checkpoint=" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		msg[0] = '\0';
		assert_int_equal(site_of(&site, bad[i].args, msg), -1);
		if (!strstr(msg, bad[i].culprit) || !strstr(msg, bad[i].why))
			fail_msg("'%s' gave '%s'", bad[i].args, msg);
	}
}

/* guard=, guard_band=, guard_override=: the memory guard's policy, each bad value named. */
static void site_guard_arguments(void **state)
{
	(void)state;
	struct plugin_site site;
	char msg[LLMP_MSG_MAX];

	assert_int_equal(site_of(&site, "", msg), 0);
	assert_int_equal(site.guard, MEM_GUARD_REFUSE);
	assert_true(site.guard_band < 0); /* the measured bands */
	assert_false(site.guard_no_override);

	assert_int_equal(site_of(&site, "guard=warn guard_band=0.18 guard_override=no", msg), 0);
	assert_int_equal(site.guard, MEM_GUARD_WARN);
	assert_true(site.guard_band > 0.1799 && site.guard_band < 0.1801);
	assert_true(site.guard_no_override);
	assert_int_equal(site_of(&site, "guard=off guard_band=0 guard_override=yes", msg), 0);
	assert_int_equal(site.guard, MEM_GUARD_OFF);
	assert_true(site.guard_band == 0);
	assert_false(site.guard_no_override);
	assert_int_equal(site_of(&site, "guard=refuse guard_band=1", msg), 0);
	assert_int_equal(site.guard, MEM_GUARD_REFUSE);

	assert_int_equal(site_of(&site, "guard=strict", msg), -1);
	assert_string_equal(msg, "plugstack argument 'guard=strict': expected refuse, warn or off");
	const char *bands[] = { "guard_band=",     "guard_band=1.5", "guard_band=-0.1", "guard_band=abc",
				"guard_band=0.1x", "guard_band=nan", "guard_band=1e-1", "guard_band=." };
	for (size_t i = 0; i < sizeof bands / sizeof *bands; i++) {
		char want[128];
		assert_int_equal(site_of(&site, bands[i], msg), -1);
		snprintf(want, sizeof want,
			 "plugstack argument '%s': expected a fraction from 0 to 1, e.g. 0.15", bands[i]);
		assert_string_equal(msg, want);
	}
	assert_int_equal(site_of(&site, "guard_override=maybe", msg), -1);
	assert_string_equal(msg, "plugstack argument 'guard_override=maybe': expected yes or no");
	assert_int_equal(site_of(&site, "guards=warn", msg), -1);
	assert_non_null(strstr(msg, "unknown (known: "));
	assert_non_null(strstr(msg, "guard= guard_band= guard_override= calibration="));

	/* calibration=FILE: what llmp calibrate -o wrote, as if given there; a later argument wins */
	char path[] = "/tmp/llmp-calibration-XXXXXX", arg[128];
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char text[] = "# llmp calibrate\ngpu=h100,eff=0.4100,layer-ms=1.500 guard_band=0.042\n";
	assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
	close(fd);
	snprintf(arg, sizeof arg, "guard_band=0.3 calibration=%s", path);
	assert_int_equal(site_of(&site, arg, msg), 0);
	assert_string_equal(site.gpu, "h100,eff=0.4100,layer-ms=1.500");
	assert_true(site.guard_band > 0.0419 && site.guard_band < 0.0421);
	snprintf(arg, sizeof arg, "calibration=%s guard_band=0.3", path);
	assert_int_equal(site_of(&site, arg, msg), 0);
	assert_true(site.guard_band > 0.2999 && site.guard_band < 0.3001);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	const char wrong[] = "gpu=h100 guard=off\n";
	assert_int_equal(write(fd, wrong, sizeof wrong - 1), (ssize_t)(sizeof wrong - 1));
	close(fd);
	snprintf(arg, sizeof arg, "calibration=%s", path);
	assert_int_equal(site_of(&site, arg, msg), -1);
	char want[256];
	snprintf(want, sizeof want,
		 "plugstack argument 'calibration=%s': 'guard=off': only gpu= and guard_band= belong in it",
		 path);
	assert_string_equal(msg, want);
	unlink(path);
	assert_int_equal(site_of(&site, arg, msg), -1);
	snprintf(want, sizeof want, "plugstack argument 'calibration=%s': No such file or directory", path);
	assert_string_equal(msg, want);
	assert_int_equal(site_of(&site, "calibration=site.conf", msg), -1);
	assert_string_equal(msg, "plugstack argument 'calibration=site.conf': expected an absolute path");
}

static void ports_differ_between_jobs_and_steps(void **state)
{
	(void)state;
	struct plugin_site site;
	char msg[LLMP_MSG_MAX];
	const uint64_t salt = 0x0123456789abcdefull;

	assert_int_equal(site_of(&site, "", msg), 0);
	/* splitmix64's finaliser of (job << 32 | step), xor the salt, again; worked out in Python. */
	assert_int_equal(plugin_site_port(&site, 1000, 0, salt, NULL), 21606);
	assert_int_equal(plugin_site_port(&site, 1000, 1, salt, NULL), 24812);
	assert_int_equal(plugin_site_port(&site, 1000, 0, 0, NULL), 28662);
	/* 1000 salts over 10,000 ports: about 952 distinct ones expected; these fixed salts give a fixed count. */
	static bool seen[10000];
	unsigned distinct = 0;
	for (uint64_t k = 0; k < 1000; k++) {
		uint32_t port = plugin_site_port(&site, 7, 0, k * 0x9e3779b97f4a7c15ull, NULL);
		assert_true(port >= 20000 && port <= 29999); /* not assert_in_range: deprecated in cmocka 2 */
		distinct += !seen[port - 20000];
		seen[port - 20000] = true;
	}
	assert_true(distinct >= 900 && distinct <= 1000);
	/* Slurm's reserved ports win: the first of them. */
	assert_int_equal(plugin_site_port(&site, 1000, 0, salt, "12000-12003"), 12000);
	assert_int_equal(plugin_site_port(&site, 1000, 0, salt, "12005,12007"), 12005);
	assert_int_equal(plugin_site_port(&site, 1000, 0, salt, "12009"), 12009);
	static const char *const bad[] = { "", "x", "0", "70000", "12000x" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(plugin_site_port(&site, 1000, 0, salt, bad[i]), 21606);
}

static enum plugin_resolved resolve(const char *site_args, const char *env, const char *option,
				    llmp_spec *spec, char *msg)
{
	struct plugin_site site;

	assert_int_equal(site_of(&site, site_args, msg), 0);
	return plugin_resolve(&site, env, option, false, spec, msg, LLMP_MSG_MAX);
}

static void sources_take_precedence_key_by_key(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX] = "";
	llmp_spec s;

	assert_int_equal(resolve("defaults=tp=2", NULL, NULL, &s, msg), PLUGIN_INACTIVE);
	assert_int_equal(
		resolve("defaults=tp=2,pp=2,order=tp-cp-ep-pp-dp", "pp=4,cp=2", "cp=4,ep=2", &s, msg),
		PLUGIN_ACTIVE);
	assert_int_equal(s.size[LLMP_DIM_TP], 2);  /* site */
	assert_int_equal(s.size[LLMP_DIM_PP], 4);  /* env over site */
	assert_int_equal(s.size[LLMP_DIM_CP], 4);  /* option over env */
	assert_int_equal(s.size[LLMP_DIM_EP], 2);  /* option */
	assert_int_equal(s.order[3], LLMP_DIM_PP); /* site order kept */
	/* The variable alone turns the plugin on. */
	assert_int_equal(resolve("", "tp=2", NULL, &s, msg), PLUGIN_ACTIVE);
	assert_int_equal(s.size[LLMP_DIM_TP], 2);
	assert_int_equal(resolve("", NULL, "help", &s, msg), PLUGIN_HELP);
	assert_int_equal(resolve("", "help", NULL, &s, msg), PLUGIN_HELP);
}

static void each_source_is_named_in_errors(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	llmp_spec s;

	assert_int_equal(resolve("", "tp=x", "tp=2", &s, msg), PLUGIN_INVALID);
	assert_non_null(strstr(msg, "LLMP_PARALLEL: tp=x"));
	assert_int_equal(resolve("", "tp=2", "tp=0", &s, msg), PLUGIN_INVALID);
	assert_non_null(strstr(msg, "--llm-parallel: tp=0"));
	/* Each source is fine alone; merged, the site's order leaves out cp=2. */
	assert_int_equal(resolve("defaults=order=tp-dp-pp", NULL, "cp=2", &s, msg), PLUGIN_INVALID);
	assert_non_null(strstr(msg, "omits cp, whose size is 2"));
	assert_int_equal(resolve("max_tp=8", NULL, "tp=16", &s, msg), PLUGIN_INVALID);
	assert_non_null(strstr(msg, "tp=16 is larger than this site allows (8"));
	/* etp defaults to tp, so the tp ceiling is not the etp one. */
	assert_int_equal(resolve("max_etp=4", NULL, "tp=8", &s, msg), PLUGIN_INVALID);
	assert_non_null(strstr(msg, "etp=8"));
	assert_int_equal(resolve("max_etp=4", NULL, "tp=8,etp=4", &s, msg), PLUGIN_ACTIVE);
	/* Without max_etp, max_tp bounds etp too: else etp would get round max_tp. */
	assert_int_equal(resolve("max_tp=2", NULL, "tp=2,etp=8", &s, msg), PLUGIN_INVALID);
	assert_non_null(strstr(msg, "etp=8 is larger than this site allows (max_tp=2, which bounds etp too"));
	assert_int_equal(resolve("max_tp=2", NULL, "tp=2,etp=2", &s, msg), PLUGIN_ACTIVE);
	assert_int_equal(resolve("max_tp=2 max_etp=8", NULL, "tp=2,etp=8", &s, msg), PLUGIN_ACTIVE);
}

static void checkpoint_turns_on_the_default_layout(void **state)
{
	(void)state;
	struct plugin_site site;
	char msg[LLMP_MSG_MAX] = "";
	llmp_spec s;

	/* Wanted by --llm-checkpoint, without any layout source: all dp. */
	assert_int_equal(site_of(&site, "", msg), 0);
	assert_int_equal(plugin_resolve(&site, NULL, NULL, true, &s, msg, sizeof msg), PLUGIN_ACTIVE);
	assert_int_equal(s.given, 0);
	assert_int_equal(s.size[LLMP_DIM_TP], 1);
	assert_int_equal(s.size[LLMP_DIM_PP], 1);
	assert_int_equal(s.size[LLMP_DIM_DP], 0); /* auto */
	/* The site's default layout applies then too. */
	assert_int_equal(site_of(&site, "defaults=tp=2", msg), 0);
	assert_int_equal(plugin_resolve(&site, NULL, NULL, true, &s, msg, sizeof msg), PLUGIN_ACTIVE);
	assert_int_equal(s.size[LLMP_DIM_TP], 2);
	/* The user's layout still wins. */
	assert_int_equal(plugin_resolve(&site, NULL, "tp=4", true, &s, msg, sizeof msg), PLUGIN_ACTIVE);
	assert_int_equal(s.size[LLMP_DIM_TP], 4);
}

static enum plugin_resolved resolve_ckpt(const char *site_args, const char *env, const char *option,
					 llmp_ckpt_spec *spec, char *msg)
{
	struct plugin_site site;

	assert_int_equal(site_of(&site, site_args, msg), 0);
	return plugin_resolve_ckpt(&site, env, option, spec, msg, LLMP_MSG_MAX);
}

static void checkpoint_sources_take_precedence_key_by_key(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX] = "";
	const char *site = "checkpoint=/site,every=30min,keep=3,restarts=5";
	llmp_ckpt_spec s;

	/* Site defaults alone turn nothing on. */
	assert_int_equal(resolve_ckpt(site, NULL, NULL, &s, msg), PLUGIN_INACTIVE);
	/* The option alone: its keys over the site's. */
	assert_int_equal(resolve_ckpt(site, NULL, "/opt,every=100", &s, msg), PLUGIN_ACTIVE);
	assert_string_equal(s.dir, "/opt");
	assert_int_equal(s.every, 100);
	assert_false(s.every_minutes);
	assert_int_equal(s.keep, 3);
	assert_int_equal(s.max_restarts, 5);
	/* All three: option > LLMP_CHECKPOINT > site, key by key. */
	assert_int_equal(resolve_ckpt(site, "/env,keep=4,every=7", "restarts=0", &s, msg), PLUGIN_ACTIVE);
	assert_string_equal(s.dir, "/env"); /* env over site */
	assert_int_equal(s.every, 7);       /* env over site */
	assert_false(s.every_minutes);
	assert_int_equal(s.keep, 4);         /* env over site */
	assert_int_equal(s.max_restarts, 0); /* option over site */
	/* The variable alone turns checkpointing on; the site gives the DIR. */
	assert_int_equal(resolve_ckpt(site, "keep=9", NULL, &s, msg), PLUGIN_ACTIVE);
	assert_string_equal(s.dir, "/site");
	assert_int_equal(s.every, 30);
	assert_true(s.every_minutes);
	assert_int_equal(s.keep, 9);
	/* Without a site: the built-in defaults. */
	assert_int_equal(resolve_ckpt("", NULL, "ckpt", &s, msg), PLUGIN_ACTIVE);
	assert_string_equal(s.dir, "ckpt");
	assert_int_equal(s.every, 0);
	assert_int_equal(s.keep, LLMP_CKPT_DEFAULT_KEEP);
	assert_int_equal(s.max_restarts, LLMP_CKPT_DEFAULT_RESTARTS);
	assert_int_equal(resolve_ckpt("", NULL, "help", &s, msg), PLUGIN_HELP);
	assert_int_equal(resolve_ckpt("", "help", "/x", &s, msg), PLUGIN_HELP);
}

static void checkpoint_errors_name_their_source(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	llmp_ckpt_spec s;

	assert_int_equal(resolve_ckpt("", "/a,keep=0", "/b", &s, msg), PLUGIN_INVALID);
	assert_string_equal(msg, "LLMP_CHECKPOINT: keep=0: must be at least 1");
	assert_int_equal(resolve_ckpt("", "/a", "/b,every=5m", &s, msg), PLUGIN_INVALID);
	assert_non_null(strstr(msg, "--llm-checkpoint: every=5m: not a number"));
	/* Each source is fine alone; merged, there is still no directory. */
	assert_int_equal(resolve_ckpt("checkpoint=keep=3", "every=10", "restarts=1", &s, msg),
			 PLUGIN_INVALID);
	assert_string_equal(msg, "--llm-checkpoint: no checkpoint directory given (DIR or dir=DIR)");
}

/* Find a variable of the env by name; NULL if absent. */
static const char *var(const struct llmp_env *env, const char *name)
{
	for (size_t i = 0; i < env->n; i++)
		if (strcmp(env->var[i].name, name) == 0)
			return env->var[i].value;
	return NULL;
}

static void task_environment(void **state)
{
	(void)state;
	static struct llmp_env env;
	char msg[LLMP_MSG_MAX], expect[16];
	llmp_spec spec;
	llmp_plan *plan;

	assert_int_equal(llmp_spec_parse("tp=2,pp=2,ep=2,vpp=3", &spec, msg, sizeof msg), LLMP_OK);
	assert_int_equal(llmp_plan_create(&spec, 8, 4, &plan, msg, sizeof msg), LLMP_OK);
	for (uint32_t rank = 0; rank < 8; rank++) {
		struct plugin_task t = {
			.rank = rank,
			.local_rank = rank % 4,
			.torch_local_rank = 3 - rank % 4, /* the GPU the placement gave it */
			.local_tasks = 4,
			.node_rank = rank / 4,
			.nnodes = 2,
			.master_addr = "node1",
			.master_port = 20123,
			.layout_file = "/tmp/l.json",
		};
		assert_int_equal(plugin_task_env(plan, &t, &env), 0);
		/* rank = tp + 2*dp + 4*pp; experts: rank = etp + 2*(ep + 2*edp*...) */
		const uint32_t expected[][2] = {
			{ 0, rank },     { 1, rank % 2 },     { 2, rank / 2 % 2 },
			{ 3, rank / 4 }, { 4, rank / 2 % 2 }, { 5, rank % 2 },
		};
		const char *names[] = { "RANK",         "LLMP_TP_RANK", "LLMP_DP_RANK",
					"LLMP_PP_RANK", "LLMP_EP_RANK", "LLMP_EXPERT_TP_RANK" };
		for (size_t i = 0; i < 6; i++) {
			snprintf(expect, sizeof expect, "%u", expected[i][1]);
			assert_non_null(var(&env, names[i]));
			if (strcmp(var(&env, names[i]), expect) != 0)
				fail_msg("rank %u: %s=%s, expected %s", rank, names[i], var(&env, names[i]),
					 expect);
		}
		snprintf(expect, sizeof expect, "%u", rank % 4);
		assert_string_equal(var(&env, "LLMP_LOCAL_RANK"), expect);
		snprintf(expect, sizeof expect, "%u", 3 - rank % 4);
		assert_string_equal(var(&env, "LOCAL_RANK"), expect);
		snprintf(expect, sizeof expect, "%u", rank / 4);
		assert_string_equal(var(&env, "GROUP_RANK"), expect);
		assert_string_equal(var(&env, "LLMP_NODE_RANK"), expect);
		assert_string_equal(var(&env, "CROSS_RANK"), expect);
		snprintf(expect, sizeof expect, "%u", rank);
		assert_string_equal(var(&env, "ROLE_RANK"), expect);
	}
	assert_string_equal(var(&env, "WORLD_SIZE"), "8");
	assert_string_equal(var(&env, "LLMP_WORLD_SIZE"), "8");
	assert_string_equal(var(&env, "LOCAL_WORLD_SIZE"), "4");
	assert_string_equal(var(&env, "MASTER_ADDR"), "node1");
	assert_string_equal(var(&env, "MASTER_PORT"), "20123");
	assert_string_equal(var(&env, "LLMP_PLACEMENT"), "block"); /* none given */
	assert_string_equal(var(&env, "GROUP_WORLD_SIZE"), "2");
	assert_string_equal(var(&env, "CROSS_SIZE"), "2");
	assert_string_equal(var(&env, "LOCAL_SIZE"), "4");
	assert_string_equal(var(&env, "ROLE_WORLD_SIZE"), "8");
	assert_string_equal(var(&env, "ROLE_NAME"), "default");
	assert_null(var(&env, "TORCHELASTIC_USE_AGENT_STORE")); /* never: it changes torch's rendezvous */
	assert_string_equal(var(&env, "LLMP_MEGATRON_ARGS"),
			    "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
			    "--expert-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 3");
	assert_string_equal(var(&env, "LLMP_TP_SIZE"), "2");
	assert_string_equal(var(&env, "LLMP_DP_SIZE"), "2");
	assert_string_equal(var(&env, "LLMP_EXPERT_DP_SIZE"), "1");
	assert_string_equal(var(&env, "LLMP_VPP_SIZE"), "3");
	assert_string_equal(var(&env, "LLMP_ORDER"), "tp-cp-ep-dp-pp");
	assert_string_equal(var(&env, "LLMP_PARALLEL"), "tp=2,pp=2,ep=2,vpp=3");
	assert_string_equal(var(&env, "LLMP_LAYOUT_FILE"), "/tmp/l.json");
	assert_string_equal(var(&env, "LLMP_NNODES"), "2");

	/* No vpp, no layout file: those variables are absent, not empty. */
	/* Renumbered on the topology (job_place.h): the grid rank and rank 0's host. */
	struct plugin_task renumbered = {
		.rank = 5, .local_tasks = 1, .master_addr = "node3", .placement = "topology:00112233aabbccdd"
	};
	assert_int_equal(plugin_task_env(plan, &renumbered, &env), 0);
	assert_string_equal(var(&env, "LLMP_PLACEMENT"), "topology:00112233aabbccdd");
	assert_string_equal(var(&env, "RANK"), "5");
	assert_string_equal(var(&env, "LLMP_RANK"), "5");
	assert_string_equal(var(&env, "MASTER_ADDR"), "node3");
	llmp_plan_destroy(plan);
	assert_int_equal(llmp_spec_parse("tp=2", &spec, msg, sizeof msg), LLMP_OK);
	assert_int_equal(llmp_plan_create(&spec, 2, 0, &plan, msg, sizeof msg), LLMP_OK);
	struct plugin_task t = { .rank = 1, .local_tasks = 2, .nnodes = 1, .master_addr = "n" };
	assert_int_equal(plugin_task_env(plan, &t, &env), 0);
	assert_null(var(&env, "LLMP_VPP_SIZE"));
	assert_null(var(&env, "LLMP_LAYOUT_FILE"));
	/* No checkpointing: only the restart count, 0 by default. */
	assert_string_equal(var(&env, "LLMP_RESTART_COUNT"), "0");
	assert_null(var(&env, "LLMP_CHECKPOINT"));
	assert_null(var(&env, "LLMP_CHECKPOINT_DIR"));
	assert_null(var(&env, "LLMP_MAX_RESTARTS"));
	/* The default layout (--llm-checkpoint alone) is named, not left empty. */
	llmp_plan_destroy(plan);
	llmp_spec_init(&spec);
	assert_int_equal(llmp_plan_create(&spec, 2, 0, &plan, msg, sizeof msg), LLMP_OK);
	assert_int_equal(plugin_task_env(plan, &t, &env), 0);
	assert_string_equal(var(&env, "LLMP_PARALLEL"), "dp=auto");
	assert_string_equal(var(&env, "LLMP_DP_SIZE"), "2");
	/* A rank outside the plan is refused. */
	t.rank = 2;
	assert_int_equal(plugin_task_env(plan, &t, &env), -1);
	llmp_plan_destroy(plan);
}

/* LLMP_MEGATRON_ARGS for a layout, or NULL when it is not set. */
static const char *megatron_of(const char *layout, uint32_t world, struct llmp_env *env)
{
	char msg[LLMP_MSG_MAX];
	llmp_spec spec;
	llmp_plan *plan;
	assert_int_equal(llmp_spec_parse(layout, &spec, msg, sizeof msg), LLMP_OK);
	assert_int_equal(llmp_plan_create(&spec, world, 0, &plan, msg, sizeof msg), LLMP_OK);
	struct plugin_task t = { .local_tasks = 1, .nnodes = 1, .master_addr = "n" };
	assert_int_equal(plugin_task_env(plan, &t, env), 0);
	llmp_plan_destroy(plan);
	return var(env, "LLMP_MEGATRON_ARGS");
}

static void megatron_arguments(void **state)
{
	(void)state;
	static struct llmp_env env;
	/* Written from Megatron-LM's argument names; keys at their default left out. */
	assert_string_equal(megatron_of("dp=auto", 4, &env),
			    "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1");
	assert_string_equal(megatron_of("tp=4,pp=2,cp=2", 32, &env),
			    "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 "
			    "--context-parallel-size 2");
	assert_string_equal(megatron_of("tp=2,ep=4,etp=1", 16, &env),
			    "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 1 "
			    "--expert-model-parallel-size 4 --expert-tensor-parallel-size 1");
	/* tp-cp-ep-pp-dp is Megatron's --use-tp-pp-dp-mapping; other orders it cannot state. */
	assert_string_equal(megatron_of("tp=2,pp=2,order=tp-cp-ep-pp-dp", 8, &env),
			    "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
			    "--use-tp-pp-dp-mapping");
	/* ... where it changes the groups: with pp or dp 1 the two orders are one. */
	assert_string_equal(megatron_of("tp=2,order=tp-cp-ep-pp-dp", 8, &env),
			    "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 1");
	assert_string_equal(megatron_of("tp=2,pp=4,order=tp-cp-ep-pp-dp", 8, &env),
			    "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4");
	assert_null(megatron_of("tp=2,pp=2,order=pp-tp-cp-ep-dp", 8, &env));
	assert_null(megatron_of("tp=2,cp=2,order=cp-tp-ep-dp-pp", 8, &env));
}

static llmp_ckpt_spec checked_ckpt(const char *text)
{
	char msg[LLMP_MSG_MAX];
	llmp_ckpt_spec spec;

	if (llmp_ckpt_spec_parse_partial(text, &spec, msg, sizeof msg) != LLMP_OK ||
	    llmp_ckpt_spec_check(&spec, msg, sizeof msg) != LLMP_OK)
		fail_msg("'%s': %s", text, msg);
	return spec;
}

/* No name twice: a later duplicate would silently override the first. */
static void assert_names_unique(const struct llmp_env *env)
{
	for (size_t i = 0; i < env->n; i++)
		for (size_t j = i + 1; j < env->n; j++)
			if (strcmp(env->var[i].name, env->var[j].name) == 0)
				fail_msg("%s set twice", env->var[i].name);
}

static void checkpoint_environment(void **state)
{
	(void)state;
	static struct llmp_env env;
	char msg[LLMP_MSG_MAX];
	llmp_spec spec;
	llmp_plan *plan;

	/* The largest layout environment (vpp, layout file) plus every checkpoint variable. */
	assert_int_equal(llmp_spec_parse("tp=2,pp=2,vpp=2", &spec, msg, sizeof msg), LLMP_OK);
	assert_int_equal(llmp_plan_create(&spec, 4, 0, &plan, msg, sizeof msg), LLMP_OK);
	llmp_ckpt_spec ckpt = checked_ckpt("every=30min,/scratch/run1,keep=3");
	struct plugin_task t = { .rank = 3,
				 .local_tasks = 4,
				 .nnodes = 1,
				 .master_addr = "n",
				 .layout_file = "/tmp/l.json",
				 .ckpt = &ckpt,
				 .restart_count = 4 };
	assert_int_equal(plugin_task_env(plan, &t, &env), 0);
	assert_names_unique(&env);
	assert_string_equal(var(&env, "LLMP_CHECKPOINT"), "/scratch/run1,every=30min,keep=3,restarts=3");
	assert_string_equal(var(&env, "LLMP_CHECKPOINT_DIR"), "/scratch/run1");
	assert_string_equal(var(&env, "LLMP_CHECKPOINT_EVERY"), "30min");
	assert_string_equal(var(&env, "LLMP_CHECKPOINT_KEEP"), "3");
	assert_string_equal(var(&env, "LLMP_MAX_RESTARTS"), "3");
	assert_string_equal(var(&env, "LLMP_RESTART_COUNT"), "4");
	/* The layout is there as well. */
	assert_string_equal(var(&env, "LLMP_PARALLEL"), "tp=2,pp=2,vpp=2");
	assert_string_equal(var(&env, "RANK"), "3");
	assert_string_equal(var(&env, "LLMP_LAYOUT_FILE"), "/tmp/l.json");

	/* every in steps; no every: the variable is absent, not empty. */
	ckpt = checked_ckpt("ckpt,every=100,restarts=0");
	assert_int_equal(plugin_task_env(plan, &t, &env), 0);
	assert_string_equal(var(&env, "LLMP_CHECKPOINT_EVERY"), "100");
	assert_string_equal(var(&env, "LLMP_MAX_RESTARTS"), "0");
	assert_string_equal(var(&env, "LLMP_CHECKPOINT"), "ckpt,every=100,keep=2,restarts=0");
	ckpt = checked_ckpt("ckpt");
	assert_int_equal(plugin_task_env(plan, &t, &env), 0);
	assert_null(var(&env, "LLMP_CHECKPOINT_EVERY"));
	assert_string_equal(var(&env, "LLMP_CHECKPOINT_KEEP"), "2");

	/* The longest directory and spec fit. */
	char text[1200], dir[1024];
	memset(dir, 'd', 1023);
	dir[0] = '/';
	dir[1023] = '\0';
	snprintf(text, sizeof text, "%s,every=1000000000min,keep=1000000000,restarts=1000000000", dir);
	ckpt = checked_ckpt(text);
	t.restart_count = 65535;
	assert_int_equal(plugin_task_env(plan, &t, &env), 0);
	assert_string_equal(var(&env, "LLMP_CHECKPOINT_DIR"), dir);
	assert_string_equal(var(&env, "LLMP_CHECKPOINT"), text);
	assert_string_equal(var(&env, "LLMP_RESTART_COUNT"), "65535");
	llmp_plan_destroy(plan);
}

static void batch_script_environment(void **state)
{
	(void)state;
	static struct llmp_env env;
	static const char *const names[] = { "LLMP_CHECKPOINT",       "LLMP_CHECKPOINT_DIR",
					     "LLMP_CHECKPOINT_EVERY", "LLMP_CHECKPOINT_KEEP",
					     "LLMP_MAX_RESTARTS",     "LLMP_RESTART_COUNT" };
	llmp_ckpt_spec ckpt = checked_ckpt("dir=/a=b,every=5,keep=1,restarts=2");

	/* Exactly the checkpoint variables: no layout, no rank. */
	env.n = 0;
	assert_int_equal(plugin_ckpt_env(&ckpt, 1, &env), 0);
	assert_int_equal(env.n, 6);
	for (size_t i = 0; i < 6; i++)
		assert_string_equal(env.var[i].name, names[i]);
	assert_string_equal(var(&env, "LLMP_CHECKPOINT"), "dir=/a=b,every=5,keep=1,restarts=2");
	assert_string_equal(var(&env, "LLMP_CHECKPOINT_DIR"), "/a=b");
	assert_string_equal(var(&env, "LLMP_CHECKPOINT_EVERY"), "5");
	assert_string_equal(var(&env, "LLMP_CHECKPOINT_KEEP"), "1");
	assert_string_equal(var(&env, "LLMP_MAX_RESTARTS"), "2");
	assert_string_equal(var(&env, "LLMP_RESTART_COUNT"), "1");
	/* Without a spec, only the restart count. */
	env.n = 0;
	assert_int_equal(plugin_ckpt_env(NULL, 0, &env), 0);
	assert_int_equal(env.n, 1);
	assert_string_equal(var(&env, "LLMP_RESTART_COUNT"), "0");
	/* A full env is refused, not overrun. */
	env.n = PLUGIN_ENV_MAX;
	assert_int_equal(plugin_ckpt_env(&ckpt, 0, &env), -1);
}

static void site_topology(void **state)
{
	(void)state;
	struct plugin_site site;
	char msg[LLMP_MSG_MAX];
	assert_int_equal(site_of(&site, "topology=/etc/slurm/llmp-topology.json", msg), 0);
	assert_string_equal(site.topology, "/etc/slurm/llmp-topology.json");
	assert_int_equal(site_of(&site, "max_tp=8", msg), 0);
	assert_string_equal(site.topology, "");
	assert_int_equal(site_of(&site, "topology=topo.json", msg), -1);
	assert_non_null(strstr(msg, "'topology=topo.json'"));
	assert_non_null(strstr(msg, "absolute path"));
}

/* ------------------------------------------------- the whole step placed */

/*
 * Three hosts of two 2-GPU nodes each... under two leaves named so that the
 * topology order is n2, n3 (leaf "a") then n1 (leaf "b"): with renumbering,
 * n2's tasks 2,3 become ranks 0,1, n3's tasks 4,5 ranks 2,3 and n1's tasks
 * 0,1 ranks 4,5 (worked out by hand from placement.h's rule).
 */
static const char job_topology[] =
	"{\"llmp_topology\": 1, \"source\": \"made up for test_plugin_core\",\n"
	" \"node_types\": {\"box\": {\"numa_nodes\": 1, \"gpus\": [\n"
	"   {\"bus\": \"0000:03:00.0\", \"numa\": 0, \"pcie\": [\"0000:00:01.0\"]},\n"
	"   {\"bus\": \"0000:04:00.0\", \"numa\": 0, \"pcie\": [\"0000:00:02.0\"]}],\n"
	"  \"hcas\": [{\"name\": \"mlx5_0\", \"bus\": \"0000:61:00.0\", \"numa\": 0, \"pcie\": [\"0000:00:03.0\"],\n"
	"   \"ports\": [{\"port\": 1, \"state\": \"ACTIVE\", \"gbps\": 200, \"link\": \"InfiniBand\"}]}]}},\n"
	" \"nodes\": [{\"hosts\": \"n[1-3]\", \"type\": \"box\"}],\n"
	" \"switches\": [{\"name\": \"spine\", \"switches\": \"a,b\"},\n"
	"   {\"name\": \"a\", \"nodes\": \"n[2-3]\"}, {\"name\": \"b\", \"nodes\": \"n1\"}]}\n";

static int place_node_of(const char *file, uint32_t node, const uint32_t *tasks, uint32_t n, bool renumber,
			 const char *spec_text, struct plugin_node_place *np, struct plugin_job_place *jp,
			 char *msg)
{
	llmp_spec spec;
	llmp_plan *plan;
	assert_int_equal(llmp_spec_parse(spec_text, &spec, msg, LLMP_MSG_MAX), LLMP_OK);
	assert_int_equal(llmp_plan_create(&spec, 6, 0, &plan, msg, LLMP_MSG_MAX), LLMP_OK);
	struct plugin_job_inputs in = { .file = file,
					.nodelist = "n[1-3]",
					.tasks_per_node = "2(x3)",
					.node_id = node,
					.tasks = tasks,
					.ntasks = n,
					.renumber = renumber };
	int rc = plugin_job_place(np, jp, &in, plan, msg, LLMP_MSG_MAX);
	llmp_plan_destroy(plan);
	return rc;
}

static void whole_step_placement(void **state)
{
	(void)state;
	char file[] = "/tmp/llmp-test-topo-XXXXXX", msg[LLMP_MSG_MAX];
	int fd = mkstemp(file);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, job_topology, sizeof job_topology - 1),
			 (ssize_t)(sizeof job_topology - 1));
	close(fd);
	struct plugin_node_place np;
	struct plugin_job_place jp;
	static const uint32_t want[3][2] = { { 4, 5 }, { 0, 1 }, { 2, 3 } }; /* by node, local task */
	uint64_t digest = 0;
	for (uint32_t node = 0; node < 3; node++) {
		uint32_t tasks[2] = { 2 * node, 2 * node + 1 };
		assert_int_equal(place_node_of(file, node, tasks, 2, true, "tp=2,pp=3", &np, &jp, msg), 0);
		assert_int_equal(jp.rank[0], want[node][0]);
		assert_int_equal(jp.rank[1], want[node][1]);
		assert_string_equal(jp.master, "n2");
		assert_true(node == 0 || jp.digest == digest); /* every node computes the same */
		digest = jp.digest;
		assert_int_equal(np.n, 2);
		assert_true(np.gpu[0] != np.gpu[1] && np.gpu[0] >= 0 && np.gpu[1] >= 0);
		assert_int_equal(np.hca[0], 0);
		assert_string_equal(jp.advice, ""); /* tp pairs stay in their nodes */
		plugin_job_place_free(&jp);
		plugin_node_place_free(&np);
	}
	/* Block order: ranks are task ids, the master is the first host. */
	uint32_t tasks[2] = { 2, 3 };
	assert_int_equal(place_node_of(file, 1, tasks, 2, false, "tp=2,pp=3", &np, &jp, msg), 0);
	assert_true(jp.rank[0] == 2 && jp.rank[1] == 3);
	assert_string_equal(jp.master, "n1");
	assert_true(jp.digest != digest);
	plugin_job_place_free(&jp);
	plugin_node_place_free(&np);
	/* tp=3 cannot stay in a 2-task node: the advice names the group and the cost, 200 Gb/s = 25 GB/s
	 * shared by two tasks against PCIe's 24 GB/s inside the node. */
	assert_int_equal(place_node_of(file, 1, tasks, 2, true, "tp=3", &np, &jp, msg), 0);
	assert_non_null(strstr(jp.advice, "tensor-parallel groups leave their node (tp group 0: ranks 0,1,2, "
					  "under one leaf switch)"));
	assert_non_null(strstr(jp.advice, "12.5 GB/s per GPU over the network instead of 24.0 GB/s"));
	plugin_job_place_free(&jp);
	plugin_node_place_free(&np);
	/* Cyclic task ids, a count that disagrees, a host the file does not name: each said. */
	uint32_t cyclic[2] = { 1, 4 };
	assert_int_equal(place_node_of(file, 1, cyclic, 2, true, "tp=2", &np, &jp, msg), -1);
	assert_non_null(
		strstr(msg, "task 1 is local task 0 of node 1, where block distribution puts task 2"));
	assert_int_equal(place_node_of(file, 1, tasks, 1, true, "tp=2", &np, &jp, msg), -1);
	assert_non_null(strstr(msg, "node 1 has 1 tasks, SLURM_STEP_TASKS_PER_NODE says 2"));
	assert_int_equal(place_node_of("/nonexistent/topo.json", 1, tasks, 2, true, "tp=2", &np, &jp, msg),
			 -1);
	assert_non_null(strstr(msg, "/nonexistent/topo.json"));
	unlink(file);
}

/* ------------------------------------------------- socket interface */

static void socket_interface(void **state)
{
	(void)state;
	struct sockaddr_in lo4 = { .sin_family = AF_INET }, eth4 = { .sin_family = AF_INET },
			   ib4 = { .sin_family = AF_INET }, other4 = { .sin_family = AF_INET };
	struct sockaddr_in6 ib6 = { .sin6_family = AF_INET6 }, other6 = { .sin6_family = AF_INET6 };
	inet_pton(AF_INET, "127.0.0.1", &lo4.sin_addr);
	inet_pton(AF_INET, "10.0.0.5", &eth4.sin_addr);
	inet_pton(AF_INET, "192.168.7.5", &ib4.sin_addr);
	inet_pton(AF_INET, "10.0.0.6", &other4.sin_addr);
	inet_pton(AF_INET6, "fd00::5", &ib6.sin6_addr);
	inet_pton(AF_INET6, "fd00::6", &other6.sin6_addr);
	/* lo, eth0, an interface with no address, ib0 (v4 and v6), in getifaddrs' chain. */
	struct ifaddrs ib0v6 = { .ifa_name = "ib0",
				 .ifa_flags = IFF_UP,
				 .ifa_addr = (struct sockaddr *)&ib6 };
	struct ifaddrs ib0 = { .ifa_next = &ib0v6,
			       .ifa_name = "ib0",
			       .ifa_flags = IFF_UP,
			       .ifa_addr = (struct sockaddr *)&ib4 };
	struct ifaddrs bare = { .ifa_next = &ib0, .ifa_name = "dummy0", .ifa_flags = IFF_UP };
	struct ifaddrs eth0 = { .ifa_next = &bare,
				.ifa_name = "eth0",
				.ifa_flags = IFF_UP,
				.ifa_addr = (struct sockaddr *)&eth4 };
	struct ifaddrs lo = { .ifa_next = &eth0,
			      .ifa_name = "lo",
			      .ifa_flags = IFF_UP | IFF_LOOPBACK,
			      .ifa_addr = (struct sockaddr *)&lo4 };
	char name[16] = "";
	assert_int_equal(netif_ifname_of(&lo, (struct sockaddr *)&ib4, name, sizeof name), 0);
	assert_string_equal(name, "ib0");
	assert_int_equal(netif_ifname_of(&lo, (struct sockaddr *)&eth4, name, sizeof name), 0);
	assert_string_equal(name, "eth0");
	assert_int_equal(netif_ifname_of(&lo, (struct sockaddr *)&ib6, name, sizeof name), 0);
	assert_string_equal(name, "ib0");
	assert_int_equal(netif_ifname_of(&lo, (struct sockaddr *)&lo4, name, sizeof name), -1);
	assert_int_equal(netif_ifname_of(&lo, (struct sockaddr *)&other4, name, sizeof name), -1);
	assert_int_equal(netif_ifname_of(&lo, (struct sockaddr *)&other6, name, sizeof name), -1);
	assert_int_equal(netif_ifname_of(&lo, (struct sockaddr *)&eth4, name, 4), -1); /* "eth0" needs 5 */
	/* The kernel's own route: to this machine's loopback there is no interface to name. */
	assert_int_equal(netif_route_ifname("127.0.0.1", name, sizeof name), -1);
	assert_int_equal(netif_route_ifname("", name, sizeof name), -1);
}

/*
 * GPUDirect RDMA per task pair (plugin/nccl_env.c): two tasks, GPU 18 with
 * mlx5_0 behind one switch, GPU 9d with mlx5_2 behind another. Expected by
 * hand: LOC only for a known-bad path (ACS redirect, translating IOMMU) and
 * only when the user set no level; a pair beyond the level is said, not
 * overridden.
 */
static void gdr_per_task_pair(void **state)
{
	(void)state;
	struct topo_port ib = { .port = 1, .state = "ACTIVE", .link = "InfiniBand" };
	struct topo_gpu gpus[2] = {
		{ .pci = { .bus = "0000:18:00.0",
			   .numa = 0,
			   .npcie = 3,
			   .pcie = { "0000:15:01.0", "0000:16:00.0", "0000:17:00.0" } } },
		{ .pci = { .bus = "0000:9d:00.0",
			   .numa = 1,
			   .npcie = 3,
			   .pcie = { "0000:97:01.0", "0000:98:00.0", "0000:99:00.0" } } }
	};
	struct topo_hca hcas[2] = { { .name = "mlx5_0",
				      .pci = { .bus = "0000:19:00.0",
					       .numa = 0,
					       .npcie = 3,
					       .pcie = { "0000:15:01.0", "0000:16:00.0", "0000:17:01.0" } },
				      .ports = &ib,
				      .nports = 1 },
				    { .name = "mlx5_2",
				      .pci = { .bus = "0000:9a:00.0",
					       .numa = 1,
					       .npcie = 3,
					       .pcie = { "0000:97:01.0", "0000:98:00.0", "0000:99:01.0" } },
				      .ports = &ib,
				      .nports = 1 } };
	struct topo_type ty = {
		.name = "t", .numa_nodes = 2, .gpus = gpus, .ngpus = 2, .hcas = hcas, .nhcas = 2
	};
	int gpu[2] = { 0, 1 }, hca[2] = { 0, 1 };
	struct plugin_node_place np = { .type = &ty, .n = 2, .gpu = gpu, .hca = hca };
	struct gdr_pcidev devs[1] = { { .bus = "0000:99:01.0", .acs = GDR_ACS_READ, .acs_ctrl = 0x0001 } };
	struct gdr_node facts = { .nvidia_peermem = true,
				  .kernel = "6.8.0",
				  .driver = GDR_DRIVER_OPEN,
				  .dmabuf_probe = -1,
				  .ib_devices = 1,
				  .memlock = GDR_MEMLOCK_UNLIMITED,
				  .devs = devs,
				  .ndevs = 1 };
	struct plugin_gdr g;
	/* Healthy, but ACS unread on all other bridges: used, nothing to say. */
	assert_int_equal(plugin_gdr_judge(&np, &facts, NULL, NULL, "n1", &g), 0);
	assert_int_equal(g.pairs, 2);
	assert_int_equal(g.used, 2);
	assert_false(g.loc);
	assert_string_equal(g.line, "");
	/* ReqRedir on mlx5_2's downstream port: LOC, the pair named. */
	devs[0].acs_ctrl = 0x0005;
	assert_int_equal(plugin_gdr_judge(&np, &facts, "", NULL, "n1", &g), 0);
	assert_true(g.loc);
	assert_int_equal(g.used, 1);
	assert_non_null(strstr(g.line,
			       "n1: GPUDirect RDMA on 1 of 2 task pairs; GPU 0000:9d:00.0 / mlx5_2: broken: "
			       "ACS ReqRedir on bridge 0000:99:01.0"));
	assert_non_null(strstr(g.line, "NCCL_NET_GDR_LEVEL=LOC set"));
	assert_string_equal(g.level, "LOC");
	/* LOC wins over the site's level on a known-bad path. */
	assert_int_equal(plugin_gdr_judge(&np, &facts, NULL, "PHB", "n1", &g), 0);
	assert_string_equal(g.level, "LOC");
	/* The user's own level is kept: nothing set. */
	assert_int_equal(plugin_gdr_judge(&np, &facts, "PXB", "SYS", "n1", &g), 0);
	assert_false(g.loc);
	assert_string_equal(g.level, "");
	devs[0].acs_ctrl = 0;
	/* No module, proprietary driver: no GDR anywhere, said, no LOC (NCCL stages by itself). */
	facts.nvidia_peermem = false;
	facts.driver = GDR_DRIVER_PROPRIETARY;
	assert_int_equal(plugin_gdr_judge(&np, &facts, NULL, NULL, "n1", &g), 0);
	assert_false(g.loc);
	assert_int_equal(g.used, 0);
	assert_non_null(
		strstr(g.line, "GPU 0000:18:00.0 / mlx5_0: no: no nvidia_peermem or nv_peer_mem loaded"));
	/* The site's PHB: mlx5_2 moved behind another root port (PHB) now uses GDR, and PHB is set. */
	facts.nvidia_peermem = true;
	struct topo_hca far = hcas[1];
	far.pci.npcie = 1;
	strcpy(far.pci.pcie[0], "0000:a0:01.0");
	hcas[1] = far;
	assert_int_equal(plugin_gdr_judge(&np, &facts, NULL, NULL, "n1", &g), 0);
	assert_int_equal(g.used, 1);
	assert_non_null(strstr(g.line, "path PHB beyond NCCL_NET_GDR_LEVEL=PXB"));
	assert_string_equal(g.level, "");
	assert_int_equal(plugin_gdr_judge(&np, &facts, NULL, "PHB", "n1", &g), 0);
	assert_int_equal(g.used, 2);
	assert_string_equal(g.level, "PHB");
	assert_string_equal(g.line, "");
	/* Sysfs hiding the file's tree: a VM's flat bus (the GPU with no bridge), or no such GPU. */
	struct topo_gpu flat = { .pci = { .bus = "0000:18:00.0", .numa = -1 } };
	struct topo_gpu both[2] = { gpus[0], gpus[1] };
	struct topo_type vm = { .name = "vm", .numa_nodes = 1, .gpus = &flat, .ngpus = 1 };
	struct topo_type host = { .name = "h", .numa_nodes = 2, .gpus = both, .ngpus = 2 };
	assert_true(plugin_sysfs_hides(&ty, &vm));    /* 18 flat, 9d absent */
	assert_false(plugin_sysfs_hides(&ty, &host)); /* the same chains */
	both[1].pci.npcie = 1;                        /* 9d right under its root port: */
	assert_true(plugin_sysfs_hides(&ty, &host));  /* no switch node left */
	assert_false(plugin_sysfs_hides(&vm, &host)); /* a file that says less than sysfs */
	char path[64];
	assert_int_equal(plugin_nccl_topo_path("/tmp/llmp-layout.Ab12", 0xc0ffee, path, sizeof path), 0);
	assert_string_equal(path, "/tmp/llmp-layout.Ab12.0000000000c0ffee.nccl-topo.xml");
	assert_int_equal(plugin_nccl_topo_path("", 1, path, sizeof path), -1);
	assert_int_equal(
		plugin_nccl_topo_path("/tmp/a-very-long-directory-name/llmp-layout.xyz", 1, path, 40), -1);
	/* A level NCCL would ignore. */
	assert_int_equal(plugin_gdr_judge(&np, &facts, "fast", NULL, "n1", &g), -1);
	assert_non_null(strstr(g.line, "NCCL_NET_GDR_LEVEL=fast is not a level NCCL reads"));
}

/*
 * Every message the plugin logs is one line: each control byte of user text
 * becomes '?' (a newline would start a line of the user's in slurmd's log),
 * printable bytes and UTF-8 stay; llmp_fail's messages are made so too.
 */
static void messages_stay_one_line(void **state)
{
	char msg[64] = "a\nerror: forged\r\x1b[31m\x7f\t\xc3\xa9 end";
	char made[64];
	(void)state;
	assert_string_equal(llmp_show_line(msg), "a?error: forged??[31m??\xc3\xa9 end");
	assert_int_equal(llmp_fail(LLMP_ERR_ARG, made, sizeof made, "TMPDIR=%s: no", "/x\ny"), LLMP_ERR_ARG);
	assert_string_equal(made, "TMPDIR=/x?y: no");
	char shown[LLMP_SHOW_MAX];
	assert_string_equal(llmp_show(shown, "1\nerror", 7), "1?error");
}

/* srun's task count from its command line, worked out by hand for each. */
static struct plugin_srun_count srun_count_of_words(const char *line)
{
	char copy[512], *argv[64], *save = NULL;
	int argc = 0;
	snprintf(copy, sizeof copy, "srun %s", line);
	for (char *w = strtok_r(copy, " ", &save); w && argc < 64; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	return plugin_srun_count_of(argc, argv);
}

static void srun_task_count_from_the_command_line(void **state)
{
	static const struct {
		const char *line;
		uint32_t tasks, nodes;
	} cases[] = {
		{ "-n6 --llm-parallel=tp=4 true", 6, 0 },
		{ "-N1 -n 6 --llm-parallel tp=4 ./a.out", 6, 1 },
		{ "--ntasks=12 --nodes=3 hostname", 12, 3 },
		{ "--ntasks 8 -l hostname", 8, 0 },
		{ "-lN2 --ntasks-per-node=3 hostname", 6, 2 },
		{ "-N 3 --ntasks-per-node 4 --mpi=pmix python3 x.py", 12, 3 },
		{ "-ln5 hostname", 5, 0 },
		/* the command's own -n is the command's */
		{ "-N2 python3 train.py -n 6", 0, 0 },
		{ "-n4 -- prog -n 6", 4, 0 },
		{ "-n4 prog -n 6", 4, 0 },
		/* not one number, or not on the command line */
		{ "-N 2-3 --ntasks-per-node=2 true", 0, 0 },
		{ "-N2 true", 0, 0 },
		{ "true", 0, 0 },
		{ "-n x true", 0, 0 },
		{ "-n 0 true", 0, 0 },
		{ "-n 99999999999 true", 0, 0 },
		{ "-n 2 -N 3 true", 0, 0 },
		/* what cannot be placed: unknown, never a guess */
		{ "--some-plugin-flag -n6 true", 0, 0 },
		{ "--ntask=6 true", 0, 0 },
		{ "-y -n6 true", 0, 0 },
		{ "--jobid=5 -n6 true", 0, 0 },
		{ "-n2 prog : -n3 prog", 0, 0 },
		{ "-n", 0, 0 },
		/* an option whose value is in its word, and optional arguments */
		{ "--other-plugin=x -n6 -K1 -I30 --kill-on-bad-exit=1 true", 6, 0 },
		{ "-k -n 6 true", 6, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct plugin_srun_count c = srun_count_of_words(cases[i].line);
		if (c.tasks != cases[i].tasks || c.nodes != cases[i].nodes)
			fail_msg("srun %s: %u tasks on %u nodes, expected %u on %u", cases[i].line, c.tasks,
				 c.nodes, cases[i].tasks, cases[i].nodes);
	}
	/* /proc/self/cmdline's form: NUL-separated, NUL-terminated */
	static const char cmdline[] = "srun\0-N\0003\0-n\0009\0true\0";
	struct plugin_srun_count c = plugin_srun_count_of_cmdline(cmdline, sizeof cmdline - 1);
	assert_int_equal(c.tasks, 9);
	assert_int_equal(c.nodes, 3);
	c = plugin_srun_count_of_cmdline(cmdline, sizeof cmdline - 2); /* cut: no final NUL */
	assert_int_equal(c.tasks, 0);
	c = plugin_srun_count_of_cmdline(NULL, 0);
	assert_int_equal(c.tasks, 0);
}

static bool arbitrary_of_words(const char *line, const char *env_distribution, const char *env_job)
{
	char copy[512], *argv[64], *save = NULL;
	int argc = 0;
	snprintf(copy, sizeof copy, "srun %s", line);
	for (char *w = strtok_r(copy, " ", &save); w && argc < 64; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	return plugin_srun_arbitrary_allocation(argc, argv, env_distribution, env_job);
}

/* -m arbitrary in a new allocation under topology/tree: warned from 23.11 on only. */
static void arbitrary_layout_under_the_tree(void **state)
{
	(void)state;
	assert_true(arbitrary_of_words("-m arbitrary -w node3,node1 -n2 true", NULL, NULL));
	assert_true(arbitrary_of_words("--distribution=arbitrary:block -n2 true", NULL, NULL));
	assert_true(arbitrary_of_words("-n2 true", "arbitrary", NULL));
	assert_true(arbitrary_of_words("-marbitrary true", NULL, ""));
	/* inside an allocation, another distribution, the command's own -m */
	assert_false(arbitrary_of_words("-m arbitrary -n2 true", NULL, "42"));
	assert_false(arbitrary_of_words("--jobid=42 -m arbitrary -n2 true", NULL, NULL));
	assert_false(arbitrary_of_words("-m cyclic -n2 true", "arbitrary", NULL));
	assert_false(arbitrary_of_words("-m arbitraryx -n2 true", NULL, NULL));
	assert_false(arbitrary_of_words("-n2 prog -m arbitrary", NULL, NULL));

	uint32_t v22_05 = 0x160508, v23_02 = 0x17020b, v23_11 = 0x170b00, v24_11 = 0x180b05,
		 v26_05 = 0x1a0505;
	assert_null(plugin_arbitrary_tree_warning(v22_05, true, "topology/tree"));
	assert_null(plugin_arbitrary_tree_warning(v23_02, true, "topology/tree"));
	assert_non_null(plugin_arbitrary_tree_warning(v23_11, true, "topology/tree"));
	assert_non_null(plugin_arbitrary_tree_warning(v26_05, true, "topology/tree"));
	const char *w = plugin_arbitrary_tree_warning(v24_11, true, "topology/tree");
	assert_non_null(w);
	assert_non_null(strstr(w, "PENDING"));
	assert_non_null(strstr(w, "salloc or sbatch -w NODES"));
	assert_null(plugin_arbitrary_tree_warning(v24_11, false, "topology/tree"));
	assert_null(plugin_arbitrary_tree_warning(v24_11, true, "topology/block"));
	assert_null(plugin_arbitrary_tree_warning(v24_11, true, NULL));

	/* slurm.conf: keys in any case, comments, blanks, the last setting */
	char path[] = "/tmp/llmp-test-slurm-conf.XXXXXX", value[64];
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs("# TopologyPlugin=topology/block\nClusterName=x\n topologyplugin = topology/block # old\n"
	      "TOPOLOGYPLUGIN=topology/tree\nTopologyParam=Dragonfly\n",
	      f);
	fclose(f);
	assert_int_equal(plugin_slurm_conf_value(path, "TopologyPlugin", value, sizeof value), 1);
	assert_string_equal(value, "topology/tree");
	assert_int_equal(plugin_slurm_conf_value(path, "SelectType", value, sizeof value), 0);
	assert_int_equal(plugin_slurm_conf_value(path, "TopologyPlugin", value, 4), 0); /* too long */
	unlink(path);
	assert_int_equal(plugin_slurm_conf_value(path, "TopologyPlugin", value, sizeof value), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(first_host_of_hostlists),
		cmocka_unit_test(gdr_per_task_pair),
		cmocka_unit_test(uniform_tasks_per_node),
		cmocka_unit_test(tasks_per_node_lists),
		cmocka_unit_test(restart_counts),
		cmocka_unit_test(one_gpu_per_local_task),
		cmocka_unit_test(site_arguments),
		cmocka_unit_test(site_guard_arguments),
		cmocka_unit_test(ports_differ_between_jobs_and_steps),
		cmocka_unit_test(sources_take_precedence_key_by_key),
		cmocka_unit_test(each_source_is_named_in_errors),
		cmocka_unit_test(checkpoint_turns_on_the_default_layout),
		cmocka_unit_test(checkpoint_sources_take_precedence_key_by_key),
		cmocka_unit_test(checkpoint_errors_name_their_source),
		cmocka_unit_test(task_environment),
		cmocka_unit_test(megatron_arguments),
		cmocka_unit_test(checkpoint_environment),
		cmocka_unit_test(batch_script_environment),
		cmocka_unit_test(socket_interface),
		cmocka_unit_test(site_topology),
		cmocka_unit_test(whole_step_placement),
		cmocka_unit_test(messages_stay_one_line),
		cmocka_unit_test(srun_task_count_from_the_command_line),
		cmocka_unit_test(arbitrary_layout_under_the_tree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

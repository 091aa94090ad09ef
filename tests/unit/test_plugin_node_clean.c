/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plugin_node_clean.c - the verdict on a node a job has left
 * (plugin/node_clean.h): which GPUs were the job's, what makes one dirty
 * (a process, memory in use, a recovery action), leftover processes, the
 * drain reason, and the site's arguments for it. Nodes and processes are
 * made up here; every expected reason is written out by hand.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plugin/node_clean.h"
#include "plugin/site.h"

#define MIB (1024ull * 1024)

/* Four GPUs listed in NVML's own order: bus order is 1B (0), 3D (1), 9A (2), BC (3). */
static void node(struct topo_nvml_device d[4])
{
	static const char *const bus[] = { "0000:9a:00.0", "0000:1b:00.0", "0000:bc:00.0", "0000:3d:00.0" };
	static const char *const uuid[] = { "GPU-9A", "GPU-1B", "GPU-BC", "GPU-3D" };
	memset(d, 0, 4 * sizeof d[0]);
	for (int i = 0; i < 4; i++) {
		snprintf(d[i].bus, sizeof d[i].bus, "%s", bus[i]);
		snprintf(d[i].uuid, sizeof d[i].uuid, "%s", uuid[i]);
		snprintf(d[i].name, sizeof d[i].name, "NVIDIA H100 80GB HBM3");
		d[i].mem_bytes = 81559 * MIB;
		d[i].procs_known = d[i].used_known = true;
		d[i].used_bytes = 4 * MIB;
	}
}

/* pids 100-199 are the job's user's (uid 1002) and carry its id; 500 is another user's (1003); 900 is gone. */
static bool jobs(unsigned pid, void *arg)
{
	(void)arg;
	return pid >= 100 && pid < 200;
}

static uid_t owner(unsigned pid, void *arg)
{
	(void)arg;
	return pid >= 100 && pid < 200 ? 1002 : pid == 500 ? 1003 : (uid_t)-1;
}

static struct plugin_clean_facts facts(const struct topo_nvml_device *d, const char *job_gpus)
{
	return (struct plugin_clean_facts){ .devs = d,
					    .ndevs = 4,
					    .job_gpus = job_gpus,
					    .job_uid = 1002,
					    .is_jobs = jobs,
					    .owner = owner,
					    .mem_tolerance_mib = 1024 };
}

static void slurm_indices_count_gpus_in_bus_order(void **state)
{
	(void)state;
	struct topo_nvml_device d[4];
	node(d);
	/* "1": the GPU at 3d (entry 3 of NVML's list), not NVML's entry 1 */
	assert_true(plugin_gpu_in_list(d, 4, 3, "1"));
	assert_false(plugin_gpu_in_list(d, 4, 1, "1"));
	assert_true(plugin_gpu_in_list(d, 4, 1, "0,2"));
	assert_true(plugin_gpu_in_list(d, 4, 0, "0,2"));
	assert_false(plugin_gpu_in_list(d, 4, 2, "0,2"));
	assert_true(plugin_gpu_in_list(d, 4, 2, "1-3"));
	assert_false(plugin_gpu_in_list(d, 4, 1, "1-3"));
	for (const char *bad = "x;1,;1-;,1;-1;1 ;"; *bad;) { /* malformed lists name no GPU */
		char item[8];
		size_t n = strcspn(bad, ";");
		snprintf(item, sizeof item, "%.*s", (int)n, bad);
		assert_false(plugin_gpu_in_list(d, 4, 3, item));
		bad += n + (bad[n] == ';');
	}
}

static void a_clean_node_is_clean(void **state)
{
	(void)state;
	struct topo_nvml_device d[4];
	char reason[256];
	node(d);
	struct plugin_clean_facts f = facts(d, "0-3");
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 0);
	assert_string_equal(reason, "");
	/* no NVML at all (a CPU node): nothing to say */
	f.ndevs = 0;
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 0);
	/* memory in use up to the tolerance, on the job's GPUs */
	f = facts(d, "0-3");
	d[0].used_bytes = 1024 * MIB;
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 0);
	/* recovery action "none", or a driver that cannot say */
	d[1].recovery = 0;
	d[2].recovery = -1;
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 0);
}

static void a_process_on_the_jobs_gpu_is_named(void **state)
{
	(void)state;
	struct topo_nvml_device d[4];
	char reason[256];
	node(d);
	d[3].nprocs = 1; /* Slurm's GPU 1 */
	d[3].procs[0].pid = 500;
	d[3].procs[0].used_bytes = 812 * MIB;
	struct plugin_clean_facts f = facts(d, "1");
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 1);
	assert_string_equal(reason, "llmp: GPU GPU-3D pid 500 uid 1003 812 MiB");
	/* the job had GPU 0 only: another user's process on GPU 1 is another job's business */
	f = facts(d, "0");
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 0);
	/* unless the site's nodes are whole-node jobs */
	f.all_gpus = true;
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 1);
	/* a context whose process is gone */
	d[3].procs[0].pid = 900;
	d[3].procs[0].used_bytes = 0;
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 1);
	assert_string_equal(reason, "llmp: GPU GPU-3D pid 900 not visible on the node");
}

static void the_jobs_own_process_counts_on_any_gpu(void **state)
{
	(void)state;
	struct topo_nvml_device d[4];
	char reason[256];
	node(d);
	d[2].nprocs = 2;
	d[2].procs[0].pid = 500; /* not the job's, not its GPU: no finding */
	d[2].procs[1].pid = 150;
	d[2].procs[1].used_bytes = 2048 * MIB;
	struct plugin_clean_facts f = facts(d, NULL); /* slurmd named no GPUs (no gres) */
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 1);
	assert_string_equal(reason, "llmp: GPU GPU-BC pid 150 uid 1002 2048 MiB");
}

static void memory_without_a_process_and_recovery_actions(void **state)
{
	(void)state;
	struct topo_nvml_device d[4];
	char reason[256];
	node(d);
	d[1].used_bytes = 1025 * MIB; /* GPU-1B, Slurm's 0 */
	struct plugin_clean_facts f = facts(d, "0");
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 1);
	assert_string_equal(reason, "llmp: GPU GPU-1B 1025 MiB in use with no process (tolerance 1024 MiB)");
	/* not the job's GPU: its memory is another job's */
	f = facts(d, "1");
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 0);
	/* a recovery action counts whoever's GPU it is */
	d[0].recovery = 2;
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 1);
	assert_string_equal(reason, "llmp: GPU GPU-9A asks for a node reboot (NVML recovery action 2)");
	d[0].recovery = 7;
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 1);
	assert_string_equal(reason, "llmp: GPU GPU-9A asks for an unknown action (NVML recovery action 7)");
	assert_string_equal(plugin_recovery_name(4), "a drain and a GPU reset");
	/* a GPU in MIG mode: its instances' memory, not its own, is what counts */
	node(d);
	d[1].mig_enabled = true;
	d[1].used_bytes = 40000 * MIB;
	f = facts(d, "0");
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 0);
}

static void leftovers_and_a_long_list(void **state)
{
	(void)state;
	struct topo_nvml_device d[4];
	struct plugin_leftover left[2] = { { 120, "sleep" }, { 121, "python3" } };
	char reason[160];
	node(d);
	struct plugin_clean_facts f = facts(d, NULL);
	f.left = left;
	f.nleft = 2;
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 2);
	assert_string_equal(reason,
			    "llmp: pid 120 (sleep) uid 1002 outlived the job; pid 121 (python3) uid 1002 "
			    "outlived the job");
	/* more findings than the reason holds: the first ones named, the rest counted */
	for (int i = 0; i < 4; i++) {
		d[i].nprocs = 1;
		d[i].procs[0].pid = 500;
		d[i].procs[0].used_bytes = 812 * MIB;
	}
	f.all_gpus = true;
	assert_int_equal(plugin_node_dirty(&f, reason, sizeof reason), 6);
	assert_string_equal(reason,
			    "llmp: GPU GPU-9A pid 500 uid 1003 812 MiB; GPU GPU-1B pid 500 uid 1003 812 "
			    "MiB; GPU GPU-BC pid 500 uid 1003 812 MiB; and 3 more");
	assert_true(strlen(reason) < sizeof reason);
}

static void site_arguments(void **state)
{
	(void)state;
	struct plugin_site s;
	char msg[512];
	char *none[] = { NULL };
	assert_int_equal(plugin_site_parse(&s, 0, none, msg, sizeof msg), 0);
	assert_true(s.clean_epilog && s.clean_check);
	assert_false(s.clean_prolog);
	assert_int_equal(s.clean_wait_s, 10);
	assert_int_equal(s.clean_mem_mib, 1024);
	assert_false(s.clean_all_gpus);
	assert_true(s.drain);
	assert_string_equal(s.scontrol, "/usr/bin/scontrol");
	char *some[] = { "clean=prolog,epilog", "clean_wait=0", "clean_mem=4096",
			 "clean_gpus=all",      "drain=no",     "scontrol=/opt/slurm/bin/scontrol" };
	assert_int_equal(plugin_site_parse(&s, 6, some, msg, sizeof msg), 0);
	assert_true(s.clean_epilog && s.clean_prolog && !s.clean_check && s.clean_all_gpus && !s.drain);
	assert_int_equal(s.clean_wait_s, 0);
	assert_int_equal(s.clean_mem_mib, 4096);
	assert_string_equal(s.scontrol, "/opt/slurm/bin/scontrol");
	char *off[] = { "clean=off" };
	assert_int_equal(plugin_site_parse(&s, 1, off, msg, sizeof msg), 0);
	assert_false(s.clean_epilog || s.clean_prolog || s.clean_check);
	char *check[] = { "clean=check,prolog" };
	assert_int_equal(plugin_site_parse(&s, 1, check, msg, sizeof msg), 0);
	assert_true(s.clean_check && s.clean_prolog && !s.clean_epilog);
	static const char *const bad[][2] = {
		{ "clean=prolog,", "expected off, or a list of prolog, epilog and check, each once" },
		{ "clean=epilog,epilog", "expected off, or a list of prolog, epilog and check, each once" },
		{ "clean=off,check", "expected off, or a list of prolog, epilog and check, each once" },
		{ "clean=", "expected off, or a list of prolog, epilog and check, each once" },
		{ "clean=checks", "expected off, or a list of prolog, epilog and check, each once" },
		{ "clean_wait=301", "expected seconds from 0 to 300" },
		{ "clean_mem=-1", "expected MiB from 0 to 1048576" },
		{ "clean_gpus=some", "expected job or all" },
		{ "drain=1", "expected yes or no" },
		{ "scontrol=scontrol", "expected an absolute path" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *arg[] = { (char *)bad[i][0] };
		assert_int_equal(plugin_site_parse(&s, 1, arg, msg, sizeof msg), -1);
		assert_non_null(strstr(msg, bad[i][0]));
		assert_non_null(strstr(msg, bad[i][1]));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slurm_indices_count_gpus_in_bus_order),
		cmocka_unit_test(a_clean_node_is_clean),
		cmocka_unit_test(a_process_on_the_jobs_gpu_is_named),
		cmocka_unit_test(the_jobs_own_process_counts_on_any_gpu),
		cmocka_unit_test(memory_without_a_process_and_recovery_actions),
		cmocka_unit_test(leftovers_and_a_long_list),
		cmocka_unit_test(site_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

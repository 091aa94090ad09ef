/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_task_map.c - where task 0 runs and each node's NODE_RANK
 * (plugin/task_map.h), under block, cyclic and arbitrary distributions.
 *
 * The inputs are what Slurm 22.05 gave tasks on the local cluster
 * (tests/cluster): `srun --mpi=pmix -N3 -n6 -m cyclic` had
 * SLURM_STEP_TASKS_PER_NODE=4,1(x2) and SLURM_PMIX_MAPPING_SERV=
 * (vector,(0,3,1),(0,1,3)), tasks 0,3,4,5 on node1, 1 on node2, 2 on node3;
 * `-m arbitrary -w node3,node1,node3,node2` put tasks 0 and 2 on node3 (node
 * id 2). The expected answers are worked out by hand: task 0's host, and a
 * node's rank = the number of nodes whose lowest task is lower than its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/task_map.h"

static struct plugin_task_map_inputs step(const char *nodelist, uint32_t nnodes, uint32_t world,
					  uint32_t node_id, const uint32_t *tasks, uint32_t ntasks)
{
	struct plugin_task_map_inputs in = {
		.nodelist = nodelist,
		.nnodes = nnodes,
		.world = world,
		.node_id = node_id,
		.tasks = tasks,
		.ntasks = ntasks,
	};
	return in;
}

static void expect_map(const struct plugin_task_map_inputs *in, const char *master, uint32_t node_rank,
		       const char *source)
{
	struct plugin_task_map map;
	char msg[1024] = "";
	int rc = plugin_task_map(in, &map, msg, sizeof msg);
	if (rc != 0)
		fail_msg("node %u: %s", in->node_id, msg);
	assert_string_equal(map.master, master);
	assert_int_equal(map.node_rank, node_rank);
	assert_string_equal(map.source, source);
}

static void expect_error(const struct plugin_task_map_inputs *in, const char *const *words)
{
	struct plugin_task_map map;
	char msg[1024] = "";
	assert_int_equal(plugin_task_map(in, &map, msg, sizeof msg), -1);
	for (; *words; words++)
		if (!strstr(msg, *words))
			fail_msg("'%s' not in: %s", *words, msg);
}

static void pmix_map_cyclic(void **state)
{
	(void)state;
	static const char *map = "(vector,(0,3,1),(0,1,3))";
	static const uint32_t n0[] = { 0, 3, 4, 5 }, n1[] = { 1 }, n2[] = { 2 };
	struct plugin_task_map_inputs in = step("node[1-3]", 3, 6, 0, n0, 4);
	in.pmix_map = map;
	in.distribution = "cyclic";
	expect_map(&in, "node1", 0, "SLURM_PMIX_MAPPING_SERV");
	in.node_id = 1, in.tasks = n1, in.ntasks = 1;
	expect_map(&in, "node1", 1, "SLURM_PMIX_MAPPING_SERV");
	in.node_id = 2, in.tasks = n2;
	expect_map(&in, "node1", 2, "SLURM_PMIX_MAPPING_SERV");
}

/* -w node3,node1,node3,node2: task 0 on node3, whose rank is then 0; node1 (task 1) 1; node2 (task 3) 2. */
static void pmix_map_arbitrary(void **state)
{
	(void)state;
	static const char *map = "(vector,(2,1,1),(0,1,1),(2,1,1),(1,1,1))";
	static const uint32_t n0[] = { 1 }, n1[] = { 3 }, n2[] = { 0, 2 };
	struct plugin_task_map_inputs in = step("node[1-3]", 3, 4, 2, n2, 2);
	in.pmix_map = map;
	in.distribution = "arbitrary";
	expect_map(&in, "node3", 0, "SLURM_PMIX_MAPPING_SERV");
	in.node_id = 0, in.tasks = n0, in.ntasks = 1;
	expect_map(&in, "node3", 1, "SLURM_PMIX_MAPPING_SERV");
	in.node_id = 1, in.tasks = n1;
	expect_map(&in, "node3", 2, "SLURM_PMIX_MAPPING_SERV");
}

/* 26.05's topology order, as a map: two blocks of two nodes, the second first. */
static void pmix_map_topology_order(void **state)
{
	(void)state;
	static const uint32_t n2[] = { 0, 1 }, n0[] = { 4, 5 };
	struct plugin_task_map_inputs in = step("gpu[01-04]", 4, 8, 2, n2, 2);
	in.pmix_map = "(vector,(2,2,2),(0,2,2))";
	in.distribution = "block";
	in.tasks_per_node = "2(x4)";
	expect_map(&in, "gpu03", 0, "SLURM_PMIX_MAPPING_SERV");
	in.node_id = 0, in.tasks = n0;
	expect_map(&in, "gpu03", 2, "SLURM_PMIX_MAPPING_SERV");
}

static void pmix_map_errors(void **state)
{
	(void)state;
	static const uint32_t n0[] = { 0, 3, 4, 5 }, n1[] = { 1 };
	struct plugin_task_map_inputs in = step("node[1-3]", 3, 6, 0, n0, 4);
	static const char *bad[] = { "(vector,(0,3)",           "(vector,(0,3,1),(0,1,3)",
				     "vector,(0,3,1)",          "(vector,(0,3,1),(0,1,x))",
				     "(vector,(0,3,1)(0,1,3))", "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		in.pmix_map = bad[i];
		expect_error(&in, (const char *[]){ "SLURM_PMIX_MAPPING_SERV", "is not a", NULL });
	}
	in.pmix_map = "(vector,(0,4,1),(0,1,2))"; /* node 3 of 3 */
	expect_error(&in, (const char *[]){ "SLURM_PMIX_MAPPING_SERV", "names node 3", "3 nodes", NULL });
	in.pmix_map = "(vector,(0,3,1),(0,1,2))"; /* 5 tasks */
	expect_error(&in, (const char *[]){ "maps 5 tasks, the step has 6", NULL });
	in.pmix_map = "(vector,(0,3,1),(0,1,4))"; /* 7 tasks */
	expect_error(&in, (const char *[]){ "more than the step's 6 tasks", NULL });
	/* Task 1 runs here, on node 1, but the map says node 0. */
	in.pmix_map = "(vector,(0,1,2),(1,2,1),(0,1,2))";
	in.node_id = 1, in.tasks = n1, in.ntasks = 1;
	expect_error(&in, (const char *[]){ "puts task 1 on node 0", "runs on node 1", NULL });
}

/* SLURM_HOSTFILE node2,node1,node2 with -m arbitrary -n3: task 0 on node2 (node id 1). */
static void arbitrary_hostfile(void **state)
{
	(void)state;
	static const char text[] = "# the layout\nnode2\n\n  node1  \nnode2 # again\nnode1\n";
	static const uint32_t n0[] = { 1 }, n1[] = { 0, 2 };
	struct plugin_task_map_inputs in = step("node[1-2]", 2, 3, 1, n1, 2);
	in.distribution = "arbitrary";
	in.tasks_per_node = "1,2";
	in.hostfile = "/home/u/hosts";
	in.hostfile_text = text;
	in.hostfile_len = sizeof text - 1;
	expect_map(&in, "node2", 0, "SLURM_HOSTFILE");
	in.node_id = 0, in.tasks = n0, in.ntasks = 1;
	expect_map(&in, "node2", 1, "SLURM_HOSTFILE");

	static const char other[] = "node2\nnode7\nnode2\n";
	in.hostfile_text = other;
	in.hostfile_len = sizeof other - 1;
	expect_error(&in,
		     (const char *[]){ "/home/u/hosts", "node7", "task 1", "not a node of the step", NULL });
	static const char few[] = "node2\nnode1\n";
	in.hostfile_text = few;
	in.hostfile_len = sizeof few - 1;
	expect_error(&in, (const char *[]){ "/home/u/hosts names 2 hosts, the step has 3 tasks", NULL });
	/* The file says node1 has task 0, but node 0 (node1) runs task 1. */
	static const char wrong[] = "node1\nnode2\nnode2\n";
	in.hostfile_text = wrong;
	in.hostfile_len = sizeof wrong - 1;
	expect_error(&in, (const char *[]){ "SLURM_HOSTFILE puts task 1 on node 1", NULL });
}

/* No map: node order, checked with the node's own tasks. */
static void node_order(void **state)
{
	(void)state;
	static const uint32_t b1[] = { 4 }, b2[] = { 5 }, c2[] = { 2 }, c0[] = { 0, 3, 4, 5 };
	struct plugin_task_map_inputs in = step("node[1-3]", 3, 6, 1, b1, 1);
	in.tasks_per_node = "4,1(x2)";
	expect_map(&in, "node1", 1, "node order"); /* no SLURM_DISTRIBUTION: block */
	in.distribution = "block:cyclic";
	in.node_id = 2, in.tasks = b2;
	expect_map(&in, "node1", 2, "node order");
	in.distribution = "cyclic";
	in.tasks = c2;
	expect_map(&in, "node1", 2, "node order");
	in.node_id = 0, in.tasks = c0, in.ntasks = 4;
	expect_map(&in, "node1", 0, "node order");
}

static void node_order_contradicted(void **state)
{
	(void)state;
	static const uint32_t n0[] = { 1 }, n2[] = { 0, 2 }, t0[] = { 2, 3 };
	/* -m arbitrary -w node3,node1,node3,node2 without a map: nodes 0 and 2 see it. */
	struct plugin_task_map_inputs in = step("node[1-3]", 3, 4, 0, n0, 1);
	in.distribution = "arbitrary";
	in.tasks_per_node = "1(x2),2";
	expect_error(&in, (const char *[]){ "task 1 is the first task on node1 (node 0", "puts task 0",
					    "--mpi=pmix", "SLURM_HOSTFILE", NULL });
	in.node_id = 2, in.tasks = n2, in.ntasks = 2;
	expect_error(&in, (const char *[]){
				  "task 0 runs on node3 (node 2 of the step), not on its first node node1",
				  NULL });
	/* Block in topology order (26.05): node 0 holds tasks 2 and 3. */
	in = step("gpu[01-02]", 2, 4, 0, t0, 2);
	in.distribution = "block";
	in.tasks_per_node = "2(x2)";
	expect_error(&in, (const char *[]){ "task 2 is the first task on gpu01", "SLURM_DISTRIBUTION=block",
					    "puts task 0", NULL });
	/* Cyclic: node 1's first task must be 1. */
	static const uint32_t c1[] = { 0 };
	in.distribution = "cyclic";
	in.node_id = 1, in.tasks = c1, in.ntasks = 1;
	expect_error(&in, (const char *[]){ "task 0 is the first task on gpu02", "puts task 1", NULL });
}

static void bad_steps(void **state)
{
	(void)state;
	static const uint32_t t[] = { 0 };
	struct plugin_task_map_inputs in = step(NULL, 1, 1, 0, t, 1);
	expect_error(&in, (const char *[]){ "SLURM_STEP_NODELIST", NULL });
	in = step("node[1-2]", 3, 3, 0, t, 1);
	expect_error(&in, (const char *[]){ "names 2 nodes, the step has 3", NULL });
	in = step("node[1-", 1, 1, 0, t, 1);
	expect_error(&in, (const char *[]){ "SLURM_STEP_NODELIST", NULL });
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pmix_map_cyclic),         cmocka_unit_test(pmix_map_arbitrary),
		cmocka_unit_test(pmix_map_topology_order), cmocka_unit_test(pmix_map_errors),
		cmocka_unit_test(arbitrary_hostfile),      cmocka_unit_test(node_order),
		cmocka_unit_test(node_order_contradicted), cmocka_unit_test(bad_steps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

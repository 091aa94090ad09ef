/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plugin_gpu_check.c - the GPU a task finds against the one srun's
 * estimate assumed (plugin/gpu_check.h): LLMP_MODEL_PEAKS as srun writes it
 * and the step parses it, NVML's names in llmp's, which of NVML's GPUs a
 * task uses, and the verdict (a line when the names differ, a failure when
 * the memory is below the stage's peak). Expected values by hand.
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

#include <llmp/llmp_spec.h>
#include "plugin/gpu_check.h"
#include "plugin/model_layout.h"
#include "plugin/site.h"
#include "topology/gpu_desc.h"

#define GIB (1024ull * 1024 * 1024)

static void peaks_are_parsed(void **state)
{
	(void)state;
	struct plugin_stage_peak p[PLUGIN_STAGES_MAX];
	char msg[256];
	assert_int_equal(plugin_peaks_parse("h100:61234,a100-40gb:7", 2, p, msg, sizeof msg), 0);
	assert_string_equal(p[0].gpu, "h100");
	assert_int_equal(p[0].mib, 61234);
	assert_string_equal(p[1].gpu, "a100-40gb");
	assert_int_equal(p[1].mib, 7);
	assert_int_equal(plugin_peaks_parse("custom:999999999", 1, p, msg, sizeof msg), 0);
	assert_int_equal(p[0].mib, 999999999u);
	static const struct {
		const char *text;
		uint32_t pp;
		const char *why;
	} bad[] = {
		{ "h100:1", 2, "not 2 stages" },
		{ "h100:1,h100:2", 1, "not 1 stages" },
		{ "h100:0", 1, "stage 0: expected a peak" },
		{ "h100:1000000000", 1, "stage 0: expected a peak" },
		{ "h100:1,H100:2", 2, "stage 1: expected a GPU name" },
		{ "h100:1,:2", 2, "stage 1: expected a GPU name" },
		{ "h100", 1, "stage 0: expected a GPU name" },
		{ "h100:", 1, "stage 0: expected a peak" },
		{ "h100:-5", 1, "stage 0: expected a peak" },
		{ "abcdefghijabcdefghijabcdefghijab:1", 1, "stage 0: expected a GPU name" },
		{ "h100:1,", 1, "not 1 stages" },
		{ "h100:1 ", 1, "not 1 stages" },
		{ "h100:1", 0, "0 pipeline stages" },
		{ "h100:1", PLUGIN_STAGES_MAX + 1, "at most 128" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		msg[0] = '\0';
		assert_int_equal(plugin_peaks_parse(bad[i].text, bad[i].pp, p, msg, sizeof msg), -1);
		if (!strstr(msg, bad[i].why))
			fail_msg("'%s' on %u: '%s' does not say '%s'", bad[i].text, bad[i].pp, msg,
				 bad[i].why);
	}
}

static void nvml_names_map_to_ours(void **state)
{
	(void)state;
	assert_string_equal(gpu_desc_of_nvml("NVIDIA H100 80GB HBM3"), "h100");
	assert_string_equal(gpu_desc_of_nvml("NVIDIA H200"), "h200");
	assert_string_equal(gpu_desc_of_nvml("NVIDIA A100-SXM4-40GB"), "a100-40gb");
	assert_string_equal(gpu_desc_of_nvml("NVIDIA A100-PCIE-40GB"), "a100-40gb");
	assert_string_equal(gpu_desc_of_nvml("NVIDIA A100-SXM4-80GB"), "a100");
	assert_string_equal(gpu_desc_of_nvml("nvidia h100 pcie"), "h100-pcie");
	/* whole names only: no guess from a prefix */
	assert_null(gpu_desc_of_nvml("NVIDIA H100"));
	assert_null(gpu_desc_of_nvml("NVIDIA H100 80GB HBM3 "));
	assert_null(gpu_desc_of_nvml("Tesla V100-SXM2-16GB"));
	assert_null(gpu_desc_of_nvml(""));
	assert_null(gpu_desc_of_nvml(NULL));
	/* every name the table gives is one --gpu knows */
	const char *all[] = { "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA A100-SXM4-40GB",
			      "NVIDIA H100 PCIe" };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		struct gpu_desc g;
		char msg[256];
		assert_int_equal(gpu_desc_parse(gpu_desc_of_nvml(all[i]), &g, msg, sizeof msg), LLMP_OK);
	}
}

/* A device as topo_nvml_devices fills one, no processes listed. */
#define DEV(name_, uuid_, bus_, mem_, mig_enabled_, mig_)                                                  \
	{                                                                                                  \
		.name = name_, .uuid = uuid_, .bus = bus_, .mem_bytes = mem_, .mig_enabled = mig_enabled_, \
		.mig = mig_                                                                                \
	}

/* NVML's order is not the bus order: index 0 of CUDA_VISIBLE_DEVICES is bus 1b, NVML's third. */
static const struct topo_nvml_device node[] = {
	DEV("NVIDIA H100 80GB HBM3", "GPU-cc", "0000:9a:00.0", 80 * GIB, false, false),
	DEV("NVIDIA H100 80GB HBM3", "GPU-bb", "0000:3d:00.0", 80 * GIB, false, false),
	DEV("NVIDIA A100-SXM4-40GB", "GPU-aa", "0000:1b:00.0", 40 * GIB, false, false),
};

static void the_task_s_gpu_is_found(void **state)
{
	(void)state;
	assert_ptr_equal(plugin_task_device(node, 3, "0,1,2", 0), &node[2]);
	assert_ptr_equal(plugin_task_device(node, 3, "0,1,2", 1), &node[1]);
	assert_ptr_equal(plugin_task_device(node, 3, "2,0", 0), &node[0]);
	assert_ptr_equal(plugin_task_device(node, 3, NULL, 2), &node[0]);
	assert_ptr_equal(plugin_task_device(node, 3, "", 0), &node[2]);
	assert_ptr_equal(plugin_task_device(node, 3, "GPU-bb", 0), &node[1]);
	assert_ptr_equal(plugin_task_device(node, 3, "1,GPU-a", 1), &node[2]);
	/* unknown on a mixed node: no answer rather than a guess */
	assert_null(plugin_task_device(node, 3, "7", 0));
	assert_null(plugin_task_device(node, 3, "0,1", 2));
	assert_null(plugin_task_device(node, 3, "GPU-zz", 0));
	assert_null(plugin_task_device(node, 3, "x1", 0));
	assert_null(plugin_task_device(node, 0, "0", 0));
	/* on a node of one kind, any of them answers */
	assert_ptr_equal(plugin_task_device(node, 2, "7", 0), &node[0]);
	/* but what runs on a GPU is asked of the named one alone */
	assert_null(plugin_task_device_named(node, 2, "7", 0));
	assert_null(plugin_task_device_named(node, 2, NULL, 2));
	assert_null(plugin_task_device_named(node, 0, NULL, 0));
	assert_ptr_equal(plugin_task_device_named(node, 2, NULL, 1), &node[0]);
	assert_ptr_equal(plugin_task_device_named(node, 3, "1,GPU-a", 1), &node[2]);
}

/*
 * A GPU in MIG mode, followed by its instances as topo_nvml_devices lists them: a task
 * named by its instance's UUID gets the instance (its 19.5 GiB, not the GPU's 40); an
 * index cannot say which instance, so the GPU in MIG mode answers nothing.
 */
static const struct topo_nvml_device mig_node[] = {
	DEV("NVIDIA A100-SXM4-40GB", "GPU-aa", "0000:1b:00.0", 40 * GIB, true, false),
	DEV("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "MIG-a1", "0000:1b:00.0", 19968ull << 20, false, true),
	DEV("NVIDIA A100-SXM4-40GB MIG 2g.10gb", "MIG-a2", "0000:1b:00.0", 9856ull << 20, false, true),
	DEV("NVIDIA A100-SXM4-40GB", "GPU-bb", "0000:3d:00.0", 40 * GIB, false, false),
};

static void a_mig_instance_is_found_by_its_uuid(void **state)
{
	(void)state;
	assert_ptr_equal(plugin_task_device(mig_node, 4, "MIG-a2", 0), &mig_node[2]);
	assert_ptr_equal(plugin_task_device(mig_node, 4, "MIG-a1,MIG-a2", 0), &mig_node[1]);
	/* indexes count the GPUs only, in bus order: 1 is bus 3d, not an instance */
	assert_ptr_equal(plugin_task_device(mig_node, 4, "1", 0), &mig_node[3]);
	/* index 0 is the GPU in MIG mode: which instance is unknown, so no answer */
	assert_null(plugin_task_device(mig_node, 4, "0", 0));
	assert_null(plugin_task_device(mig_node, 4, NULL, 0));
	/* the fallback "all alike" does not answer with a GPU in MIG mode either */
	assert_null(plugin_task_device(mig_node, 1, "5", 0));
	/* Nine A100s in MIG mode with seven instances each, then an H100: 73 entries (more than
	 * the 64 this once read). Index 9 is the H100, by bus; index 3 a GPU in MIG mode. */
	struct topo_nvml_device big[73];
	for (unsigned g = 0; g < 9; g++) {
		big[8 * g] = (struct topo_nvml_device)DEV("NVIDIA A100-SXM4-80GB", "", "", 80 * GIB, true,
							  false);
		snprintf(big[8 * g].uuid, sizeof big[8 * g].uuid, "GPU-%u", g);
		snprintf(big[8 * g].bus, sizeof big[8 * g].bus, "0000:%02x:00.0", 0x10 + g);
		for (unsigned k = 1; k < 8; k++) {
			big[8 * g + k] = big[8 * g];
			big[8 * g + k].mig_enabled = false, big[8 * g + k].mig = true;
			big[8 * g + k].mem_bytes = 9856ull << 20;
			snprintf(big[8 * g + k].uuid, sizeof big[8 * g + k].uuid, "MIG-%u-%u", g, k);
		}
	}
	big[72] = (struct topo_nvml_device)DEV("NVIDIA H100 80GB HBM3", "GPU-h", "0000:f0:00.0", 80 * GIB,
					       false, false);
	assert_ptr_equal(plugin_task_device(big, 73, "9", 0), &big[72]);
	assert_ptr_equal(plugin_task_device(big, 73, "0,9", 1), &big[72]);
	assert_null(plugin_task_device(big, 73, "3", 0));
	assert_ptr_equal(plugin_task_device(big, 73, "MIG-8-7", 0), &big[71]);
	assert_null(plugin_task_device(big, 73, "10", 0));
	/* the instance's memory is the one checked */
	char mismatch[512], fail[512];
	struct plugin_stage_peak a100 = { "a100-40gb", 15360 }; /* 15 GiB */
	assert_int_equal(
		plugin_gpu_check(&a100, 0, &mig_node[2], "n", mismatch, sizeof mismatch, fail, sizeof fail),
		-1);
	assert_non_null(strstr(fail, "NVIDIA A100-SXM4-40GB MIG 2g.10gb on n has 9.6 GiB"));
}

static void verdict_names_both_and_fails_on_memory(void **state)
{
	(void)state;
	char mismatch[512], fail[512];
	struct plugin_stage_peak h100 = { "h100", 61440 }; /* 60 GiB */
	struct topo_nvml_device small = DEV("NVIDIA T4", "GPU-1", "0000:1b:00.0", 16 * GIB, false, false);
	assert_int_equal(
		plugin_gpu_check(&h100, 1, &small, "node7", mismatch, sizeof mismatch, fail, sizeof fail),
		-1);
	assert_non_null(strstr(fail, "NVIDIA T4 on node7 has 16.0 GiB but pipeline stage 1 needs 60.0 GiB"));
	assert_non_null(strstr(fail, "estimated for h100"));
	assert_non_null(strstr(mismatch, "node7 has NVIDIA T4 (not in llmp's table, 16.0 GiB)"));
	assert_non_null(strstr(mismatch, "estimated for h100"));
	/* an H200 where an H100 was assumed: a line, no failure */
	struct topo_nvml_device big = DEV("NVIDIA H200", "GPU-2", "0000:1b:00.0", 143771ull << 20, false,
					  false);
	assert_int_equal(plugin_gpu_check(&h100, 0, &big, "n", mismatch, sizeof mismatch, fail, sizeof fail),
			 0);
	assert_non_null(strstr(mismatch, "n has NVIDIA H200 (h200, 140.4 GiB)"));
	assert_string_equal(fail, "");
	/* the same GPU: silence; exactly the peak still fits */
	struct topo_nvml_device same = DEV("NVIDIA H100 80GB HBM3", "GPU-3", "0000:1b:00.0", 61440ull << 20,
					   false, false);
	assert_int_equal(plugin_gpu_check(&h100, 0, &same, "n", mismatch, sizeof mismatch, fail, sizeof fail),
			 0);
	assert_string_equal(mismatch, "");
	same.mem_bytes -= 1;
	assert_int_equal(plugin_gpu_check(&h100, 0, &same, "n", mismatch, sizeof mismatch, fail, sizeof fail),
			 -1);
	/* a custom GPU has no NVML name: memory only */
	struct plugin_stage_peak custom = { "custom", 1024 };
	assert_int_equal(
		plugin_gpu_check(&custom, 0, &small, "n", mismatch, sizeof mismatch, fail, sizeof fail), 0);
	assert_string_equal(mismatch, "");
	/* memory NVML does not report: names only */
	small.mem_bytes = 0;
	assert_int_equal(
		plugin_gpu_check(&h100, 0, &small, "n", mismatch, sizeof mismatch, fail, sizeof fail), 0);
}

/*
 * srun's side: the peaks handed to the step. The model of
 * test_plugin_model.c without the distributed optimizer, tp=1,pp=2 on 2
 * GPUs: 4 layers of 4 h^2 + 2 h ffn = 201.3M and 2 x 32000 h = 262.1M of
 * embedding and output, 1067.5M parameters at 18 bytes each, 18326 MiB
 * of weights, gradients and optimizer states, each on one stage only. The
 * two stages' peaks sum to that and their activations and allowance: more.
 */
static void srun_hands_each_stage_s_peak(void **state)
{
	(void)state;
	struct plugin_site site;
	char msg[1024];
	llmp_spec spec;
	assert_int_equal(plugin_site_parse(&site, 0, NULL, msg, sizeof msg), 0);
	assert_int_equal(llmp_spec_parse("tp=1,pp=2", &spec, NULL, 0), LLMP_OK);
	struct plugin_model_request rq = {
		.model = "layers=4,hidden=4096,heads=32,seq=2048,vocab=32000,ffn=16384,distopt=0",
		.model_source = "--llm-model",
		.gpu = "h200",
		.gpu_source = "LLMP_GPU",
		.spec = &spec,
		.world = 2,
	};
	static struct plugin_model_answer a;
	assert_int_equal(plugin_model_decide(&site, &rq, &a, msg, sizeof msg), 0);
	struct plugin_stage_peak p[2];
	if (plugin_peaks_parse(a.peaks, 2, p, msg, sizeof msg) < 0)
		fail_msg("'%s': %s", a.peaks, msg);
	assert_string_equal(p[0].gpu, "h200");
	assert_string_equal(p[1].gpu, "h200");
	uint64_t static_mib = (uint64_t)(1067.5e6 * 18 / (1024.0 * 1024.0));
	assert_true((uint64_t)p[0].mib + p[1].mib > static_mib);
	assert_true((uint64_t)p[0].mib + p[1].mib < 140 * 1024); /* it fits an h200 */
	/* not decided: nothing for the step */
	rq.model = NULL;
	memset(&a, 0, sizeof a);
	assert_int_equal(plugin_model_decide(&site, &rq, &a, msg, sizeof msg), 0);
	assert_string_equal(a.peaks, "");
}

/* Owners as a fake /proc: 100 is ours (uid 1001), 200 another user's (1002), the rest unseen. */
static uid_t fake_owner(unsigned pid)
{
	return pid == 100 ? 1001 : pid == 200 ? 1002 : (uid_t)-1;
}

static void another_process_on_the_gpu_fails(void **state)
{
	struct topo_nvml_device d = { .name = "NVIDIA H100 80GB HBM3",
				      .uuid = "GPU-aa",
				      .bus = "0000:1b:00.0" };
	char fail[1024];
	(void)state;
	/* NVML could not say: nothing to judge. */
	assert_int_equal(plugin_gpu_busy(&d, 1001, fake_owner, "node1", fail, sizeof fail), 0);
	assert_string_equal(fail, "");
	/* Nothing on it, or only the user's own: it runs. */
	d.procs_known = true;
	assert_int_equal(plugin_gpu_busy(&d, 1001, fake_owner, "node1", fail, sizeof fail), 0);
	d.nprocs = 1;
	d.procs[0].pid = 100;
	d.procs[0].used_bytes = 512ull << 20;
	assert_int_equal(plugin_gpu_busy(&d, 1001, fake_owner, "node1", fail, sizeof fail), 0);
	/* Another user's process, and one /proc does not show (a context of a process gone). */
	d.nprocs = 3;
	d.procs[1].pid = 200;
	d.procs[1].used_bytes = 812ull << 20;
	d.procs[2].pid = 300;
	assert_int_equal(plugin_gpu_busy(&d, 1001, fake_owner, "node1", fail, sizeof fail), -1);
	assert_string_equal(
		fail, "GPU GPU-aa on node1 already runs 2 processes of another user or job: pid 200 of "
		      "uid 1002 (812 MiB), pid 300, not visible on this node: left behind by an earlier "
		      "job, or a GPU shared against Slurm's binding; this task would share its memory and "
		      "time. The node needs cleaning (its administrator can drain it)");
	/* More than NVML's list kept: those not kept count as another's; no UUID: the bus. */
	d.uuid[0] = '\0';
	d.nprocs = TOPO_NVML_PROCS_MAX + 2;
	for (unsigned i = 0; i < TOPO_NVML_PROCS_MAX; i++)
		d.procs[i].pid = 100;
	assert_int_equal(plugin_gpu_busy(&d, 1001, fake_owner, "node1", fail, sizeof fail), -1);
	assert_non_null(strstr(
		fail, "GPU 0000:1b:00.0 on node1 already runs 2 processes of another user or job: left"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(peaks_are_parsed),
		cmocka_unit_test(nvml_names_map_to_ours),
		cmocka_unit_test(the_task_s_gpu_is_found),
		cmocka_unit_test(a_mig_instance_is_found_by_its_uuid),
		cmocka_unit_test(verdict_names_both_and_fails_on_memory),
		cmocka_unit_test(srun_hands_each_stage_s_peak),
		cmocka_unit_test(another_process_on_the_gpu_fails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* gpu_desc.c - GPUs by name or by their numbers (gpu_desc.h). */
#define _POSIX_C_SOURCE 200809L
#include "gpu_desc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/fail.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/*
 * Memory as the device reports it; dense bf16 peak from the vendor's data
 * sheet; efficiency: the share of that peak the GEMMs of a large
 * transformer layer reach (not MFU: the bubble and exposed communication
 * are modelled apart); HBM: the data sheet's memory bandwidth. A100 0.73:
 * fitted by bench/bench_validate.c on Korthikanti et al.'s 175B run (13.75 s
 * a step; bench/data/), Megatron-LM's; the same run put 0.68 before the
 * step model timed the elementwise kernels apart. The others
 * are stated assumptions, not fitted: H100/H200/H800 0.50 (Llama 3 reports
 * 38-43% MFU end to end), Blackwell 0.45, PCIe cards 0.45, MI300X 0.40.
 */
/* A table row: what the data sheet gives; no per-layer time or allowance of a software stack. */
#define GPU(n, mem, flops, eff, hbm, nvlink, net, dom)                                                \
	{                                                                                             \
		.name = n, .mem_bytes = mem, .bf16_flops = flops, .efficiency = eff, .hbm_gbps = hbm, \
		.nvlink_gbps = nvlink, .net_gbps = net, .domain = dom                                 \
	}
static const struct gpu_desc gpus[] = {
	/* name     memory   bf16 dense   eff   HBM GB/s  NVLink GB/s  net GB/s  domain */
	GPU("a100-40gb", 40 * GIB, 312e12, 0.73, 1555, 300, 25,
	    8),                                                  /* A100 data sheet; HDR 200 Gb/s per GPU */
	GPU("a100", 80 * GIB, 312e12, 0.73, 2039, 300, 25, 8),   /* A100 80GB SXM */
	GPU("h100", 79.6 * GIB, 989e12, 0.50, 3350, 450, 50, 8), /* H100 SXM: 81559 MiB, NDR 400 Gb/s */
	GPU("h100-pcie", 79.6 * GIB, 756e12, 0.50, 2000, 48, 50, 8), /* H100 PCIe, Gen5 */
	GPU("h800", 79.6 * GIB, 989e12, 0.50, 3350, 200, 50,
	    8), /* H800 SXM: H100 with NVLink at 400 GB/s both ways */
	GPU("h200", 140.4 * GIB, 989e12, 0.50, 4800, 450, 50, 8),     /* H200 SXM: 141 GB */
	GPU("b200", 179.1 * GIB, 2250e12, 0.45, 8000, 900, 50, 8),    /* DGX B200: 1440 GB / 8 */
	GPU("gb200", 184.0 * GIB, 2500e12, 0.45, 8000, 900, 100, 72), /* GB200 NVL72: 180 PF bf16 / 72 */
	GPU("l4", 22.5 * GIB, 121e12, 0.45, 300, 24, 12.5, 8),        /* L4: 242 TF with sparsity */
	GPU("a10", 22.2 * GIB, 125e12, 0.45, 600, 24, 12.5, 8),       /* A10 */
	GPU("rtx4090", 24 * GIB, 165e12, 0.45, 1008, 24, 12.5,
	    8), /* Ada whitepaper: 165 TF bf16, fp32 accumulate */
	GPU("mi300x", 192 * GIB, 1307e12, 0.40, 5300, 448, 50, 8), /* MI300X data sheet; Infinity Fabric */
};
#define NGPUS (sizeof gpus / sizeof gpus[0])

const char *gpu_desc_names(void)
{
	return "a100-40gb, a100 (a100-80gb), h100, h100-pcie, h800, h200, b200, gb200, l4, a10, rtx4090, mi300x";
}

/*
 * NVML's names, as nvmlDeviceGetName returns them (`nvidia-smi -L` and
 * torch.cuda.get_device_name print the same string), each seen in a
 * published log:
 *   "NVIDIA H100 80GB HBM3": a Slurm job's nvidia-smi --query-gpu=name,
 *     huggingface.co/datasets/blorg469/deepfaketar, slurm-1181.out;
 *   "NVIDIA A100-SXM4-80GB": CUDA deviceQuery, gist.github.com/gengwg/
 *     3520df2ebf8872e5ee4818367e3a4122;
 *   "NVIDIA A100-PCIE-40GB": huggingface.co/PrunaAI/mattshumer-Llama-3-
 *     8B-16K-HQQ-4bit-smashed, results.json ("base_current_gpu_type");
 *   "NVIDIA H200": `nvidia-smi --query-gpu=name,memory.total` on an H200
 *     of this project's device machine (2026-11-27): "NVIDIA H200, 143771
 *     MiB"; PyTorch reports the SXM and NVL boards alike by this name;
 *   "NVIDIA A100-SXM4-40GB", "NVIDIA H100 PCIe": nvidia-smi listings
 *     quoted in public test fixtures and benchmark reports.
 * Matched whole, without regard to case. A name not here is reported as
 * NVML gives it and never mapped by a guess (B200, L4, ... until a log
 * is cited).
 */
static const struct {
	const char *nvml, *llmp;
} nvml_names[] = {
	{ "NVIDIA A100-SXM4-40GB", "a100-40gb" }, { "NVIDIA A100-PCIE-40GB", "a100-40gb" },
	{ "NVIDIA A100-SXM4-80GB", "a100" },      { "NVIDIA H100 80GB HBM3", "h100" },
	{ "NVIDIA H100 PCIe", "h100-pcie" },      { "NVIDIA H200", "h200" },
};

const char *gpu_desc_of_nvml(const char *nvml_name)
{
	for (size_t i = 0; nvml_name && i < sizeof nvml_names / sizeof nvml_names[0]; i++)
		if (!strcasecmp(nvml_names[i].nvml, nvml_name))
			return nvml_names[i].llmp;
	return NULL;
}

static bool parse_real(const char *v, double lo, double hi, double *out)
{
	char *end = NULL;
	if (!*v || *v == '-' || *v == '+' || *v == ' ')
		return false;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || *end || !(x >= lo && x <= hi))
		return false;
	*out = x;
	return true;
}

llmp_status gpu_desc_parse(const char *text, struct gpu_desc *g, char *msg, size_t len)
{
	char buf[256], shown[LLMP_SHOW_MAX];
	memset(g, 0, sizeof *g);
	if (!text || !*text)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--gpu: empty");
	if (strlen(text) >= sizeof buf)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--gpu: longer than %zu characters", sizeof buf - 1);
	snprintf(buf, sizeof buf, "%s", text);
	char *save = NULL;
	bool first = true;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save), first = false) {
		char *eq = strchr(item, '=');
		if (!eq) {
			const char *name = !strcmp(item, "a100-80gb") ? "a100" : item;
			size_t i = 0;
			while (i < NGPUS && strcmp(gpus[i].name, name) != 0)
				i++;
			if (!first || i == NGPUS)
				return llmp_fail(LLMP_ERR_ARG, msg, len,
						 "--gpu: unknown GPU '%s' (%s; or mem=GiB,tflops=N)",
						 llmp_show(shown, item, strlen(item)), gpu_desc_names());
			*g = gpus[i];
			continue;
		}
		*eq = '\0';
		const char *v = eq + 1;
		double x = 0; /* each key's value, 0 when parse_real refuses it */
		bool ok;
		if (!strcmp(item, "mem")) {
			ok = parse_real(v, 0.5, 65536, &x);
			g->mem_bytes = x * GIB;
		} else if (!strcmp(item, "tflops")) {
			ok = parse_real(v, 0.1, 1e6, &x);
			g->bf16_flops = x * 1e12;
		} else if (!strcmp(item, "eff")) {
			ok = parse_real(v, 0.01, 1, &g->efficiency);
		} else if (!strcmp(item, "hbm")) {
			ok = parse_real(v, 1, 1e6, &g->hbm_gbps);
		} else if (!strcmp(item, "layer-ms")) {
			ok = parse_real(v, 0, 1000, &x);
			g->layer_overhead_s = x / 1e3;
		} else if (!strcmp(item, "nvlink")) {
			ok = parse_real(v, 0.1, 1e5, &g->nvlink_gbps);
		} else if (!strcmp(item, "net")) {
			ok = parse_real(v, 0.01, 1e5, &g->net_gbps);
		} else if (!strcmp(item, "alloc-gib")) {
			ok = parse_real(v, 0, 1024, &x);
			g->alloc_fixed_bytes = x * GIB, g->alloc_fixed_given = true;
		} else if (!strcmp(item, "alloc")) {
			ok = parse_real(v, 0, 1, &g->alloc_share);
			g->alloc_share_given = true;
		} else if (!strcmp(item, "domain")) {
			ok = parse_real(v, 1, 1 << 20, &x) && x == (double)(unsigned)x;
			g->domain = (unsigned)x;
		} else {
			return llmp_fail(
				LLMP_ERR_ARG, msg, len,
				"--gpu: unknown key '%s' (mem, tflops, eff, hbm, layer-ms, nvlink, net, domain, alloc-gib, alloc)",
				llmp_show(shown, item, strlen(item)));
		}
		if (!ok)
			return llmp_fail(LLMP_ERR_ARG, msg, len, "--gpu: %s='%s' is not a number in range",
					 item, llmp_show(shown, v, strlen(v)));
	}
	if (!g->mem_bytes || !g->bf16_flops)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--gpu: %s= is missing (or name a GPU: %s)",
				 !g->mem_bytes ? "mem" : "tflops", gpu_desc_names());
	if (!g->name[0])
		snprintf(g->name, sizeof g->name, "custom");
	if (!g->efficiency)
		g->efficiency = 0.5;
	if (!g->hbm_gbps) /* 200 FLOP a byte: between the A100's 153 and the H100's 295 */
		g->hbm_gbps = g->bf16_flops / 200 / 1e9;
	if (!g->nvlink_gbps)
		g->nvlink_gbps = 24; /* PCIe Gen4 x16, as cost.h */
	if (!g->net_gbps)
		g->net_gbps = 25;
	if (!g->domain)
		g->domain = 8;
	return LLMP_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_desc.h - a GPU as the machine model knows it: memory, dense bf16 peak,
 * the share of that peak a transformer's GEMMs reach, and its links. A
 * `--gpu` text or a topology file's node type names one; the step model
 * (planner/step_model.h) reads it. Not installed.
 */
#ifndef LLMP_GPU_DESC_H
#define LLMP_GPU_DESC_H

#include <stdbool.h>
#include <stddef.h>

#include <llmp/llmp_status.h>

struct gpu_desc {
	char name[32];
	double mem_bytes;   /* what the device reports, e.g. 80 GiB */
	double bf16_flops;  /* dense peak, FLOP/s */
	double efficiency;  /* the share of the peak a large GEMM-bound layer achieves */
	double hbm_gbps;    /* device memory bandwidth, GB/s: the elementwise kernels' rate */
	double nvlink_gbps; /* per GPU and direction inside the NVLink domain (PCIe when none) */
	double net_gbps;    /* per GPU and direction across nodes */
	unsigned domain;    /* GPUs in one NVLink domain (a node, or an NVL72 rack) */
	/* The training framework's own time a layer and micro-batch, forward and backward
	 * (kernel launches, Python): a software stack's, 0 unless layer-ms= says it. */
	double layer_overhead_s;
	/* The memory allowance of a site's software stack (the CUDA context, NCCL's
	 * buffers, the allocator), as llmp calibrate fits it from the site's own peaks:
	 * a fixed part (alloc-gib=) and a share of the modelled bytes (alloc=, used
	 * where the model gives no overhead=). Unset: the step model's defaults. */
	bool alloc_fixed_given, alloc_share_given;
	double alloc_fixed_bytes, alloc_share;
};

/*
 * "--gpu" text: a name ("h100", "a100-40gb", ...) optionally followed by
 * keys that replace its values, or keys alone: mem=GiB,tflops=N
 * [,eff=F,hbm=GB/s,layer-ms=MS,nvlink=GB/s,net=GB/s,domain=N,alloc-gib=GiB,alloc=F].
 */
llmp_status gpu_desc_parse(const char *text, struct gpu_desc *g, char *msg, size_t len);
const char *gpu_desc_names(void);

/*
 * llmp's name for the GPU NVML calls nvml_name (nvmlDeviceGetName, what
 * `nvidia-smi -L` prints: "NVIDIA H100 80GB HBM3" -> "h100"); NULL when
 * the table does not know it.
 */
const char *gpu_desc_of_nvml(const char *nvml_name);

#endif /* LLMP_GPU_DESC_H */

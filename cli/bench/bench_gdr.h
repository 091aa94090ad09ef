/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_gdr.h - `llmp bench --memory device`: what NCCL decided about
 * GPUDirect RDMA on this node, from its INFO log, against llmp's
 * prediction (bench_gdr.c).
 */
#ifndef LLMP_CLI_BENCH_GDR_H
#define LLMP_CLI_BENCH_GDR_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

struct bench_gdr {
	bool on;             /* NCCL's log will hold the lines, at path */
	bool ours;           /* llmp bench named the file: removed after reading */
	char path[PATH_MAX]; /* NCCL_DEBUG_FILE as NCCL expands it in this process */
	char why_not[256];   /* when !on */
};

/* Before NCCL loads: have it log its HCA lines to a file of this process, unless the user chose otherwise. */
void bench_gdr_prepare(struct bench_gdr *g);

/* After the communicators are up: the comparison as "# gdr ..." lines to out when print; the file removed if ours. */
void bench_gdr_report(struct bench_gdr *g, bool print, FILE *out);

#endif /* LLMP_CLI_BENCH_GDR_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_check.c - the device path seen from a program, through the public
 * API only (llmp_device.h): run under srun --mpi=pmix by tests/device.bats.
 *
 *   dev_check [--connect] [--timeout S]
 *
 * Each rank prints, after llmp_init:
 *   "rank R: device ENABLED groups G created C fetched F fences N"
 *   "rank R: why-not TEXT"                     (when not enabled)
 * and with --connect, after llmp_device_connect:
 *   "rank R: connect STATUS comms K: MESSAGE"
 * A failed llmp_init prints "rank ?: init STATUS: MESSAGE". The exit
 * status is 0 when every call the rank made returned LLMP_OK, else 1;
 * what a test expects is checked by the test, from these lines.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp.h>
#include <llmp/llmp_device.h>

int main(int argc, char **argv)
{
	bool connect = false;
	llmp_init_opts opts;
	llmp_init_opts_default(&opts);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--connect") == 0)
			connect = true;
		else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
			opts.timeout_s = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: dev_check [--connect] [--timeout S]\n");
			return 2;
		}
	}
	llmp_ctx *ctx = NULL;
	llmp_status st = llmp_init(&opts, &ctx);
	if (st != LLMP_OK) {
		printf("rank ?: init %s: %s\n", llmp_strerror(st), llmp_errmsg(ctx));
		llmp_finalize(ctx);
		return 1;
	}
	uint32_t rank = llmp_rank(ctx);
	llmp_device_info info;
	llmp_stats stats;
	if (llmp_device_get_info(ctx, &info) != LLMP_OK || llmp_get_stats(ctx, &stats) != LLMP_OK) {
		printf("rank %u: llmp_device_get_info or llmp_get_stats failed\n", rank);
		return 1;
	}
	printf("rank %u: device %s groups %u created %u fetched %u fences %u\n", rank,
	       info.enabled ? "on" : "off", info.groups, info.ids_created, info.ids_fetched,
	       stats.init_fences);
	if (!info.enabled)
		printf("rank %u: why-not %s\n", rank, info.why_not);
	int rc = 0;
	if (connect) {
		st = llmp_device_connect(ctx);
		llmp_device_get_info(ctx, &info);
		printf("rank %u: connect %s comms %u: %s\n", rank, st == LLMP_OK ? "ok" : llmp_strerror(st),
		       info.comms, st == LLMP_OK ? "" : llmp_errmsg(ctx));
		rc = st != LLMP_OK;
	}
	fflush(stdout);
	llmp_finalize(ctx);
	return rc;
}

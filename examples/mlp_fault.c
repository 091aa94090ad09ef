/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_fault.c - a hung or crashed rank, on purpose, for the tests.
 *
 * A hang is a rank that stops answering in the middle of training: it sits
 * in pause() in a loop, so the job's stop signals (caught by libllmp, which
 * only sets a flag) wake it and it goes back to sleep. Only the other ranks'
 * timeouts and the launcher's SIGKILL end it, which is what the hang test
 * checks. A crash is abort(), the way a real bug dies, without a core dump
 * to fill the test's disk.
 */
#define _POSIX_C_SOURCE 200809L

#include "mlp_fault.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static void hang(uint32_t rank, uint64_t step)
{
	fprintf(stderr, MLP_PROG ": rank %u: --hang-rank: hanging at step %" PRIu64 " (pid %ld)\n", rank,
		step, (long)getpid());
	fflush(NULL);
	for (;;)
		pause();
}

static void crash(uint32_t rank, uint64_t step)
{
	struct rlimit no_core = { 0, 0 };

	fprintf(stderr, MLP_PROG ": rank %u: --crash-rank: aborting at step %" PRIu64 "\n", rank, step);
	fflush(NULL);
	setrlimit(RLIMIT_CORE, &no_core);
	abort();
}

void mlp_fault_maybe(const mlp_faults *f, uint32_t rank, uint64_t restart, uint64_t step)
{
	if (restart != 0 && !f->always)
		return;
	if (f->hang_rank == rank && f->hang_step == step)
		hang(rank, step);
	if (f->crash_rank == rank && f->crash_step == step)
		crash(rank, step);
}

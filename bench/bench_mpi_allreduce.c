/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_mpi_allreduce.c - the Open MPI baseline of scripts/bench-runtime.sh.
 *
 * Times MPI_Allreduce of `bytes` of float32 (sum) exactly as `llmp bench`
 * times llmp_allreduce: warm-up, a barrier, `iters` calls back to back; the
 * figure is the slowest rank's mean. libllmp never links MPI: this program
 * is built by the script with mpicc, only to compare.
 *
 *     mpirun -np 2 bench_mpi_allreduce BYTES ITERS WARMUP
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	long bytes = argc > 1 ? atol(argv[1]) : 8;
	long iters = argc > 2 ? atol(argv[2]) : 10000;
	long warmup = argc > 3 ? atol(argv[3]) : 1000;
	int count = (int)(bytes / 4), rank;
	float *in = calloc((size_t)count + 1, 4), *out = calloc((size_t)count + 1, 4);

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	for (long i = 0; i < warmup; i++)
		MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	double t = MPI_Wtime();
	for (long i = 0; i < iters; i++)
		MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	t = (MPI_Wtime() - t) / (double)iters;
	double slowest;
	MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("MPI_Allreduce %ld bytes float32 sum: %.2f us (slowest rank's mean of %ld)\n", bytes,
		       slowest * 1e6, iters);
	free(in);
	free(out);
	MPI_Finalize();
	return 0;
}

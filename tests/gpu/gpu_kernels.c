/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_kernels.c - the CUDA kernels (kernels/cuda/kern_cuda.h) run on a GPU
 * and compared with the C kernels they mirror, on the same inputs: the
 * reductions and casts bit for bit, the CRC-32C equal, the attention merge
 * within a few ulp. `make gpu-check` runs it (scripts/gpu-check.sh); it
 * prints one line per check and exits 77, saying why, without a GPU.
 * Passed on lent H200s (doc/benchmarks.md).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "kernels/attn_merge.h"
#include "kernels/crc32c.h"
#include "kernels/cuda/kern_cuda.h"
#include "kernels/half.h"
#include "kernels/reduce.h"

#define N (1u << 20)

static int failures;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	failures += !ok;
}

/* Equal, or both NaN: a sum's or product's NaN payload is the arithmetic unit's (kernels/cuda/README.md). */
static int same(const void *got, const void *want, size_t n, llmp_dtype t)
{
	for (size_t i = 0; i < n; i++) {
		double g = t == LLMP_FLOAT32    ? ((const float *)got)[i]
			   : t == LLMP_BFLOAT16 ? kern_bf16_to_f32(((const uint16_t *)got)[i])
						: kern_f16_to_f32(((const uint16_t *)got)[i]);
		double w = t == LLMP_FLOAT32    ? ((const float *)want)[i]
			   : t == LLMP_BFLOAT16 ? kern_bf16_to_f32(((const uint16_t *)want)[i])
						: kern_f16_to_f32(((const uint16_t *)want)[i]);
		size_t e = llmp_dtype_size(t);
		if (!(isnan(g) && isnan(w)) &&
		    memcmp((const char *)got + i * e, (const char *)want + i * e, e) != 0)
			return 0;
	}
	return 1;
}

static void *dev_copy(const void *host, size_t bytes)
{
	void *d = NULL;
	if (cudaMalloc(&d, bytes) != cudaSuccess ||
	    cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
		fprintf(stderr, "gpu_kernels: cannot copy %zu bytes to the GPU\n", bytes);
		exit(1);
	}
	return d;
}

static void host_copy(void *host, const void *dev, size_t bytes)
{
	if (cudaDeviceSynchronize() != cudaSuccess ||
	    cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
		fprintf(stderr, "gpu_kernels: cannot copy %zu bytes back\n", bytes);
		exit(1);
	}
}

/* 16-bit patterns of every kind, NaN and infinities included, or floats around 1 for fp32. */
static void fill(void *buf, llmp_dtype t, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < N; i++) {
		if (t == LLMP_FLOAT32)
			((float *)buf)[i] = (float)(rand() % 20001 - 10000) / 997.0f;
		else
			((uint16_t *)buf)[i] = (uint16_t)rand();
	}
}

static void reductions(void)
{
	static const llmp_dtype types[] = { LLMP_FLOAT32, LLMP_BFLOAT16, LLMP_FLOAT16 };
	static const llmp_op ops[] = { LLMP_SUM, LLMP_PROD, LLMP_MIN, LLMP_MAX };
	size_t bytes = (size_t)N * 4;
	char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
	for (size_t t = 0; t < 3; t++)
		for (size_t o = 0; o < 4; o++) {
			size_t esize = llmp_dtype_size(types[t]);
			fill(a, types[t], 1);
			fill(b, types[t], 2);
			kern_reduce(want, a, b, N, types[t], ops[o]);
			void *da = dev_copy(a, N * esize), *db = dev_copy(b, N * esize),
			     *dd = dev_copy(a, N * esize);
			int err = 0;
			llmp_status st = kern_cuda_reduce(dd, da, db, N, types[t], ops[o], NULL, &err);
			host_copy(got, dd, N * esize);
			char what[96];
			snprintf(what, sizeof what, "reduce %s %s of %u elements, bit for bit (NaN as NaN)",
				 llmp_dtype_name(types[t]), llmp_op_name(ops[o]), N);
			check(st == LLMP_OK && same(got, want, N, types[t]), what);
			cudaFree(da), cudaFree(db), cudaFree(dd);
		}
	free(a), free(b), free(want), free(got);
}

static void casts(void)
{
	float *f = malloc(N * sizeof *f);
	uint16_t *want = malloc(N * sizeof *want), *got = malloc(N * sizeof *got);
	fill(f, LLMP_FLOAT32, 3);
	for (size_t i = 0; i < N; i++)
		want[i] = kern_f32_to_bf16(f[i]);
	void *df = dev_copy(f, N * sizeof *f), *dh = dev_copy(want, N * sizeof *want);
	int err = 0;
	llmp_status st = kern_cuda_cast(dh, LLMP_BFLOAT16, df, LLMP_FLOAT32, N, NULL, &err);
	host_copy(got, dh, N * sizeof *got);
	check(st == LLMP_OK && memcmp(got, want, N * sizeof *got) == 0,
	      "cast float32 to bfloat16, bit for bit");
	cudaFree(df), cudaFree(dh);
	free(f), free(want), free(got);
}

static void crc(void)
{
	size_t len = (size_t)10 << 20;
	unsigned char *buf = malloc(len);
	srand(4);
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)rand();
	void *d = dev_copy(buf, len);
	uint32_t *dcrc = NULL, got = 0;
	cudaMalloc((void **)&dcrc, sizeof *dcrc);
	int err = 0;
	llmp_status st = kern_cuda_crc32c(dcrc, 0, d, len, KERN_CUDA_CRC32C_SEGMENT, NULL, &err);
	host_copy(&got, dcrc, sizeof got);
	check(st == LLMP_OK && got == kern_crc32c(0, buf, len), "CRC-32C of 10 MiB, equal to the host's");
	cudaFree(d), cudaFree(dcrc);
	free(buf);
}

static void merge(void)
{
	const size_t rows = 4096, dim = 128;
	float *o1 = malloc(rows * dim * 4), *o2 = malloc(rows * dim * 4), *l1 = malloc(rows * 4),
	      *l2 = malloc(rows * 4);
	float *wo = malloc(rows * dim * 4), *wl = malloc(rows * 4), *go = malloc(rows * dim * 4),
	      *gl = malloc(rows * 4);
	srand(5);
	for (size_t i = 0; i < rows * dim; i++)
		o1[i] = (float)rand() / RAND_MAX - 0.5f, o2[i] = (float)rand() / RAND_MAX - 0.5f;
	for (size_t r = 0; r < rows; r++) {
		l1[r] = r % 17 == 0 ? -INFINITY : (float)rand() / RAND_MAX * 20 - 10;
		l2[r] = r % 34 == 0 ? -INFINITY : (float)rand() / RAND_MAX * 20 - 10;
	}
	kern_attn_merge(wo, wl, o1, l1, o2, l2, rows, dim);
	float *d_o = dev_copy(o1, rows * dim * 4), *d_l = dev_copy(l1, rows * 4);
	float *d_o1 = dev_copy(o1, rows * dim * 4), *d_l1 = dev_copy(l1, rows * 4);
	float *d_o2 = dev_copy(o2, rows * dim * 4), *d_l2 = dev_copy(l2, rows * 4);
	int err = 0;
	llmp_status st = kern_cuda_attn_merge(d_o, d_l, d_o1, d_l1, d_o2, d_l2, rows, dim, NULL, &err);
	host_copy(go, d_o, rows * dim * 4);
	host_copy(gl, d_l, rows * 4);
	double worst = 0;
	int same_inf = 1;
	for (size_t r = 0; r < rows; r++) {
		same_inf &= isinf(wl[r]) == isinf(gl[r]);
		if (!isinf(wl[r]))
			worst = fmax(worst, fabs((double)wl[r] - gl[r]));
		for (size_t j = 0; j < dim; j++)
			worst = fmax(worst, fabs((double)wo[r * dim + j] - go[r * dim + j]));
	}
	check(st == LLMP_OK && same_inf && worst < 1e-5,
	      "attention merge of 4096 rows, -inf rows included, within 1e-5");
	cudaFree(d_o), cudaFree(d_l), cudaFree(d_o1), cudaFree(d_l1), cudaFree(d_o2), cudaFree(d_l2);
	free(o1), free(o2), free(l1), free(l2), free(wo), free(wl), free(go), free(gl);
}

int main(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		printf("gpu_kernels: skipped: no GPU (%s)\n",
		       e != cudaSuccess ? cudaGetErrorString(e) : "no device");
		return 77;
	}
	reductions();
	casts();
	crc();
	merge();
	printf("gpu_kernels: %d failed\n", failures);
	return failures ? 1 : 0;
}

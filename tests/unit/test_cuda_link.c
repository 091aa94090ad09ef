/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cuda_link.c - a C program linked with the CUDA kernels' archive
 * (kernels/cuda/libkernels_cuda.a) and the static CUDA runtime, as libllmp
 * will be: it links without libcuda, starts on a machine without a driver,
 * and each entry point of kern_cuda.h refuses bad arguments before touching
 * CUDA and reports a missing driver or device as LLMP_ERR_UNSUPPORTED with
 * the CUDA error. tests/unit/cuda_link_check.sh reads its dynamic section.
 *
 * Where a GPU is present the no-driver cases are skipped: the fake device
 * pointers used here would then really be read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "kernels/cuda/kern_cuda.h"

/* Never dereferenced on the host; on the device only where the test is skipped. */
static float fake[64] __attribute__((aligned(16)));

static void test_arguments_refused_before_cuda(void **state)
{
	(void)state;
	int err = -1;
	const void *srcs[KERN_CUDA_REDUCE_MAX_INPUTS + 1] = { fake, fake, fake, fake, fake,
							      fake, fake, fake, fake };

	assert_int_equal(kern_cuda_reduce(NULL, fake, fake, 4, LLMP_FLOAT32, LLMP_SUM, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(err, 0);
	assert_int_equal(kern_cuda_reduce(fake, fake, fake, 4, (llmp_dtype)99, LLMP_SUM, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(kern_cuda_reduce(fake, fake, fake, 4, LLMP_FLOAT32, (llmp_op)99, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(kern_cuda_reduce(fake + 1, fake, fake, 4, LLMP_FLOAT32, LLMP_SUM, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(kern_cuda_reduce_k(fake, srcs, 0, 4, LLMP_BFLOAT16, LLMP_SUM, 1, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(kern_cuda_reduce_k(fake, srcs, KERN_CUDA_REDUCE_MAX_INPUTS + 1, 4, LLMP_BFLOAT16,
					    LLMP_SUM, 1, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(kern_cuda_reduce_k(fake, srcs, 2, 4, LLMP_FLOAT16, LLMP_AVG, 0, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(kern_cuda_cast(fake, LLMP_BFLOAT16, NULL, LLMP_FLOAT32, 4, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(kern_cuda_cast(fake + 1, LLMP_FLOAT32, fake, LLMP_BFLOAT16, 4, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(kern_cuda_attn_merge(fake, fake, fake, fake, NULL, fake, 2, 2, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(kern_cuda_attn_merge(fake + 1, fake, fake, fake, fake, fake, 2, 2, NULL, &err),
			 LLMP_ERR_ARG);
	assert_int_equal(kern_cuda_crc32c(NULL, 0, fake, 4, 0, NULL, &err), LLMP_ERR_ARG);
	assert_int_equal(err, 0);
	/* Integer types have no device reduction yet. */
	assert_int_equal(kern_cuda_reduce(fake, fake, fake, 4, LLMP_INT32, LLMP_SUM, NULL, &err),
			 LLMP_ERR_UNSUPPORTED);
	assert_int_equal(kern_cuda_cast(fake, LLMP_FLOAT64, fake, LLMP_FLOAT32, 4, NULL, &err),
			 LLMP_ERR_UNSUPPORTED);
	assert_int_equal(err, 0);
	/* Nothing to do is done without CUDA. */
	assert_int_equal(kern_cuda_reduce(fake, fake, fake, 0, LLMP_FLOAT32, LLMP_MAX, NULL, &err), LLMP_OK);
	assert_int_equal(kern_cuda_attn_merge(NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL), LLMP_OK);
}

static void test_no_driver_is_unsupported(void **state)
{
	(void)state;
	int devices = 0;
	cudaError_t probe = cudaGetDeviceCount(&devices);
	print_message("cudaGetDeviceCount: %d (%s)\n", (int)probe, cudaGetErrorName(probe));
	if (probe == cudaSuccess && devices > 0)
		skip(); /* a GPU: these pointers are not device memory */
	if (probe != cudaErrorInsufficientDriver && probe != cudaErrorNoDevice &&
	    probe != cudaErrorStubLibrary)
		skip(); /* a driver that fails otherwise (under ASan, say): not the case tested here */

	const void *srcs[3] = { fake, fake + 16, fake + 32 };
	uint32_t *crc = (uint32_t *)(void *)(fake + 48);
	int err = 0;
	assert_int_equal(kern_cuda_reduce(fake, fake, fake + 16, 16, LLMP_BFLOAT16, LLMP_SUM, NULL, &err),
			 LLMP_ERR_UNSUPPORTED);
	assert_int_not_equal(err, 0);
	err = 0;
	assert_int_equal(kern_cuda_reduce_k(fake, srcs, 3, 16, LLMP_FLOAT32, LLMP_AVG, 3, NULL, &err),
			 LLMP_ERR_UNSUPPORTED);
	assert_int_not_equal(err, 0);
	err = 0;
	assert_int_equal(kern_cuda_cast(fake, LLMP_FLOAT16, fake + 16, LLMP_FLOAT32, 16, NULL, &err),
			 LLMP_ERR_UNSUPPORTED);
	assert_int_not_equal(err, 0);
	err = 0;
	assert_int_equal(
		kern_cuda_attn_merge(fake, fake + 8, fake, fake + 8, fake + 16, fake + 24, 8, 1, NULL, &err),
		LLMP_ERR_UNSUPPORTED);
	assert_int_not_equal(err, 0);
	err = 0;
	assert_int_equal(kern_cuda_crc32c(crc, 0, fake, 64, 16, NULL, &err), LLMP_ERR_UNSUPPORTED);
	assert_int_not_equal(err, 0);
	print_message("kern_cuda_crc32c: CUDA error %d (%s)\n", err, cudaGetErrorName((cudaError_t)err));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arguments_refused_before_cuda),
		cmocka_unit_test(test_no_driver_is_unsupported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * surface_dump.c - the public headers' ABI as the C compiler sees it, for
 * tests/surface/check_python.py to hold the Python mirrors against: one
 * line per fact, "sizeof STRUCT N", "field STRUCT NAME OFFSET SIZE",
 * "value NAME N". It links nothing: the numbers come from the headers.
 */
#include <stddef.h>
#include <stdio.h>

#include <llmp/llmp.h>
#include <llmp/llmp_ckpt.h>
#include <llmp/llmp_job.h>

#define SIZEOF(type) printf("sizeof %s %zu\n", #type, sizeof(type))
#define FIELD(type, name) \
	printf("field %s %s %zu %zu\n", #type, #name, offsetof(type, name), sizeof(((type *)0)->name))
#define VALUE(name) printf("value %s %llu\n", #name, (unsigned long long)(name))

static void structs(void)
{
	SIZEOF(llmp_init_opts);
	FIELD(llmp_init_opts, size);
	FIELD(llmp_init_opts, spec);
	FIELD(llmp_init_opts, timeout_s);
	FIELD(llmp_init_opts, ring_threshold);
	FIELD(llmp_init_opts, shm_threshold);

	SIZEOF(llmp_ckpt_opts);
	FIELD(llmp_ckpt_opts, size);
	FIELD(llmp_ckpt_opts, root);
	FIELD(llmp_ckpt_opts, keep);
	FIELD(llmp_ckpt_opts, alignment);
	FIELD(llmp_ckpt_opts, staging_max);
	FIELD(llmp_ckpt_opts, files);
	FIELD(llmp_ckpt_opts, stripe_count);
	FIELD(llmp_ckpt_opts, stripe_size);
	FIELD(llmp_ckpt_opts, stripe_pool);

	SIZEOF(llmp_ckpt_stats);
	FIELD(llmp_ckpt_stats, size);
	FIELD(llmp_ckpt_stats, step);
	FIELD(llmp_ckpt_stats, staged_bytes);
	FIELD(llmp_ckpt_stats, staging_max);
	FIELD(llmp_ckpt_stats, stall_seconds);
	FIELD(llmp_ckpt_stats, total_seconds);
	FIELD(llmp_ckpt_stats, alignment);
	FIELD(llmp_ckpt_stats, device_bytes);
	FIELD(llmp_ckpt_stats, device_copy_seconds);
	FIELD(llmp_ckpt_stats, device_staging_bytes);
}

static void statuses(void)
{
	VALUE(LLMP_OK);
	VALUE(LLMP_ERR_SPEC);
	VALUE(LLMP_ERR_LAYOUT);
	VALUE(LLMP_ERR_RANGE);
	VALUE(LLMP_ERR_ARG);
	VALUE(LLMP_ERR_NOMEM);
	VALUE(LLMP_ERR_IO);
	VALUE(LLMP_ERR_WIREUP);
	VALUE(LLMP_ERR_MISMATCH);
	VALUE(LLMP_ERR_TRANSPORT);
	VALUE(LLMP_ERR_TIMEOUT);
	VALUE(LLMP_ERR_PEER);
	VALUE(LLMP_ERR_UNSUPPORTED);
	VALUE(LLMP_ERR_STATE);
	VALUE(LLMP_ERR_DEVICE);
}

static void enums(void)
{
	VALUE(LLMP_FLOAT32);
	VALUE(LLMP_FLOAT64);
	VALUE(LLMP_BFLOAT16);
	VALUE(LLMP_FLOAT16);
	VALUE(LLMP_INT32);
	VALUE(LLMP_INT64);
	VALUE(LLMP_UINT8);
	VALUE(LLMP_NDTYPES);
	VALUE(LLMP_SUM);
	VALUE(LLMP_PROD);
	VALUE(LLMP_MIN);
	VALUE(LLMP_MAX);
	VALUE(LLMP_AVG);
	VALUE(LLMP_NOPS);
}

static void constants(void)
{
	VALUE(LLMP_CKPT_MAX_DIMS);
	VALUE(LLMP_CKPT_MAX_NAME);
	VALUE(LLMP_CKPT_NEWEST);
	VALUE(LLMP_CKPT_FILES_RANK);
	VALUE(LLMP_CKPT_FILES_NODE);
	VALUE(LLMP_JOB_CONTINUE);
	VALUE(LLMP_JOB_STOP);
	VALUE(LLMP_EXIT_DONE);
	VALUE(LLMP_EXIT_REQUEUE);
	VALUE(LLMP_EXIT_NO_REQUEUE);
	VALUE(LLMP_VERSION);
}

int main(void)
{
	structs();
	statuses();
	enums();
	constants();
	return 0;
}

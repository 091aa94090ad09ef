/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_api.h - NCCL, loaded with dlopen: the calls libllmp makes, as a table.
 *
 * libllmp is built with nccl.h (its types and NCCL_CONFIG_INITIALIZER) but
 * never linked to libnccl: a node without NCCL or without a GPU loads
 * libllmp and runs the host path. LLMP_NCCL_LIBRARY names another library
 * (a site's build, or the test double in tests/device/); the default is
 * libnccl.so.2 on the loader's path.
 */
#ifndef LLMP_RT_NCCL_API_H
#define LLMP_RT_NCCL_API_H

#include <stddef.h>

#include <nccl.h>

#include <llmp/llmp_status.h>

/* The oldest NCCL whose calls this table relies on (non-blocking init, commName). */
#define RT_NCCL_MIN_VERSION 21900

struct rt_nccl {
	void *lib;
	int version; /* ncclGetVersion's code, e.g. 22809 */
	char path[256];
	ncclResult_t (*get_unique_id)(ncclUniqueId *id);
	ncclResult_t (*comm_init_rank_config)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
					      ncclConfig_t *config);
	ncclResult_t (*comm_get_async_error)(ncclComm_t comm, ncclResult_t *error);
	ncclResult_t (*comm_abort)(ncclComm_t comm);
	ncclResult_t (*comm_finalize)(ncclComm_t comm);
	ncclResult_t (*comm_destroy)(ncclComm_t comm);
	ncclResult_t (*group_start)(void);
	ncclResult_t (*group_end)(void);
	const char *(*get_error_string)(ncclResult_t result);
	const char *(*get_last_error)(ncclComm_t comm);
	ncclResult_t (*all_reduce)(const void *send, void *recv, size_t count, ncclDataType_t type,
				   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*reduce_scatter)(const void *send, void *recv, size_t count, ncclDataType_t type,
				       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*all_gather)(const void *send, void *recv, size_t count, ncclDataType_t type,
				   ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*broadcast)(const void *send, void *recv, size_t count, ncclDataType_t type, int root,
				  ncclComm_t comm, cudaStream_t stream);
	ncclResult_t (*send)(const void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
			     cudaStream_t stream);
	ncclResult_t (*recv)(void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
			     cudaStream_t stream);
};

/*
 * Load NCCL (LLMP_NCCL_LIBRARY, else libnccl.so.2) and every symbol of the
 * table. LLMP_ERR_UNSUPPORTED with msg naming the library and the missing
 * symbol or the version found, when it cannot be used.
 */
llmp_status rt_nccl_load(struct rt_nccl *n, char *msg, size_t len);
void rt_nccl_unload(struct rt_nccl *n);

/* "ncclUnhandledCudaError: <NCCL's last error>", for messages. */
const char *rt_nccl_why(const struct rt_nccl *n, ncclComm_t comm, ncclResult_t result, char *buf, size_t len);

#endif /* LLMP_RT_NCCL_API_H */

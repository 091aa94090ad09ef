/* SPDX-License-Identifier: BSD-3-Clause */
/* nccl_api.c - NCCL loaded with dlopen, its calls resolved into a table. */
#include "nccl_api.h"
#include "dl_table.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include <llmp/llmp_env.h>

llmp_status rt_nccl_load(struct rt_nccl *n, char *msg, size_t len)
{
	static const struct rt_dl_symbol symbols[] = {
		{ "ncclGetUniqueId", offsetof(struct rt_nccl, get_unique_id) },
		{ "ncclCommInitRankConfig", offsetof(struct rt_nccl, comm_init_rank_config) },
		{ "ncclCommGetAsyncError", offsetof(struct rt_nccl, comm_get_async_error) },
		{ "ncclCommAbort", offsetof(struct rt_nccl, comm_abort) },
		{ "ncclCommFinalize", offsetof(struct rt_nccl, comm_finalize) },
		{ "ncclCommDestroy", offsetof(struct rt_nccl, comm_destroy) },
		{ "ncclGroupStart", offsetof(struct rt_nccl, group_start) },
		{ "ncclGroupEnd", offsetof(struct rt_nccl, group_end) },
		{ "ncclGetErrorString", offsetof(struct rt_nccl, get_error_string) },
		{ "ncclGetLastError", offsetof(struct rt_nccl, get_last_error) },
		{ "ncclAllReduce", offsetof(struct rt_nccl, all_reduce) },
		{ "ncclReduceScatter", offsetof(struct rt_nccl, reduce_scatter) },
		{ "ncclAllGather", offsetof(struct rt_nccl, all_gather) },
		{ "ncclBroadcast", offsetof(struct rt_nccl, broadcast) },
		{ "ncclSend", offsetof(struct rt_nccl, send) },
		{ "ncclRecv", offsetof(struct rt_nccl, recv) },
	};
	const char *path = getenv(LLMP_ENV_NCCL_LIBRARY);
	memset(n, 0, sizeof *n);
	snprintf(n->path, sizeof n->path, "%s", path && *path ? path : "libnccl.so.2");
	/* RTLD_LOCAL: NCCL's symbols stay out of the program's namespace. */
	n->lib = dlopen(n->path, RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		const char *why = dlerror();
		return llmp_fail(LLMP_ERR_UNSUPPORTED, msg, len, "cannot load NCCL (%s): %s", n->path,
				 why ? why : "dlopen failed");
	}
	ncclResult_t (*get_version)(int *) = NULL;
	*(void **)&get_version = dlsym(n->lib, "ncclGetVersion");
	if (!get_version || get_version(&n->version) != ncclSuccess || n->version < RT_NCCL_MIN_VERSION) {
		llmp_status st = llmp_fail(LLMP_ERR_UNSUPPORTED, msg, len,
					   "%s is NCCL %d.%d.%d: llmp needs %d.%d or newer", n->path,
					   n->version / 10000, n->version / 100 % 100, n->version % 100,
					   RT_NCCL_MIN_VERSION / 10000, RT_NCCL_MIN_VERSION / 100 % 100);
		rt_nccl_unload(n);
		return st;
	}
	llmp_status st = rt_dl_resolve(n->lib, n->path, symbols, sizeof symbols / sizeof symbols[0], n, msg,
				       len);
	if (st != LLMP_OK)
		rt_nccl_unload(n);
	return st;
}

void rt_nccl_unload(struct rt_nccl *n)
{
	/* NCCL's threads may outlive a communicator: the library stays mapped. */
	memset(n, 0, sizeof *n);
}

const char *rt_nccl_why(const struct rt_nccl *n, ncclComm_t comm, ncclResult_t result, char *buf, size_t len)
{
	const char *last = n->get_last_error ? n->get_last_error(comm) : NULL;
	snprintf(buf, len, "%s%s%s", n->get_error_string ? n->get_error_string(result) : "NCCL error",
		 last && *last ? ": " : "", last ? last : "");
	return buf;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm.h - collectives through a shared-memory segment, for a communicator
 * whose members all run on this machine.
 *
 * UCX carries all other host traffic. Between processes on one machine it
 * moves a large message by a CMA rendezvous (process_vm_readv): a copy at
 * a few GB/s, made before the receiver can reduce it, which held a 2-rank
 * 64 MiB allreduce to a fifth of memcpy bandwidth (doc/benchmarks.md). Here
 * the members share a segment of cache-sized slots instead, as NCCL's and
 * Open MPI's shared-memory paths do. In allreduce each member copies a
 * chunk of its buffer into its slot, reduces its own slice of the chunk
 * straight out of every member's slot, and copies the others' reduced
 * slices back out: each byte of the user's buffers is read once and
 * written once; the rest stays in the caches. Reduce-scatter is the first
 * half of that, allgather the second, broadcast the root's slot copied out.
 *
 * The segment is made on the first call that qualifies (a collective over
 * all members, so all of them take the same path), by a few small UCX
 * messages: member 0 creates it and names it, the others map it and say
 * so, member 0 unlinks the name and gives the verdict. If any member
 * cannot map it (no /dev/shm, not the same mount namespace, out of
 * space), every member falls back to UCX for good, the same everywhere.
 *
 * Waits keep the runtime's failure contract: the timeout on every wait,
 * a member whose process is gone noticed within LIVENESS_PERIOD_S, and
 * failure reports from the other members heard while waiting.
 */
#ifndef LLMP_SHM_H
#define LLMP_SHM_H

#include "coll.h"

/*
 * Whether a collective of `bytes` on comm goes through shared memory: the
 * size is at least ctx->shm_threshold, every member is on this machine,
 * and the segment could be made (made here on first use). A false answer
 * with *st != LLMP_OK is a failure of the setup's messages: comm broke.
 */
bool rt_shm_ready(rt_call *call, size_t bytes, llmp_status *st);

/*
 * The collectives through the segment, once rt_shm_ready said yes (bytes:
 * allreduce's buffer, reduce-scatter's input, allgather's output,
 * broadcast's message). Arguments as the llmp_ calls, checked; allgather
 * and broadcast find this member's data in recvbuf already.
 */
llmp_status rt_shm_allreduce(rt_call *call, const void *sendbuf, void *recvbuf, size_t count);
llmp_status rt_shm_reduce_scatter(rt_call *call, const void *sendbuf, void *recvbuf, size_t count);
llmp_status rt_shm_allgather(rt_call *call, void *recvbuf, size_t count);
llmp_status rt_shm_broadcast(rt_call *call, void *recvbuf, size_t count, uint32_t root);

/* Unmap comm's segment, if it has one (comm->shm_free: rt_comm_free calls it). */
void rt_shm_free(llmp_comm *comm);

#endif /* LLMP_SHM_H */

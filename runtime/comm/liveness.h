/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * liveness.h - is a peer on this machine still running?
 *
 * UCX notices a dead peer only with its "peer" error-handling mode, and in
 * UCX 1.13 that mode rules out the shared-memory transports, so traffic to
 * a process on the same machine would fall back to TCP. Peers that share
 * this kernel are therefore reached without it (shared memory, CMA), and
 * watched here instead: while a wait is stuck on such a peer, its process
 * is looked up now and then, and one that is gone (or a zombie) fails the
 * wait at once rather than at the timeout.
 *
 * "Same machine" means the same kernel boot and the same PID namespace,
 * which is also when UCX uses shared memory and a pid means the same process.
 */
#ifndef LLMP_LIVENESS_H
#define LLMP_LIVENESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* "BOOT-ID:PIDNS": who else can see this process by its pid. */
void rt_machine_id(char *buf, size_t len);

/* This process, as published to peers: "BOOT-ID:PIDNS:PID". */
void rt_process_id(char *buf, size_t len);

/*
 * From a peer's process id and ours: true and *pid when the peer runs on
 * this machine (the same machine id).
 */
bool rt_same_machine(const char *peer_id, const char *machine_id, pid_t *pid);

/* Whether pid is a running process (not gone, not a zombie). */
bool rt_pid_alive(pid_t pid);

#endif /* LLMP_LIVENESS_H */

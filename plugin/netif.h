/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netif.h - which network interface a task's bootstrap sockets should use.
 *
 * gloo and NCCL pick their socket interface from the address the host name
 * resolves to; where that is loopback (Debian's 127.0.1.1 line, the test
 * cluster) a PyTorch job hangs in its rendezvous. The plugin sets
 * GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME, when the user has not, to the
 * interface this node uses to reach the node srun was started from: the
 * network Slurm itself reaches the job through.
 */
#ifndef LLMP_NETIF_H
#define LLMP_NETIF_H

#include <stddef.h>
#include <sys/socket.h>

struct ifaddrs;

/*
 * The name of the interface in list that holds address addr (IPv4 or
 * IPv6). Returns 0, or -1 when none does, or when it is a loopback
 * interface (no peer can reach a task there).
 */
int plugin_ifname_of(const struct ifaddrs *list, const struct sockaddr *addr, char *name, size_t len);

/*
 * The interface this node would send from to reach host (a numeric
 * address or a name): the kernel's route, found by connecting a UDP
 * socket, which sends nothing. Returns 0, or -1 when there is none to use.
 */
int plugin_route_ifname(const char *host, char *name, size_t len);

/*
 * This node's numeric address on that route (what a serving engine should
 * announce to its peers, serve.h). Returns 0, or -1 when there is none.
 */
int plugin_route_addr(const char *host, char *addr, size_t len);

/*
 * Whether a TCP port of this node is held already (bound by another
 * process, of any user): a bind to it on every address fails with
 * EADDRINUSE. Returns 1 when held, 0 when free, -1 when it cannot tell.
 */
int plugin_port_held(unsigned port);

#endif /* LLMP_NETIF_H */

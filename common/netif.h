/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netif.h - this node's network seen from a socket: the interface and the
 * address it would send from toward a host, and whether a TCP port is
 * held already. Shared by the plugin (GLOO_SOCKET_IFNAME and
 * NCCL_SOCKET_IFNAME set toward the node srun ran on, the master port
 * tried) and `llmp serve` (the interfaces it is told to use checked
 * against the route to the head, the ports of its block tried).
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
int netif_ifname_of(const struct ifaddrs *list, const struct sockaddr *addr, char *name, size_t len);

/*
 * The interface this node would send from to reach host (a numeric
 * address or a name, each of its addresses tried in turn): the kernel's
 * route, found by connecting a UDP socket, which sends nothing. Returns 0,
 * or -1 when there is none to use (netif_ifname_of).
 */
int netif_route_ifname(const char *host, char *name, size_t len);

/*
 * This node's numeric address on that route (what a serving engine should
 * announce to its peers). Returns 0, or -1 when there is none.
 */
int netif_route_addr(const char *host, char *addr, size_t len);

/*
 * Whether a TCP port of this node is held already (bound by another
 * process, of any user): a bind to it on every address, IPv6 and IPv4,
 * fails with EADDRINUSE. Returns 1 when held, 0 when free, -1 when it
 * cannot tell.
 */
int netif_port_held(unsigned port);

#endif /* LLMP_NETIF_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * serve_nic.h - the interfaces a serving step's traffic is told to use
 * (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME, TP_SOCKET_IFNAME), checked on
 * the node before `llmp serve` starts the engine.
 */
#ifndef LLMP_CLI_SERVE_NIC_H
#define LLMP_CLI_SERVE_NIC_H

#include <stddef.h>

/*
 * Every interface those variables name (a comma list; NCCL's names are
 * prefixes unless the list starts with '=', and a list starting with '^'
 * excludes, so is not checked) must be up on this node with an IPv4
 * address: -1 and why in msg when one is not. Off the head (head != NULL),
 * a route to the head leaving through an interface that GLOO_SOCKET_IFNAME
 * does not name gives 1 and the warning in msg. 0 when all is well.
 */
int serve_check_nics(const char *head, char *msg, size_t len);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* netif.c - the interface and address toward a host, whether a port is held (netif.h). */
#define _GNU_SOURCE
#include "netif.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool same_address(const struct sockaddr *a, const struct sockaddr *b)
{
	if (!a || !b || a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
	return false;
}

int netif_ifname_of(const struct ifaddrs *list, const struct sockaddr *addr, char *name, size_t len)
{
	for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
		if (!i->ifa_name || !same_address(i->ifa_addr, addr))
			continue;
		if ((i->ifa_flags & IFF_LOOPBACK) || strlen(i->ifa_name) >= len)
			return -1;
		snprintf(name, len, "%s", i->ifa_name);
		return 0;
	}
	return -1;
}

/*
 * For each address of host in turn, the local address the kernel would send
 * from toward it (a UDP socket connected, which sends nothing), given to
 * use until use returns 0; 0 then, or -1 when host does not resolve or no
 * address served.
 */
static int route_source(const char *host, int (*use)(const struct sockaddr *local, socklen_t n, void *arg),
			void *arg)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res = NULL;
	int rc = -1;
	if (!host || !*host || getaddrinfo(host, "9", &hints, &res) != 0)
		return -1;
	for (struct addrinfo *a = res; a && rc < 0; a = a->ai_next) {
		struct sockaddr_storage local;
		socklen_t n = sizeof local;
		int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
		    getsockname(fd, (struct sockaddr *)&local, &n) == 0)
			rc = use((struct sockaddr *)&local, n, arg);
		close(fd);
	}
	freeaddrinfo(res);
	return rc;
}

struct out {
	char *buf;
	size_t len;
};

static int ifname_of_local(const struct sockaddr *local, socklen_t n, void *arg)
{
	struct out *o = arg;
	struct ifaddrs *list = NULL;
	(void)n;
	if (getifaddrs(&list) != 0)
		return -1;
	int rc = netif_ifname_of(list, local, o->buf, o->len);
	freeifaddrs(list);
	return rc;
}

static int numeric_local(const struct sockaddr *local, socklen_t n, void *arg)
{
	struct out *o = arg;
	return getnameinfo(local, n, o->buf, (socklen_t)o->len, NULL, 0, NI_NUMERICHOST) == 0 ? 0 : -1;
}

int netif_route_ifname(const char *host, char *name, size_t len)
{
	struct out o = { name, len };
	return route_source(host, ifname_of_local, &o);
}

int netif_route_addr(const char *host, char *addr, size_t len)
{
	struct out o = { addr, len };
	return route_source(host, numeric_local, &o);
}

/* Bind a socket of family to every address at port, as a TCP server would: 1 taken, 0 free, -1 unknown. */
static int bind_probe(int family, unsigned port)
{
	struct sockaddr_storage sa = { 0 };
	socklen_t n;
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&sa;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_any;
		a->sin6_port = htons((uint16_t)port);
		n = sizeof *a;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&sa;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_ANY);
		a->sin_port = htons((uint16_t)port);
		n = sizeof *a;
	}
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, rc = -1;
	if (fd < 0)
		return -1;
	/* As servers bind (PyTorch's TCPStore, uvicorn): a connection in TIME_WAIT is no holder. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0)
		rc = bind(fd, (struct sockaddr *)&sa, n) == 0 ? 0 : errno == EADDRINUSE ? 1 : -1;
	close(fd);
	return rc;
}

int netif_port_held(unsigned port)
{
	if (port == 0 || port > 65535)
		return -1;
	int v6 = bind_probe(AF_INET6, port), v4 = bind_probe(AF_INET, port);
	if (v6 == 1 || v4 == 1)
		return 1;
	return v6 == 0 || v4 == 0 ? 0 : -1;
}

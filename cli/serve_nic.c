/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * serve_nic.c - the interfaces a serving step's traffic is told to use,
 * checked before the engine starts (serve_nic.h). A name that is not an
 * interface of the node, or one that is down, is what makes gloo or NCCL
 * wait for peers that never come (a rendezvous timeout, 30 minutes by
 * default in torch.distributed): said now instead, naming it.
 */
#define _GNU_SOURCE
#include "serve_nic.h"

#include "common/fail.h"
#include "common/netif.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Whether an interface called name (or starting with it, when prefix) is up with an IPv4 address. */
static bool interface_up(const struct ifaddrs *list, const char *name, size_t n, bool prefix)
{
	for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
		if (!i->ifa_name || !i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    !(i->ifa_flags & IFF_UP))
			continue;
		if (strncmp(i->ifa_name, name, n) == 0 && (prefix || i->ifa_name[n] == '\0'))
			return true;
	}
	return false;
}

/* The node's interfaces with an IPv4 address, for the message: "eth0, lo". */
static void interface_names(const struct ifaddrs *list, char *out, size_t len)
{
	size_t used = 0;
	out[0] = '\0';
	for (const struct ifaddrs *i = list; i && used < len; i = i->ifa_next) {
		if (!i->ifa_name || !i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		int w = snprintf(out + used, len - used, "%s%s", used ? ", " : "", i->ifa_name);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (!out[0])
		snprintf(out, len, "none");
}

/* The first name of a comma list (value) that is not up here; 0 when all are. */
static int check_list(const struct ifaddrs *list, const char *var, const char *value, bool nccl, char *msg,
		      size_t len)
{
	bool prefix = nccl;
	if (nccl && value[0] == '^')
		return 0; /* an exclusion: NCCL picks among the rest */
	if (nccl && value[0] == '=') {
		prefix = false;
		value++;
	}
	for (const char *p = value; *p;) {
		size_t n = strcspn(p, ",");
		if (n && !interface_up(list, p, n, prefix)) {
			char names[256], shown_value[LLMP_SHOW_MAX], shown_name[LLMP_SHOW_MAX];
			interface_names(list, names, sizeof names);
			snprintf(msg, len,
				 "%s=%s: no interface %s%s is up with an IPv4 address on this node "
				 "(it has: %s); the engine's processes would wait for peers that "
				 "never reach them",
				 var, llmp_show(shown_value, value, strlen(value)),
				 prefix ? "starting with " : "", llmp_show(shown_name, p, n), names);
			return -1;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* Whether name is one of a comma list. */
static bool in_list(const char *list, const char *name)
{
	size_t len = strlen(name);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		if (n == len && strncmp(p, name, n) == 0)
			return true;
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

int serve_check_nics(const char *head, char *msg, size_t len)
{
	static const struct {
		const char *var;
		bool nccl;
	} vars[] = { { "GLOO_SOCKET_IFNAME", false },
		     { "TP_SOCKET_IFNAME", false },
		     { "NCCL_SOCKET_IFNAME", true } };
	struct ifaddrs *list = NULL;
	int rc = 0;

	msg[0] = '\0';
	if (getifaddrs(&list) != 0)
		return 0; /* nothing to check against: the engine will say */
	for (size_t v = 0; v < sizeof vars / sizeof vars[0] && rc == 0; v++) {
		const char *value = getenv(vars[v].var);
		if (value && *value)
			rc = check_list(list, vars[v].var, value, vars[v].nccl, msg, len);
	}
	const char *gloo = getenv("GLOO_SOCKET_IFNAME");
	char via[IF_NAMESIZE + 1];
	if (rc == 0 && head && gloo && *gloo && netif_route_ifname(head, via, sizeof via) == 0 &&
	    !in_list(gloo, via)) {
		char shown_head[LLMP_SHOW_MAX], shown_gloo[LLMP_SHOW_MAX];
		snprintf(msg, len,
			 "the head %s is reached through %s, which GLOO_SOCKET_IFNAME=%s does not name: if "
			 "the engine waits at its rendezvous, this is why",
			 llmp_show(shown_head, head, strlen(head)), via,
			 llmp_show(shown_gloo, gloo, strlen(gloo)));
		rc = 1;
	}
	freeifaddrs(list);
	return rc;
}

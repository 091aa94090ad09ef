/* SPDX-License-Identifier: BSD-3-Clause */
/* liveness.c - machine identity and process checks for same-machine peers. */
#include "liveness.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void rt_machine_id(char *buf, size_t len)
{
	char boot[64] = "unknown-boot";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (!fgets(boot, sizeof boot, f))
			strcpy(boot, "unknown-boot");
		fclose(f);
		boot[strcspn(boot, "\n")] = '\0';
	}
	struct stat ns;
	unsigned long inode = stat("/proc/self/ns/pid", &ns) == 0 ? (unsigned long)ns.st_ino : 0;
	snprintf(buf, len, "%s:%lu", boot, inode);
}

void rt_process_id(char *buf, size_t len)
{
	char machine[96];
	rt_machine_id(machine, sizeof machine);
	snprintf(buf, len, "%s:%ld", machine, (long)getpid());
}

bool rt_same_machine(const char *peer_id, const char *machine_id, pid_t *pid)
{
	size_t n = strlen(machine_id);
	if (strncmp(peer_id, machine_id, n) != 0 || peer_id[n] != ':')
		return false;
	char *end;
	long v = strtol(peer_id + n + 1, &end, 10);
	if (*end || v <= 0)
		return false;
	*pid = (pid_t)v;
	return true;
}

bool rt_pid_alive(pid_t pid)
{
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return false;
	/* A killed process stays a zombie until its parent reaps it. */
	char path[64], stat_line[256];
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return errno != ENOENT;
	size_t got = fread(stat_line, 1, sizeof stat_line - 1, f);
	fclose(f);
	stat_line[got] = '\0';
	const char *paren = strrchr(stat_line, ')'); /* the name may contain anything */
	return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

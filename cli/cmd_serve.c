/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_serve.c - `llmp serve [--health PATH] [--timeout S] [--endpoint FILE]
 * -- CMD ARGS`, run on each node of a --llm-serve step (srun llmp serve --
 * vllm serve MODEL): the engine started with the node's arguments, the
 * head's health endpoint waited for, the endpoint written for clients, and
 * the step ended when any node's engine exits.
 *
 * What the node runs (the plugin's variables, doc/llm_parallel.8):
 *  - vllm, sglang: CMD ARGS followed by LLMP_VLLM_ARGS or LLMP_SGLANG_ARGS;
 *    vLLM gets the job's token as VLLM_API_KEY (its OpenAI server's key).
 *  - ray: `ray start LLMP_RAY_START_ARGS` on every node; on the head, CMD
 *    ARGS (e.g. `serve run app:app`) once Ray's GCS answers, with
 *    RAY_ADDRESS set.
 *
 * Before anything starts, every port of the job's block is tried on this
 * node: one held by another process is an error naming the node and the
 * port at once, not an engine's timeout. The engine runs in a process
 * group of its own; when it exits, or the head's health check fails past
 * --timeout, this process says so naming the node, ends the whole step
 * (`scancel JOB.STEP`: the other nodes' engines are killed by Slurm) and
 * exits non-zero. SIGTERM or SIGINT (scancel, srun's end) take the
 * engine's group down: TERM, then KILL after 5 s.
 *
 * This process is a child subreaper: what the engine leaves behind (Ray's
 * workers, started in sessions of their own by a raylet that is gone)
 * becomes its child rather than init's, so nothing escapes the step under
 * proctrack/linuxproc either; at the end every such process is stopped too.
 */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <llmp/llmp_env.h>
#include "common/netif.h"
#include "llmp_cli.h"
#include "serve_nic.h"

#define PROG "llmp serve"
#define MAX_ARGS 256

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *out)
{
	fputs("usage: llmp serve [--health PATH] [--timeout S] [--endpoint FILE] -- CMD [ARGS...]\n"
	      "Run on each node of a --llm-serve step: srun llmp serve -- vllm serve MODEL\n"
	      "  --health PATH    the head's health endpoint (default /health)\n"
	      "  --timeout S      seconds the head waits for it to answer 200 (default 900)\n"
	      "  --endpoint FILE  where the head writes HOST:PORT once healthy, and the token\n"
	      "                   beside it as FILE.token, 0600 (default\n"
	      "                   llmp-serve.JOB.STEP.endpoint in the working directory)\n"
	      "vllm, sglang: CMD ARGS get LLMP_VLLM_ARGS or LLMP_SGLANG_ARGS appended; ray: every\n"
	      "node runs `ray start LLMP_RAY_START_ARGS`, the head then CMD ARGS (e.g. serve run).\n"
	      "The step ends, non-zero, when any node's engine exits. See doc/serving.md.\n",
	      out);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static const char *node_name(void)
{
	const char *n = getenv("SLURMD_NODENAME");
	static char host[256];
	if (n && *n)
		return n;
	if (gethostname(host, sizeof host - 1) != 0)
		snprintf(host, sizeof host, "this node");
	return host;
}

/* Split an engine's argument variable on spaces into args (the plugin's values hold none). */
static int split_args(const char *name, char *text, char **args, int *n)
{
	for (char *save = NULL, *w = strtok_r(text, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (*n >= MAX_ARGS - 1) {
			fprintf(stderr, PROG ": %s has more than %d words\n", name, MAX_ARGS);
			return -1;
		}
		args[(*n)++] = w;
	}
	return 0;
}

/* First and last port of "A-B"; -1 when malformed. */
static int port_range(const char *text, unsigned *first, unsigned *last)
{
	char *end;
	unsigned long a = strtoul(text ? text : "", &end, 10), b;
	if (!text || end == text || *end != '-')
		return -1;
	b = strtoul(end + 1, &end, 10);
	if (*end || a == 0 || b > 65535 || b < a)
		return -1;
	*first = (unsigned)a;
	*last = (unsigned)b;
	return 0;
}

/* A TCP connection to host:port within timeout_ms; the descriptor, or -1. */
static int connect_to(const char *host, unsigned port, int timeout_ms)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	char service[8];
	int fd = -1;
	snprintf(service, sizeof service, "%u", port);
	if (getaddrinfo(host, service, &hints, &res) != 0)
		return -1;
	for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EINPROGRESS) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			int err = 0;
			socklen_t len = sizeof err;
			if (poll(&p, 1, timeout_ms) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
				break;
		} else if (errno == 0 || errno == EISCONN) {
			break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* The HTTP status of GET path on host:port within about 2 s; 0 when there is no answer. */
static int http_status(const char *host, unsigned port, const char *path)
{
	char req[512], buf[64];
	int fd = connect_to(host, port, 1000), status = 0;
	if (fd < 0)
		return 0;
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s:%u\r\nConnection: close\r\n\r\n", path,
			 host, port);
	if (n > 0 && n < (int)sizeof req && send(fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		size_t got = 0;
		while (got < sizeof buf - 1 && poll(&p, 1, 1000) == 1) {
			ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		buf[got] = '\0';
		/* The rest read too, so the server's write is not cut short (a reset in its log). */
		for (char rest[512]; poll(&p, 1, 1000) == 1 && recv(fd, rest, sizeof rest, 0) > 0;)
			;
		if (strncmp(buf, "HTTP/", 5) == 0 && strchr(buf, ' '))
			status = atoi(strchr(buf, ' ') + 1);
	}
	close(fd);
	return status;
}

/* Start argv in a process group of its own; its pid, or -1 after the message. */
static pid_t start(char **argv)
{
	pid_t pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		execvp(argv[0], argv);
		fprintf(stderr, PROG ": node %s: cannot run %s: %s\n", node_name(), argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		fprintf(stderr, PROG ": node %s: cannot start %s: %s\n", node_name(), argv[0],
			strerror(errno));
	else
		setpgid(pid, pid); /* both sides, so no signal races the child's own call */
	return pid;
}

/* TERM to a group, KILL after 5 s; reaps pid. */
static void stop_group(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(-pid, SIGTERM);
	for (int i = 0; i < 50; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid && kill(-pid, 0) != 0)
			return;
		usleep(100000);
	}
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* This process's children from /proc (at most max); how many. */
static int children(pid_t *out, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	if (!d)
		return 0;
	while (n < max && (e = readdir(d))) {
		char path[300], stat[512], *close_paren;
		int ppid;
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t got = read(fd, stat, sizeof stat - 1);
		close(fd);
		if (got <= 0)
			continue;
		stat[got] = '\0';
		/* pid (comm) state ppid ...: comm may hold spaces and parentheses */
		close_paren = strrchr(stat, ')');
		if (close_paren && sscanf(close_paren + 1, " %*c %d", &ppid) == 1 && ppid == (int)getpid())
			out[n++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return n;
}

/*
 * Every process still under this one (the engine's orphans, adopted): TERM to
 * each and its group, KILL from `grace` s on, until none is left; all reaped.
 * One that outlives KILL by 5 s (stuck in the kernel) is named and left.
 */
static void stop_orphans(double grace)
{
	double t0 = now_s();
	bool termed = false;
	for (;;) {
		pid_t kids[256];
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		int n = children(kids, 256);
		if (n == 0)
			return;
		if (now_s() - t0 >= grace + 5.0) {
			fprintf(stderr,
				PROG
				": node %s: %d process(es) left by the engine outlived SIGKILL (pid %d ...)\n",
				node_name(), n, (int)kids[0]);
			return;
		}
		bool late = now_s() - t0 >= grace;
		if (!termed || late) {
			for (int i = 0; i < n; i++) {
				pid_t group = getpgid(kids[i]);
				if (group > 0 && group != getpgrp())
					kill(-group, late ? SIGKILL : SIGTERM);
				kill(kids[i], late ? SIGKILL : SIGTERM);
			}
			termed = true;
		}
		usleep(100000);
	}
}

/* The whole step ended through Slurm: the other nodes' engines go too. */
static void end_step(void)
{
	const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
	char id[64];
	if (!job || !step)
		return;
	snprintf(id, sizeof id, "%s.%s", job, step);
	/*
	 * A moment for Slurm to forward this node's message to srun first: seen,
	 * the cancelled step's srun ending before the line that says why came.
	 */
	usleep(500000);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		execlp("scancel", "scancel", "--quiet", id, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* The job's token from the plugin's file; "" when there is none. */
static void read_token(char *token, size_t len)
{
	const char *path = getenv(LLMP_ENV_SERVE_TOKEN_FILE);
	token[0] = '\0';
	int fd = path && *path ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) : -1;
	if (fd < 0)
		return;
	ssize_t n = read(fd, token, len - 1);
	close(fd);
	token[n > 0 ? n : 0] = '\0';
	token[strcspn(token, "\r\n")] = '\0';
}

/* FILE with text, whole or not at all (a temporary beside it, renamed); mode 0644 or 0600. */
static int write_whole(const char *path, const char *text, mode_t mode)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
		return -1;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	size_t len = strlen(text);
	bool ok = write(fd, text, len) == (ssize_t)len;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

struct serve_opts {
	const char *health, *endpoint;
	double timeout;
};

static int parse_opts(int argc, char **argv, struct serve_opts *o, int *cmd)
{
	static const struct option longs[] = { { "health", required_argument, NULL, 'H' },
					       { "timeout", required_argument, NULL, 't' },
					       { "endpoint", required_argument, NULL, 'e' },
					       { "help", no_argument, NULL, 'h' },
					       { NULL, 0, NULL, 0 } };
	uint64_t t;
	int c;
	o->health = "/health";
	o->endpoint = NULL;
	o->timeout = 900;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", longs, NULL)) != -1) {
		switch (c) {
		case 'H':
			if (optarg[0] != '/' || strpbrk(optarg, " \r\n"))
				return cli_usage_error(PROG, "--health: expected a path such as /health, not",
						       optarg);
			o->health = optarg;
			break;
		case 't':
			if (cli_parse_count(PROG, "--timeout", optarg, 1, 86400, &t) < 0)
				return CLI_EXIT_USAGE;
			o->timeout = (double)t;
			break;
		case 'e': o->endpoint = optarg; break;
		case 'h': usage(stdout); return -CLI_EXIT_OK - 1;
		default: return cli_usage_error(PROG, "unknown option", cli_culprit(argv));
		}
	}
	if (optind >= argc || strcmp(argv[optind - 1], "--") != 0) {
		fputs(PROG ": no engine command: llmp serve [options] -- CMD [ARGS...]\n", stderr);
		return CLI_EXIT_USAGE;
	}
	*cmd = optind;
	return 0;
}

int cli_serve(int argc, char **argv)
{
	struct serve_opts o;
	char *args[MAX_ARGS], *ray[MAX_ARGS], endpoint[4096], token[256], line[512], shown_head[256];
	int cmd = 0, n = 0, nray = 0, rc = parse_opts(argc, argv, &o, &cmd);
	if (rc == -CLI_EXIT_OK - 1)
		return CLI_EXIT_OK;
	if (rc)
		return rc;

	const char *engine = getenv(LLMP_ENV_SERVE_ENGINE), *role = getenv(LLMP_ENV_SERVE_ROLE);
	const char *head = getenv(LLMP_ENV_SERVE_HEAD), *port_text = getenv(LLMP_ENV_SERVE_PORT);
	const char *node = node_name();
	unsigned first, last, port = port_text ? (unsigned)strtoul(port_text, NULL, 10) : 0;
	if (!engine || !role || !head || !port ||
	    port_range(getenv(LLMP_ENV_SERVE_PORTS), &first, &last) < 0) {
		fprintf(stderr,
			PROG ": node %s: not in a serving step (LLMP_SERVE_* unset): submit with "
			     "--llm-serve=ray|vllm|sglang and --ntasks-per-node=1\n",
			node);
		return CLI_EXIT_USAGE;
	}
	bool is_head = strcmp(role, "head") == 0, is_ray = strcmp(engine, "ray") == 0;
	snprintf(shown_head, sizeof shown_head, "%s", cli_printable(head));

	/* A port of the block already held: said now, naming the node, not as the engine's timeout. */
	for (unsigned p = first; p <= last; p++)
		if (netif_port_held(p) == 1) {
			fprintf(stderr,
				PROG
				": node %s: port %u of the job's block %u-%u is held by another process; the "
				"engine cannot listen there (the site sets the range with port_base= and "
				"port_range=, or srun --resv-ports=32 takes Slurm's)\n",
				node, p, first, last);
			end_step();
			return CLI_EXIT_FAILURE;
		}

	/* An interface named for the engine's traffic that is not up here: said now, naming it. */
	char why_nic[768];
	int nic = serve_check_nics(is_head ? NULL : head, why_nic, sizeof why_nic);
	if (nic != 0)
		fprintf(stderr, PROG ": node %s: %s%s\n", node, why_nic, /* its user text shown safely */
			nic < 0 ? "; ending the step" : "");
	if (nic < 0) {
		end_step();
		return CLI_EXIT_FAILURE;
	}

	read_token(token, sizeof token);
	if (strcmp(engine, "vllm") == 0 && token[0])
		setenv("VLLM_API_KEY", token, 1);
	for (int i = cmd; i < argc && n < MAX_ARGS - 1; i++)
		args[n++] = argv[i];
	static char vars[2][8192];
	if (!is_ray) {
		const char *name = strcmp(engine, "vllm") == 0 ? LLMP_ENV_VLLM_ARGS : LLMP_ENV_SGLANG_ARGS;
		snprintf(vars[0], sizeof vars[0], "%s", getenv(name) ? getenv(name) : "");
		if (split_args(name, vars[0], args, &n) < 0)
			return CLI_EXIT_USAGE;
	} else {
		ray[nray++] = "ray";
		ray[nray++] = "start";
		snprintf(vars[1], sizeof vars[1], "%s",
			 getenv(LLMP_ENV_RAY_START_ARGS) ? getenv(LLMP_ENV_RAY_START_ARGS) : "");
		if (split_args(LLMP_ENV_RAY_START_ARGS, vars[1], ray, &nray) < 0)
			return CLI_EXIT_USAGE;
		ray[nray] = NULL;
	}
	args[n] = NULL;

	/* the engine's orphans become ours, not init's (see the top of this file) */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	/*
	 * Ray: a worker joins once the head's GCS accepts connections (ray start
	 * --address gives up on a head that is not there yet), within --timeout.
	 */
	double t0 = now_s();
	unsigned gcs = first + 1;
	while (is_ray && !is_head) {
		int fd = connect_to(head, gcs, 500);
		if (fd >= 0) {
			close(fd);
			break;
		}
		if (stop_signal)
			return 128 + (int)stop_signal;
		if (now_s() - t0 > o.timeout) {
			fprintf(stderr,
				PROG
				": node %s: Ray's head %s:%u did not answer within %.0f s; ending the step\n",
				node, shown_head, gcs, o.timeout);
			end_step();
			return CLI_EXIT_FAILURE;
		}
		usleep(200000);
	}
	/* Ray: the node's raylet first; the head's CMD once the GCS answers. Else the engine itself. */
	pid_t base = is_ray ? start(ray) : start(args), app = -1;
	if (base < 0) {
		end_step();
		return CLI_EXIT_FAILURE;
	}
	const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
	if (o.endpoint)
		snprintf(endpoint, sizeof endpoint, "%s", o.endpoint);
	else
		snprintf(endpoint, sizeof endpoint, "llmp-serve.%s.%s.endpoint", job ? job : "0",
			 step ? step : "0");

	double next_poll = now_s();
	bool healthy = !is_head, app_wanted = is_ray && is_head;
	int status = 0, why = 0; /* why: 1 the engine exited, 2 no health in time, 3 a signal */
	pid_t ended = -1;
	while (!why) {
		usleep(100000);
		if (stop_signal) {
			why = 3;
			break;
		}
		for (pid_t p = base; p > 0; p = p == base ? app : -1) {
			if (waitpid(p, &status, WNOHANG) == p) {
				ended = p;
				why = 1;
				break;
			}
		}
		if (why)
			break;
		double t = now_s();
		if (app_wanted && t >= next_poll) {
			int fd = connect_to(head, gcs, 500);
			if (fd >= 0) {
				close(fd);
				app_wanted = false;
				if ((app = start(args)) < 0)
					why = 1;
			}
		}
		if (!healthy && !app_wanted && t >= next_poll) {
			next_poll = t + 0.5;
			if (http_status(head, port, o.health) == 200) {
				healthy = true;
				int m = snprintf(line, sizeof line, "%s:%u\n", head, port);
				char tokpath[4200];
				snprintf(tokpath, sizeof tokpath, "%s.token", endpoint);
				if (m < 0 || write_whole(endpoint, line, 0644) != 0 ||
				    (token[0] && write_whole(tokpath, token, 0600) != 0))
					fprintf(stderr,
						PROG ": node %s: cannot write the endpoint file %s: %s\n",
						node, cli_printable(endpoint), strerror(errno));
				fprintf(stderr,
					PROG ": %s answers on http://%s:%u after %.1f s (endpoint in %s)\n",
					engine, shown_head, port, t - t0, cli_printable(endpoint));
			} else if (t - t0 > o.timeout) {
				why = 2;
			}
		} else if (app_wanted && t - t0 > o.timeout) {
			why = 2;
		}
	}
	if (why == 1) {
		const char *what = ended == app ? args[0] : is_ray ? "ray start" : args[0];
		if (WIFEXITED(status))
			fprintf(stderr,
				PROG ": node %s: %s exited with status %d after %.1f s%s; ending the step\n",
				node, cli_printable(what), WEXITSTATUS(status), now_s() - t0,
				is_head && !healthy ? ", before it answered" : "");
		else
			fprintf(stderr,
				PROG ": node %s: %s was killed by signal %d after %.1f s; ending the step\n",
				node, cli_printable(what), WTERMSIG(status), now_s() - t0);
	} else if (why == 2) {
		fprintf(stderr,
			PROG ": node %s: %s gave no 200 on http://%s:%u%s within %.0f s; ending the step\n",
			node, engine, shown_head, port, cli_printable(o.health), o.timeout);
	}
	if (app > 0 && ended != app)
		stop_group(app);
	else if (app > 0)
		kill(-app, SIGKILL);
	if (ended != base)
		stop_group(base);
	else
		kill(-base, SIGKILL); /* whatever it left in its group */
	stop_orphans(3.0);
	if (is_head && healthy) {
		char tokpath[4200];
		snprintf(tokpath, sizeof tokpath, "%s.token", endpoint);
		unlink(endpoint);
		unlink(tokpath);
	}
	if (why == 3)
		return 128 + (int)stop_signal;
	end_step();
	return CLI_EXIT_FAILURE;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_topo.c - `llmp topo`: the topology llmp uses on this node, as text
 * or as JSON (doc/topology-json.md).
 *
 * With --file FILE, or LLMP_TOPOLOGY_FILE set, that file (checked whole:
 * a mistake is exit status 2 and one line naming the line and the key);
 * otherwise this node discovered from sysfs and SLURM_TOPOLOGY_ADDR.
 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp_env.h>
#include "llmp_cli.h"
#include "topology/discover/discover.h"
#include "topology/topo.h"

#define PROG "llmp topo"

static void help(void)
{
	printf("usage: llmp topo [--file FILE] [--format text|json] [--sysfs DIR]\n"
	       "       llmp topo --gdr [--sysfs DIR] [--nccl-dump FILE] [--nccl-log FILE]\n"
	       "       llmp topo --gdr --format json [--sysfs DIR]\n"
	       "       llmp topo --rails [--file FILE]\n"
	       "       llmp topo --nccl-topo [--file FILE --type NAME | --sysfs DIR]\n"
	       "       llmp topo --job [--format text|json]   (run under srun --mpi=pmix)\n"
	       "\n"
	       "Show the topology llmp uses on this node: GPUs, InfiniBand/RoCE HCAs, NUMA nodes,\n"
	       "PCIe nearness, the switch tree (format: doc/topology-json.md).\n"
	       "  -F, --file FILE          read and check FILE instead of discovering (default:\n"
	       "                           $LLMP_TOPOLOGY_FILE when set)\n"
	       "  -f, --format text|json   output format (default text)\n"
	       "  -s, --sysfs DIR          discover from a copy of sysfs under DIR (for tests, and\n"
	       "                           to replay a saved tree)\n"
	       "  -g, --gdr                per GPU and HCA of this node: will NCCL use GPUDirect\n"
	       "                           RDMA, and every reason when not (also reads /proc, /dev;\n"
	       "                           ACS only as root; NCCL's version from $LLMP_NCCL_LIBRARY\n"
	       "                           or libnccl.so.2)\n"
	       "  -d, --nccl-dump FILE     with --gdr: NCCL's NCCL_TOPO_DUMP_FILE of this node against\n"
	       "                           the prediction: where each device hangs, each gdr flag\n"
	       "                           (exit 1 when they differ)\n"
	       "  -L, --nccl-log FILE      with --gdr: NCCL's INFO log (NCCL_DEBUG_FILE, with NET) of\n"
	       "                           this node: its \"GPU Direct RDMA Enabled|Disabled for\n"
	       "                           HCA\" lines against the prediction per GPU/HCA pair\n"
	       "                           (exit 1 when one differs)\n"
	       "  -n, --nccl-topo          this node (or node type NAME of FILE) as an NCCL_TOPO_FILE,\n"
	       "                           checked against NCCL's grammar (doc/gpudirect.md)\n"
	       "  -r, --rails              every rail's HCA ports across the nodes: one link layer\n"
	       "                           and rate, ACTIVE; each one that differs named (exit 1)\n"
	       "  -t, --type NAME          the node type --nccl-topo writes (a file of several)\n"
	       "  -j, --job                every node of the step, gathered in llmp_init's one PMIx\n"
	       "                           fence; rank 0 prints them\n"
	       "Discovery reads /sys, NVML (libnvidia-ml.so.1, or $LLMP_NVML_LIBRARY) and\n"
	       "SLURM_TOPOLOGY_ADDR/_PATTERN.\n"
	       "Exit status: 0 success, 2 bad input (an option, a topology file), 1 other errors.\n");
}

int cli_topo(int argc, char **argv)
{
	static const struct option options[] = {
		{ "file", required_argument, NULL, 'F' },
		{ "format", required_argument, NULL, 'f' },
		{ "sysfs", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "job", no_argument, NULL, 'j' },
		{ "gdr", no_argument, NULL, 'g' },
		{ "nccl-topo", no_argument, NULL, 'n' },
		{ "type", required_argument, NULL, 't' },
		{ "rails", no_argument, NULL, 'r' },
		{ "nccl-dump", required_argument, NULL, 'd' },
		{ "nccl-log", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = getenv(LLMP_ENV_TOPOLOGY_FILE), *sysfs = "/";
	bool json = false, job = false, chose = false, gdr = false, xml = false, rails = false;
	const char *type = NULL, *dump = NULL, *log = NULL;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":F:f:s:t:d:L:jgnrh", options, NULL)) != -1) {
		switch (c) {
		case 'F': file = optarg, chose = true; break;
		case 's': sysfs = optarg, chose = true; break;
		case 'j': job = true; break;
		case 'g': gdr = true; break;
		case 'n': xml = true; break;
		case 'r': rails = true; break;
		case 'd': dump = optarg; break;
		case 'L': log = optarg; break;
		case 't': type = optarg; break;
		case 'f':
			if (cli_parse_format(PROG, optarg, &json))
				return CLI_EXIT_USAGE;
			break;
		case 'h': help(); return CLI_EXIT_OK;
		case ':': return cli_usage_error(PROG, "a value is missing after", cli_culprit(argv));
		default: return cli_usage_error(PROG, "unknown option", cli_culprit(argv));
		}
	}
	if (optind < argc)
		return cli_usage_error(PROG, "unexpected argument", argv[optind]);
	if (job && chose)
		return cli_usage_error(
			PROG, "--job discovers every node of the step: no --file or --sysfs with", "--job");
	if (gdr && (job || file))
		return cli_usage_error(PROG, "--gdr checks this node: not with", job ? "--job" : "--file");
	if (json && (dump || log))
		return cli_usage_error(PROG, "NCCL's files are compared in text: not with --format json and",
				       dump ? "--nccl-dump" : "--nccl-log");
	if (rails && (job || gdr || xml || json))
		return cli_usage_error(PROG, "--rails prints a report: not with",
				       job   ? "--job"
				       : gdr ? "--gdr"
				       : xml ? "--nccl-topo"
					     : "--format json");
	if (xml && (job || gdr || json))
		return cli_usage_error(PROG, "--nccl-topo writes XML: not with",
				       job   ? "--job"
				       : gdr ? "--gdr"
					     : "--format json");
	if (dump && !gdr)
		return cli_usage_error(PROG, "--nccl-dump is compared by --gdr: without it,", dump);
	if (log && !gdr)
		return cli_usage_error(PROG, "--nccl-log is compared by --gdr: without it,", log);
	if (type && !xml)
		return cli_usage_error(PROG, "--type names what --nccl-topo writes: without it,", type);
	if (job) { /* it joins the job: llmp-bench, with the runtime */
#ifdef LLMP_HAVE_RUNTIME
		return cli_exec_bench("topo-job", argc, argv);
#else
		fputs(PROG ": --job: not built: configure found no PMIx or UCX for the runtime\n", stderr);
		return CLI_EXIT_FAILURE;
#endif
	}
	if (file && !*file)
		file = NULL;

	struct topo t;
	char msg[LLMP_MSG_MAX];
	llmp_status st = file ? topo_read_file(file, &t, msg, sizeof msg)
			      : topo_discover(sysfs, getenv("SLURM_TOPOLOGY_ADDR"),
					      getenv("SLURM_TOPOLOGY_ADDR_PATTERN"), true, &t, msg,
					      sizeof msg);
	if (st != LLMP_OK) {
		fprintf(stderr, PROG ": %s\n", msg);
		return st == LLMP_ERR_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
	}
	if (rails) {
		int rails_rc = cli_topo_rails(&t, stdout);
		topo_free(&t);
		return rails_rc;
	}
	if (xml) {
		int xml_rc = cli_topo_nccl_xml(&t, type, stdout);
		topo_free(&t);
		return xml_rc;
	}
	if (gdr) {
		int gdr_rc = json ? cli_topo_gdr_json(&t, sysfs, stdout)
				  : cli_topo_gdr(&t, sysfs, dump, log, stdout);
		topo_free(&t);
		return gdr_rc;
	}
	int rc = json ? topo_write_json(&t, stdout) : topo_write_text(&t, stdout);
	topo_free(&t);
	if (rc != 0 || fflush(stdout) != 0) {
		fprintf(stderr, PROG ": writing the output failed\n");
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

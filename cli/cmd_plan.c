/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_plan.c - `llmp plan`: fit a layout to a job size and print it.
 *
 * Everything a user can get wrong (an argument, a number, the layout) ends
 * with exit status 2 and one line on stderr that names it.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "llmp_cli.h"
#include <llmp/llmp_json.h>

#define PROG "llmp plan"

struct plan_args {
	const char *spec, *topology, *hosts, *model, *svg, *gpu;
	bool renumber, explain, choose_layout;
	double measured_step;    /* --measured-step: seconds, 0 when not given */
	double measured_step2;   /* --measured-step-mbs M=S: S, 0 when not given */
	unsigned measured_mbs2;  /* and M */
	double measured_step_tp; /* --measured-step-tp T=S: S, 0 when not given */
	unsigned measured_tp2;   /* and T */
	uint32_t world, nodes, tasks_per_node;
	int64_t rank; /* -1 for all ranks */
	int json;
};

static void help(void)
{
	printf("usage: llmp plan (--world W | --nodes N --tasks-per-node T)\n"
	       "                 [--parallel SPEC] [--rank R] [--format text|json]\n"
	       "       llmp plan --topology FILE [--hosts LIST] [--tasks-per-node T]\n"
	       "                 [--placement block|topology] [--model SPEC [--explain | --gpu GPU]]\n"
	       "                 [--svg OUT]\n"
	       "                 [--parallel SPEC] [--rank R] [--format text|json]\n\n"
	       "Fit a 4D layout to a job and print its sizes and process groups.\n"
	       "  -w, --world W            number of ranks in the job\n"
	       "  -N, --nodes N            number of nodes (with --tasks-per-node)\n"
	       "  -t, --tasks-per-node T   ranks per node; enables locality warnings\n"
	       "  -p, --parallel SPEC      layout, e.g. tp=2,pp=2 (default: all 1, dp=auto);\n"
	       "                           'help' prints the grammar\n"
	       "  -r, --rank R             show only rank R: coordinates and its groups\n"
	       "  -f, --format text|json   output format (JSON: doc/layout-json.md)\n"
	       "  -T, --topology FILE      place the ranks on the hosts of FILE (doc/topology-json.md):\n"
	       "                           host, GPU and HCA of each rank, and how far each group spans\n"
	       "  -H, --hosts LIST         the job's hosts, in Slurm's order (default: all of FILE)\n"
	       "  -P, --placement block|topology\n"
	       "                           ranks follow Slurm's task ids (block, the default) or the\n"
	       "                           topology (NVLink domain, then the switch tree)\n"
	       "  -M, --model hidden=H,layers=L,seq=S,mbs=B[,heads=,kv-heads=,experts=,topk=,gbs=]\n"
	       "                           the network cost of one training step, per dimension, for this\n"
	       "                           placement, Slurm's block order and Megatron's default order\n"
	       "  -E, --explain            with --model, only the cost: the bytes each dimension moves\n"
	       "                           over each link class (NVLink, PCIe, IB leaf, IB spine)\n"
	       "  -S, --svg OUT            also draw the placement as an SVG picture into OUT\n"
	       "       llmp plan (--world W | --nodes N --tasks-per-node T) --model MODEL --gpu GPU\n"
	       "                 [--parallel SPEC|auto] [--format text|json]\n"
	       "  -M, --model MODEL        without --topology: a preset (llama3-8b, llama3-70b, llama3-405b,\n"
	       "                           llama2-7b, gpt3-175b, gpt-22b, mt-nlg-530b, gpt-1t, nemotron4-340b,\n"
	       "                           mixtral-8x7b, deepseek-v3), a Hugging Face config.json, or keys\n"
	       "                           layers=,hidden=,seq=[,ffn=,heads=,kv-heads=,vocab=,experts=,topk=,\n"
	       "                           moe-ffn=,shared-ffn=,dense-layers=,gbs=,mbs=,mlp=gelu|swiglu,tied=,\n"
	       "                           distopt=|zero=,sp=,flash=,dropout=,overlap-grad=,overlap-param=,\n"
	       "                           engine=,grad=,overhead=,recompute=,recompute-layers=,\n"
	       "                           recompute-moe-act=,offload-layers=];\n"
	       "                           keys after a preset or file override it\n"
	       "  -G, --gpu GPU            a100-40gb, a100, h100, h100-pcie, h800, h200, b200, gb200, l4, a10,\n"
	       "                           rtx4090, mi300x, or mem=GiB,tflops=N[,eff=,hbm=,layer-ms=,nvlink=,net=,\n"
	       "                           domain=,alloc-gib=,alloc=]:\n"
	       "                           memory per stage and step time of the layout (doc/step-model.md);\n"
	       "                           with --parallel auto, the fastest layout that fits\n"
	       "  -m, --measured-step S    with --gpu and a given layout: the seconds one step of it\n"
	       "                           took on the site; the efficiency that reproduces them is\n"
	       "                           used and printed (then --gpu GPU,eff=E scores any layout)\n"
	       "  -B, --measured-step-mbs M=S\n"
	       "                           with --measured-step: the same layout's step at micro-batch\n"
	       "                           size M (another than the model's mbs=): the per-layer\n"
	       "                           overhead is fitted too (then --gpu GPU,eff=E,layer-ms=X)\n"
	       "  -L, --measured-step-tp T=S\n"
	       "                           with --measured-step: the same layout's step at tensor-parallel\n"
	       "                           size T (another than the layout's tp, both inside the NVLink\n"
	       "                           domain): the link rate is fitted too (then --gpu GPU,eff=E,nvlink=N)\n"
	       "Exit status: 0 success, 2 bad input, 1 output error.\n");
}

/* A message with the user's text `what` in it, shown as cli_printable shows it. */
static int usage_error(const char *fmt, const char *what)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, cli_printable(what));
	fprintf(stderr, "\n");
	return CLI_EXIT_USAGE;
}

/* A message of llmp's own (the planner shows the user's text in it with llmp_show): whole. */
static int usage_message(const char *prefix, const char *msg)
{
	fprintf(stderr, PROG ": %s%s\n", prefix, msg);
	return CLI_EXIT_USAGE;
}

/* Seconds: a finite number above 0, nothing after it. */
static int parse_seconds(const char *text, double *out)
{
	char *end = NULL;
	errno = 0;
	double x = strtod(text, &end);
	if (errno || end == text || *end || !(x > 0) || x > 1e9)
		return -1;
	*out = x;
	return 0;
}

/* The digits from text up to end: a whole number from 1 to max. */
static int parse_whole(const char *text, const char *end, unsigned max, unsigned *out)
{
	unsigned long v = 0;
	if (text == end)
		return -1;
	for (const char *p = text; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = 10 * v + (unsigned long)(*p - '0');
		if (v > max)
			return -1;
	}
	if (v < 1)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* N=S: a size from 1 to max, and the seconds of a step at it. */
static int parse_step_at(const char *text, unsigned max, unsigned *size, double *seconds)
{
	const char *eq = strchr(text, '=');
	return !eq || parse_whole(text, eq, max, size) || parse_seconds(eq + 1, seconds) ? -1 : 0;
}

static int parse_args(int argc, char **argv, struct plan_args *a)
{
	static const struct option options[] = {
		{ "world", required_argument, NULL, 'w' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "tasks-per-node", required_argument, NULL, 't' },
		{ "parallel", required_argument, NULL, 'p' },
		{ "rank", required_argument, NULL, 'r' },
		{ "format", required_argument, NULL, 'f' },
		{ "topology", required_argument, NULL, 'T' },
		{ "hosts", required_argument, NULL, 'H' },
		{ "placement", required_argument, NULL, 'P' },
		{ "model", required_argument, NULL, 'M' },
		{ "svg", required_argument, NULL, 'S' },
		{ "explain", no_argument, NULL, 'E' },
		{ "gpu", required_argument, NULL, 'G' },
		{ "measured-step", required_argument, NULL, 'm' },
		{ "measured-step-mbs", required_argument, NULL, 'B' },
		{ "measured-step-tp", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	memset(a, 0, sizeof *a);
	a->rank = -1;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":w:N:t:p:r:f:T:H:P:M:S:G:m:B:L:Eh", options, NULL)) != -1) {
		switch (c) {
		case 'w':
			if (cli_parse_count(PROG, "--world", optarg, 1, LLMP_WORLD_MAX, &v))
				return CLI_EXIT_USAGE;
			a->world = (uint32_t)v;
			break;
		case 'N':
			if (cli_parse_count(PROG, "--nodes", optarg, 1, LLMP_WORLD_MAX, &v))
				return CLI_EXIT_USAGE;
			a->nodes = (uint32_t)v;
			break;
		case 't':
			if (cli_parse_count(PROG, "--tasks-per-node", optarg, 1, LLMP_WORLD_MAX, &v))
				return CLI_EXIT_USAGE;
			a->tasks_per_node = (uint32_t)v;
			break;
		case 'p': a->spec = optarg; break;
		case 'G': a->gpu = optarg; break;
		case 'm':
			if (parse_seconds(optarg, &a->measured_step))
				return usage_error("--measured-step '%s': expected seconds, a number above 0",
						   optarg);
			break;
		case 'B':
			if (parse_step_at(optarg, 1024, &a->measured_mbs2, &a->measured_step2))
				return usage_error(
					"--measured-step-mbs '%s': expected M=S, a micro-batch size "
					"(1 to 1024) and the seconds of a step at it",
					optarg);
			break;
		case 'L':
			if (parse_step_at(optarg, LLMP_SIZE_MAX, &a->measured_tp2, &a->measured_step_tp))
				return usage_error(
					"--measured-step-tp '%s': expected T=S, a tensor-parallel size "
					"and the seconds of a step at it",
					optarg);
			break;
		case 'T': a->topology = optarg; break;
		case 'H': a->hosts = optarg; break;
		case 'M': a->model = optarg; break;
		case 'S': a->svg = optarg; break;
		case 'E': a->explain = true; break;
		case 'P':
			if (strcmp(optarg, "block") != 0 && strcmp(optarg, "topology") != 0)
				return usage_error("--placement '%s': expected block or topology", optarg);
			a->renumber = strcmp(optarg, "topology") == 0;
			break;
		case 'r':
			if (cli_parse_count(PROG, "--rank", optarg, 0, LLMP_WORLD_MAX - 1, &v))
				return CLI_EXIT_USAGE;
			a->rank = (int64_t)v;
			break;
		case 'f':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0)
				return usage_error("--format '%s': expected text or json", optarg);
			a->json = strcmp(optarg, "json") == 0;
			break;
		case 'h': help(); return -1;
		case ':': return usage_error("%s needs a value", cli_culprit(argv));
		default: return usage_error("unknown option '%s' (see --help)", cli_culprit(argv));
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	a->choose_layout = a->spec && strcmp(a->spec, "auto") == 0;
	if (a->gpu && a->rank >= 0)
		return usage_message("", "--rank shows a plan's groups: not with --gpu");
	if (a->gpu && (a->explain || a->svg))
		return usage_message("", "--explain and --svg show a placement's cost: not with --gpu");
	if (a->gpu && !a->model)
		return usage_message("", "--gpu needs --model: the step model estimates a model on a GPU");
	if (a->choose_layout && (!a->model || (!a->gpu && !a->topology)))
		return usage_message("",
				     "--parallel auto needs --model, and --gpu or a --topology whose node "
				     "types say their \"gpu\"");
	if (a->choose_layout && a->topology && (a->explain || a->svg))
		return usage_message(
			"", "--explain and --svg show one layout's placement: not with --parallel auto");
	if ((a->hosts || a->renumber || (a->model && !a->gpu) || a->svg) && !a->topology)
		return usage_message("", "--hosts, --placement, --model and --svg need --topology "
					 "(--model also works with --gpu instead)");
	if (a->measured_step && (!a->gpu || !a->spec || a->choose_layout || a->topology))
		return usage_message("", "--measured-step calibrates the step model on the layout that ran: "
					 "give --model, --gpu and that layout as --parallel (not auto, "
					 "not with --topology)");
	if (a->measured_step2 && !a->measured_step)
		return usage_message("", "--measured-step-mbs fits the per-layer overhead beside "
					 "--measured-step: give both");
	if (a->measured_step_tp && !a->measured_step)
		return usage_message("", "--measured-step-tp fits the link rate beside --measured-step: "
					 "give both");
	if (a->explain && !a->model)
		return usage_message("", "--explain explains the cost of --model: give --model too");
	if (a->topology && a->nodes)
		return usage_message("", "--topology takes its hosts from the file or --hosts: no --nodes");
	return CLI_EXIT_OK;
}

/* The world from --world or --nodes x --tasks-per-node, checked for agreement. */
static int resolve_world(struct plan_args *a)
{
	if (a->nodes && !a->tasks_per_node)
		return usage_message("", "--nodes needs --tasks-per-node");
	if (a->tasks_per_node && !a->nodes && !a->world)
		return usage_message("", "--tasks-per-node needs --nodes (or --world)");
	if (a->nodes) {
		uint64_t world = (uint64_t)a->nodes * a->tasks_per_node;
		if (world > LLMP_WORLD_MAX) {
			fprintf(stderr, PROG ": %u nodes x %u tasks = %" PRIu64 " ranks, more than %u\n",
				a->nodes, a->tasks_per_node, world, LLMP_WORLD_MAX);
			return CLI_EXIT_USAGE;
		}
		if (a->world && a->world != world) {
			fprintf(stderr,
				PROG ": --world %u disagrees with %u nodes x %u tasks = %" PRIu64 "\n",
				a->world, a->nodes, a->tasks_per_node, world);
			return CLI_EXIT_USAGE;
		}
		a->world = (uint32_t)world;
	}
	if (!a->world)
		return usage_message("", "give the job size: --world W, or --nodes N --tasks-per-node T");
	if (a->rank >= (int64_t)a->world) {
		fprintf(stderr, PROG ": --rank %" PRId64 " is outside 0..%u\n", a->rank, a->world - 1);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

int cli_plan(int argc, char **argv)
{
	struct plan_args a;
	char msg[LLMP_MSG_MAX];
	llmp_spec spec;

	int rc = parse_args(argc, argv, &a);
	if (rc < 0)
		return CLI_EXIT_OK; /* --help */
	if (rc)
		return rc;

	if (a.choose_layout) {
		llmp_spec_init(&spec);
	} else if (a.spec) {
		if (llmp_spec_parse(a.spec, &spec, msg, sizeof msg) != LLMP_OK)
			return usage_message("--parallel: ", msg);
		if (spec.help) {
			fputs(llmp_spec_grammar(), stdout);
			return CLI_EXIT_OK;
		}
	} else {
		llmp_spec_init(&spec);
	}
	if (a.topology) {
		struct cli_plan_topology on = { .file = a.topology,
						.hosts = a.hosts,
						.world = a.world,
						.tasks_per_node = a.tasks_per_node,
						.renumber = a.renumber,
						.model = a.model,
						.explain = a.explain,
						.json = a.json != 0,
						.svg = a.svg,
						.gpu = a.gpu,
						.choose_layout = a.choose_layout,
						.rank = a.rank };
		return cli_plan_on_topology(&on, &spec);
	}
	rc = resolve_world(&a);
	if (rc)
		return rc;
	if (a.gpu) {
		struct cli_plan_step step = { .model = a.model,
					      .gpu = a.gpu,
					      .spec = &spec,
					      .choose_layout = a.choose_layout,
					      .measured_step = a.measured_step,
					      .measured_step2 = a.measured_step2,
					      .measured_mbs2 = a.measured_mbs2,
					      .measured_step_tp = a.measured_step_tp,
					      .measured_tp2 = a.measured_tp2,
					      .world = a.world,
					      .json = a.json != 0 };
		return cli_plan_step(&step);
	}

	llmp_plan *plan;
	if (llmp_plan_create(&spec, a.world, a.tasks_per_node, &plan, msg, sizeof msg) != LLMP_OK)
		return usage_message("", msg);

	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	if (a.json) {
		uint32_t rank = a.rank < 0 ? LLMP_JSON_ALL_RANKS : (uint32_t)a.rank;
		rc = llmp_plan_write_json(plan, rank, stdout) == LLMP_OK ? 0 : -1;
	} else {
		rc = cli_plan_write_text(plan, a.nodes, a.rank, stdout);
	}
	if (fflush(stdout) != 0)
		rc = -1;
	/* Text output shows warnings inline; JSON readers get them on stderr too. */
	for (size_t i = 0; a.json && i < llmp_plan_warning_count(plan); i++)
		fprintf(stderr, PROG ": warning: %s\n", llmp_plan_warning(plan, i));
	llmp_plan_destroy(plan);
	if (rc) {
		fprintf(stderr, PROG ": writing the output failed: %s\n", strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

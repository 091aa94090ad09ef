/* SPDX-License-Identifier: BSD-3-Clause */
/* llmp_cli.h - the subcommands of the `llmp` tool. */
#ifndef LLMP_CLI_H
#define LLMP_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "topology/pci_path.h"

#include <stdbool.h>

#include <llmp/llmp_plan.h>

/* Exit statuses of every subcommand. */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAILURE = 1, /* the work itself failed, e.g. a write error */
	CLI_EXIT_USAGE = 2    /* bad input: arguments, layout, sizes */
};

/* User input as llmp_show (common/fail.h) shows it: short, and with
 * control and non-ASCII bytes as '?', so an argument cannot put escape
 * sequences on the terminal. Returns a static buffer: one use per
 * statement. */
const char *cli_printable(const char *s);

/* "PROG: WHAT 'TEXT' (see --help)" on stderr, TEXT as cli_printable shows it; CLI_EXIT_USAGE. */
int cli_usage_error(const char *prog, const char *what, const char *text);

/* --format's TEXT: text or json, *json set; else "PROG: --format: expected
 * text or json, not 'TEXT'" on stderr and CLI_EXIT_USAGE. 0 when read. */
int cli_parse_format(const char *prog, const char *text, bool *json);

/* The one DIR operand left after getopt_long; NULL, with "PROG: no DIR
 * given" or "PROG: more than one DIR" on stderr, when there is not exactly one. */
const char *cli_one_dir(const char *prog, int argc, char **argv);

/* The option getopt_long complained about (call right after it returned
 * '?' or ':'): a short one by its letter, a long one by its text. */
const char *cli_culprit(char **argv);

/* A decimal count min <= value <= max; else a message "PROG: OPT ..." and -1. */
int cli_parse_count(const char *prog, const char *opt, const char *text, uint64_t min, uint64_t max,
		    uint64_t *out);

/* A byte size: decimal with an optional K, M or G suffix (powers of 1024). */
int cli_parse_size(const char *prog, const char *opt, const char *text, uint64_t min, uint64_t max,
		   uint64_t *out);

/* "1.5 MiB": bytes for people (powers of 1024); exact counts are in the JSON. */
const char *cli_human_bytes(uint64_t bytes, char *buf, size_t len);

/* `llmp plan --topology FILE`: the plan placed on a topology (plan_place.c). */
struct cli_plan_topology {
	const char *file, *hosts; /* hosts NULL: every host of the file */
	uint32_t world;           /* 0, or what the tasks must add up to */
	uint32_t tasks_per_node;  /* 0: as many as each host has GPUs */
	bool renumber;            /* --placement topology */
	const char *model;        /* --model: the cost report; NULL none */
	bool explain;             /* --explain: the cost by link class, nothing else */
	int64_t rank;             /* -1: every rank */
	bool json;                /* doc/placement-json.md */
	const char *svg;          /* --svg: write the picture there; NULL none */
	const char *gpu;          /* --gpu: the step model of the layout, its network from this placement */
	bool choose_layout;       /* --parallel auto: every candidate placed here */
};
int cli_plan_on_topology(const struct cli_plan_topology *a, const llmp_spec *spec);

struct chooser_machines;
struct gpu_desc;
/* `llmp plan --model M --gpu G`: the step model of a layout, or --parallel auto's choice (plan_step.c). */
struct cli_plan_step {
	const char *model, *gpu;
	const llmp_spec *spec; /* the layout; unused when choose_layout */
	bool choose_layout;    /* --parallel auto */
	double measured_step;  /* --measured-step: calibrate g's efficiency on it; 0: no */
	double measured_step2; /* --measured-step-mbs M=S: and its per-layer overhead; 0: no */
	unsigned measured_mbs2;
	double measured_step_tp; /* --measured-step-tp T=S: and the link rate (nvlink=); 0: no */
	unsigned measured_tp2;
	uint32_t world;
	bool json;
	const struct gpu_desc
		*machine_gpu; /* the weakest GPU of the machines (their "gpu" or --gpu); NULL: gpu */
	const struct chooser_machines *on; /* network and stage GPUs from a placement; NULL: modelled */
	const char *placement;             /* with on: which placement, for the output */
	/* With several: on[0..norders) are the job's hosts in different orders of their GPU kinds
	 * (order_names[i] says which), and the fastest is taken; 0 or 1: on alone. */
	size_t norders;
	const char *const *order_names;
};
#define CLI_ORDERS_MAX 7 /* the hosts as given, and every order of up to 3 GPU kinds */
int cli_plan_step(const struct cli_plan_step *a);

struct topo;
struct plan_placement;
/* The placement as an SVG picture (plan_svg.c); -1 on an output error. */
int cli_plan_write_svg(const struct topo *t, const struct plan_placement *p, const llmp_plan *plan,
		       char *const *hosts, size_t nhosts, FILE *out);

/* `llmp topo ...`; argv[0] is "topo". */
int cli_topo(int argc, char **argv);
/* `llmp serve -- CMD`: a serving step's engine on this node (cmd_serve.c). */
int cli_serve(int argc, char **argv);
/* `llmp topo --gdr` on t, this node discovered under root (cli/topo_gdr.c); dump, log: NCCL's, or NULL. */
int cli_topo_gdr(const struct topo *t, const char *root, const char *dump, const char *log, FILE *out);
/* `llmp topo --gdr --format json` (cli/topo_gdr_json.c). */
int cli_topo_gdr_json(const struct topo *t, const char *root, FILE *out);
struct topo_type;
struct gdr_node;

/*
 * The GPUDirect RDMA facts of node type ty under root as a task would meet
 * them: sysfs and procfs, the NCCL it would load, this process's memlock
 * limit, the dma-buf probe (on the HCA named into probed). -1 with msg.
 */
int cli_gdr_facts(const struct topo_type *ty, const char *root, struct gdr_node *n, char *probed, size_t len,
		  char *msg, size_t msglen);
/* NCCL_NET_GDR_LEVEL of this environment into *level; CLI_EXIT_USAGE (said) when NCCL would ignore it. */
int cli_gdr_level(enum topo_path *level);
/*
 * NCCL's INFO log at path (what names it in messages) against the
 * prediction for ty's pairs (cli/gdr_nccl_log.c): one line per pair to
 * out. 0 all agree, 1 one differs, -1 unusable (said on stderr).
 */
int cli_gdr_log_compare(const char *path, const char *what, const struct topo_type *ty,
			const struct gdr_node *n, enum topo_path level, FILE *out);
/* NCCL's dma-buf probe on an HCA of ty (cli/ibv_probe.c): 1 supported, 0 not, -1 not probed. */
int cli_dmabuf_probe(const struct topo_type *ty, char *dev, size_t len);
/* The CUDA driver's GPUDirect RDMA and dma-buf attributes of ty's GPUs into n's devices
 * (cli/cuda_probe.c); how many GPUs were read, 0 with why. */
struct gdr_node;
unsigned cli_cuda_gdr_attrs(const struct topo_type *ty, struct gdr_node *n, char *why, size_t len);
/* `llmp topo --nccl-topo`: node type type (NULL: the only one) of t as NCCL_TOPO_FILE XML. */
int cli_topo_nccl_xml(const struct topo *t, const char *type, FILE *out);
/* `llmp topo --rails`, and after the text of `--job`: the rails of t checked; 1 when a port differs. */
int cli_topo_rails(const struct topo *t, FILE *out);
/* `llmp topo --job` (in llmp-bench, with the runtime); argv[0] is "topo-job". */
int cli_topo_job(int argc, char **argv);

/* `llmp plan ...`; argv[0] is "plan". */
int cli_plan(int argc, char **argv);
/* `llmp calibrate RUNS...` (cmd_calibrate.c). */
int cli_calibrate(int argc, char **argv);

/* Human-readable plan: a summary and every group, or one rank's view. */
int cli_plan_write_text(const llmp_plan *plan, uint32_t nodes, int64_t rank, FILE *out);

/* `llmp bench ...` (in llmp-bench, with the runtime); argv[0] is "bench". */
int cli_bench(int argc, char **argv);

struct llmp_ctx;
/*
 * In llmp-bench: llmp_init with layout `spec` (NULL: the plugin's) into *ctx;
 * on a failure the error printed as "PROG: STATUS: MESSAGE", nothing left to
 * finalize, and the exit code returned (CLI_EXIT_USAGE for a bad layout).
 */
int cli_join_job(const char *prog, const char *spec, struct llmp_ctx **ctx);

/* `llmp top DIR`: the metrics of a job (cmd_top.c); argv[0] is "top". */
int cli_top(int argc, char **argv);
/* `llmp info --settings`: every setting llmp reads (cmd_info.c, the table in settings.c). */
int cli_info(int argc, char **argv);
/* `llmp report DIR`: the metrics of a job as an HTML page (cmd_report.c); argv[0] is "report". */
int cli_report(int argc, char **argv);

/*
 * The checkpoint root of `llmp job-end` and `llmp job run`: given (the
 * option), else LLMP_CHECKPOINT_DIR, else LLMP_CHECKPOINT's directory (parsed
 * into spec). NULL, with "PROG: ..." on stderr, when there is none.
 */
struct llmp_ckpt_spec;
const char *cli_job_root(const char *prog, const char *given, struct llmp_ckpt_spec *spec);

/* `llmp job-end [RC]` (built with the runtime): requeue the job, or not. */
int cli_job_end(int argc, char **argv);

/* `llmp job run -- PROG` (built with the runtime): run PROG, recovering lost nodes in the allocation. */
int cli_job_run(int argc, char **argv);

/* `llmp ckpt list|verify|inspect|bench ...` (built with the runtime); argv[0] is "ckpt". */
int cli_ckpt(int argc, char **argv);

/*
 * Run subcommand `what` ("bench", "ckpt-bench") in llmp-bench, the program
 * linked with the runtime, with argv[1..argc) (bench_exec.c). Returns only
 * when it cannot: CLI_EXIT_FAILURE and a message.
 */
int cli_exec_bench(const char *what, int argc, char **argv);

#endif /* LLMP_CLI_H */

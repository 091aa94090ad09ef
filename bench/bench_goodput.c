/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_goodput.c - the effective training time ratio (ETTR) of a long
 * training job under node failures, simulated (goodput_sim.h): requeue-only,
 * as Slurm's requeue does it today, against restart inside the allocation
 * with k hot spares, beside the first-order closed form
 * W = delta/tau + (tau/2 + R)/M, ETTR = (1 - W) N / (N + k).
 *
 * Defaults and their sources (doc/benchmarks.md, "Goodput under node failures"):
 * - failure rate: Llama 3 (arXiv 2407.21783, section 3.3.4) had 419
 *   unexpected interruptions in 54 days on 16,384 GPUs, 2,048 nodes of 8:
 *   419 / (1,296 h x 2,048) = 1.58e-4 per node-hour, a job MTBF of 3.1 h;
 * - detection D = 300 s: Slurm's SlurmdTimeout default;
 * - requeue R_q = 131 s: a requeued job pending under Slurm's default
 *   cred_expire and scheduler intervals on the test cluster
 *   (doc/benchmarks.md, "Stop to resume");
 * - start-up and checkpoint load S = 60 s; no queue wait (favourable to
 *   requeue-only);
 * - in-allocation recovery R = 90 s: a design budget (NVIDIA
 *   nvidia-resiliency-ext reports an in-job restart of "~1 min"), not a
 *   measurement;
 * - checkpoints every tau = 472 s with a stall of delta = 10 s (Young/Daly's
 *   sqrt(2 delta M) at that rate); allocations of 24 h.
 * Figures only: nothing here is timed and nothing passes or fails.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goodput_sim.h"

#define HOUR 3600.0
#define DAY 86400.0
#define GOAL_POINTS 3.0

struct options {
	unsigned seeds;
	unsigned long long seed;
	unsigned nodes;
	double rate_per_hour;
	double tau; /* 0: Young/Daly */
	double delta, recovery, detect, requeue, startup, queue;
	unsigned spares;
	double days, alloc_hours;
};

static void usage(FILE *to)
{
	fprintf(to, "usage: bench_goodput [OPTION VALUE]...\n"
		    "  ETTR of a training job under node failures: requeue-only against in-allocation\n"
		    "  restart with hot spares, simulated and in closed form (doc/benchmarks.md).\n"
		    "  --seeds N        runs, one seed each (64)\n"
		    "  --seed N         the first seed (1)\n"
		    "  --nodes N        nodes that train (2048)\n"
		    "  --rate X         failures per node-hour (419 / (1296 x 2048): Llama 3)\n"
		    "  --tau S|daly     checkpoint interval, s, stall included (472); daly: sqrt(2 delta M)\n"
		    "  --delta S        checkpoint stall, s (10)\n"
		    "  --recovery S     R: in-allocation restart, s (90)\n"
		    "  --detect S       D: Slurm noticing the node, s (300)\n"
		    "  --requeue S      R_q: the requeued job pending, s (131)\n"
		    "  --startup S      S: start-up and checkpoint load after a requeue, s (60)\n"
		    "  --queue S        Q: extra queue wait per requeue, s (0)\n"
		    "  --spares N       the extra in-allocation row's spares (10)\n"
		    "  --days X         simulated wall time per run, days (54)\n"
		    "  --alloc-hours X  an allocation's time limit, h; 0: none (24)\n"
		    "  --help           this text\n"
		    "  Options also take --name=value.\n");
}

static int bad(const char *option, const char *value, const char *want)
{
	fprintf(stderr, "bench_goodput: %s: '%s' is not %s (--help)\n", option, value, want);
	return -1;
}

static int parse_unsigned(const char *option, const char *value, unsigned long long max, int zero_ok,
			  unsigned long long *out)
{
	char *end;
	errno = 0;
	if (value[0] < '0' || value[0] > '9')
		return bad(option, value, "a whole number");
	unsigned long long v = strtoull(value, &end, 10);
	if (errno || *end || v > max)
		return bad(option, value, "a whole number in range");
	if (v == 0 && !zero_ok)
		return bad(option, value, "a whole number above 0");
	*out = v;
	return 0;
}

static int parse_seconds(const char *option, const char *value, int zero_ok, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(value, &end);
	if (end == value || *end || errno || !isfinite(v) || v < 0)
		return bad(option, value, "a finite number, 0 or more");
	if (v == 0 && !zero_ok)
		return bad(option, value, "a number above 0");
	*out = v;
	return 0;
}

static int parse_option(struct options *o, const char *name, const char *value)
{
	unsigned long long u;
	int rc;
	if (strcmp(name, "--seeds") == 0) {
		rc = parse_unsigned(name, value, 100000, 0, &u);
		o->seeds = (unsigned)u;
		return rc;
	}
	if (strcmp(name, "--seed") == 0)
		return parse_unsigned(name, value, UINT64_MAX, 1, &o->seed);
	if (strcmp(name, "--nodes") == 0) {
		rc = parse_unsigned(name, value, 10000000, 0, &u);
		o->nodes = (unsigned)u;
		return rc;
	}
	if (strcmp(name, "--spares") == 0) {
		rc = parse_unsigned(name, value, 10000000, 1, &u);
		o->spares = (unsigned)u;
		return rc;
	}
	if (strcmp(name, "--tau") == 0) {
		if (strcmp(value, "daly") == 0) {
			o->tau = 0;
			return 0;
		}
		return parse_seconds(name, value, 0, &o->tau);
	}
	struct {
		const char *name;
		double *to;
		int zero_ok;
	} numbers[] = {
		{ "--rate", &o->rate_per_hour, 1 },
		{ "--delta", &o->delta, 1 },
		{ "--recovery", &o->recovery, 1 },
		{ "--detect", &o->detect, 1 },
		{ "--requeue", &o->requeue, 1 },
		{ "--startup", &o->startup, 1 },
		{ "--queue", &o->queue, 1 },
		{ "--days", &o->days, 0 },
		{ "--alloc-hours", &o->alloc_hours, 1 },
	};
	for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
		if (strcmp(name, numbers[i].name) == 0)
			return parse_seconds(name, value, numbers[i].zero_ok, numbers[i].to);
	fprintf(stderr, "bench_goodput: %s: no such option (--help)\n", name);
	return -1;
}

/* 0: run; 1: --help printed; -1: bad command line, said. */
static int parse_options(struct options *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 1;
		}
		char name[64];
		const char *value;
		const char *eq = strchr(argv[i], '=');
		if (strncmp(argv[i], "--", 2) != 0) {
			fprintf(stderr, "bench_goodput: '%s': not an option (--help)\n", argv[i]);
			return -1;
		}
		if (eq) {
			size_t n = (size_t)(eq - argv[i]);
			if (n >= sizeof name)
				n = sizeof name - 1;
			memcpy(name, argv[i], n);
			name[n] = '\0';
			value = eq + 1;
		} else {
			snprintf(name, sizeof name, "%s", argv[i]);
			if (i + 1 >= argc) {
				fprintf(stderr, "bench_goodput: %s: needs a value (--help)\n", name);
				return -1;
			}
			value = argv[++i];
		}
		if (parse_option(o, name, value) != 0)
			return -1;
	}
	return 0;
}

/* The option a model field comes from, for the model's own complaints. */
static const char *option_of(const char *why)
{
	static const char *const map[][2] = {
		{ "nodes", "--nodes" },
		{ "spares", "--spares" },
		{ "node_rate", "--rate" },
		{ "interval", "--tau" },
		{ "stall", "--delta" },
		{ "recovery", "--recovery" },
		{ "detect", "--detect" },
		{ "requeue", "--requeue" },
		{ "startup", "--startup" },
		{ "queue_wait", "--queue" },
		{ "alloc_limit", "--alloc-hours" },
		{ "horizon", "--days" },
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		size_t n = strlen(map[i][0]);
		if (strncmp(why, map[i][0], n) == 0 && why[n] == ':')
			return map[i][1];
	}
	return "options";
}

struct summary {
	double mean, sd, min, max;
	double failures, fallbacks, alloc_stops; /* means per run */
};

/* Run every seed; 0, or -1 when the model refuses p (said). */
static int run_seeds(struct goodput_params p, const struct options *o, struct summary *s)
{
	const char *why = goodput_invalid(&p);
	if (why) {
		fprintf(stderr, "bench_goodput: %s: %s\n", option_of(why), why);
		return -1;
	}
	double squares = 0; /* Welford's running sum of squared deviations */
	*s = (struct summary){ .min = INFINITY, .max = -INFINITY };
	for (unsigned i = 0; i < o->seeds; i++) {
		struct goodput_result r;
		p.seed = o->seed + i;
		goodput_simulate(&p, &r);
		double before = s->mean;
		s->mean += (r.ettr - before) / (i + 1);
		squares += (r.ettr - before) * (r.ettr - s->mean);
		s->min = fmin(s->min, r.ettr);
		s->max = fmax(s->max, r.ettr);
		s->failures += (double)r.failures / o->seeds;
		s->fallbacks += (double)r.fallbacks / o->seeds;
		s->alloc_stops += (double)r.alloc_stops / o->seeds;
	}
	s->sd = o->seeds > 1 ? sqrt(squares / (o->seeds - 1)) : 0;
	return 0;
}

static void print_header(void)
{
	printf("%-36s %5s %8s %5s %7s %7s %8s %8s %7s %6s %8s %9s %5s\n", "variant", "held", "sim", "sd",
	       "min", "max", "renewal", "1st-ord", "sim-1st", "rel", "failures", "fallbacks", "stops");
}

/* One line: ETTRs in percent, sd and differences in points. */
static void print_row(const char *name, const struct goodput_params *p, const struct summary *s)
{
	double first = goodput_first_order(p);
	printf("%-36s %5u %7.2f%% %5.2f %6.2f%% %6.2f%% %7.2f%% %7.2f%% %+7.2f %+5.2f%% %8.1f %9.1f %5.1f\n",
	       name, goodput_nodes_held(p), 100 * s->mean, 100 * s->sd, 100 * s->min, 100 * s->max,
	       100 * goodput_renewal(p), 100 * first, 100 * (s->mean - first),
	       100 * (s->mean - first) / first, s->failures, s->fallbacks, s->alloc_stops);
}

static struct goodput_params base_params(const struct options *o)
{
	struct goodput_params p = {
		.restart = GOODPUT_REQUEUE_ONLY,
		.nodes = o->nodes,
		.node_rate = o->rate_per_hour / HOUR,
		.interval = o->tau,
		.stall = o->delta,
		.recovery = o->recovery,
		.detect = o->detect,
		.requeue = o->requeue,
		.startup = o->startup,
		.queue_wait = o->queue,
		.alloc_limit = o->alloc_hours * HOUR,
		.horizon = o->days * DAY,
	};
	return p;
}

/* ceil(N x percent / 100): "1% spares" holds at least 1% of N. */
static unsigned spares_for(unsigned nodes, unsigned percent)
{
	return (unsigned)(((unsigned long long)nodes * percent + 99) / 100);
}

/* The simulated gap (in-allocation with `spares` minus requeue-only), in points. */
static int simulated_gap(struct goodput_params p, unsigned spares, const struct options *o, double *gap)
{
	struct summary rq, in;
	p.restart = GOODPUT_REQUEUE_ONLY;
	p.spares = 0;
	if (run_seeds(p, o, &rq) != 0)
		return -1;
	p.restart = GOODPUT_IN_ALLOCATION;
	p.spares = spares;
	if (run_seeds(p, o, &in) != 0)
		return -1;
	*gap = 100 * (in.mean - rq.mean);
	return 0;
}

/* The queue wait per requeue from which the goal holds in simulation (bisection; the gap
 * grows with Q, as requeue-only pays it at every failure); -1 when never up to 1e6 s. */
static double simulated_breakeven_queue(struct goodput_params p, unsigned spares, const struct options *o)
{
	double lo = p.queue_wait, hi = lo + 60, gap;
	for (;;) {
		p.queue_wait = hi;
		if (simulated_gap(p, spares, o, &gap) != 0 || hi > 1e6)
			return -1;
		if (gap >= GOAL_POINTS)
			break;
		lo = hi;
		hi *= 2;
	}
	while (hi - lo > 0.5) {
		p.queue_wait = (lo + hi) / 2;
		simulated_gap(p, spares, o, &gap);
		*(gap >= GOAL_POINTS ? &hi : &lo) = p.queue_wait;
	}
	return hi;
}

static void print_goal(const struct goodput_params *base, const struct options *o, const struct summary *rq,
		       const struct summary *in, unsigned spares)
{
	struct goodput_params prq = *base, pin = *base;
	pin.restart = GOODPUT_IN_ALLOCATION;
	pin.spares = spares;
	double sim_gap = 100 * (in->mean - rq->mean);
	double cf_gap = 100 * (goodput_first_order(&pin) - goodput_first_order(&prq));
	printf("\n# goal: in-allocation restart with 1%% spares (%u) at least %.0f points above requeue-only\n",
	       spares, GOAL_POINTS);
	printf("#   simulated:   %.2f%% vs %.2f%%: %+.2f points: %s\n", 100 * in->mean, 100 * rq->mean,
	       sim_gap, sim_gap >= GOAL_POINTS ? "holds" : "does not hold");
	printf("#   first order: %.2f%% vs %.2f%%: %+.2f points: %s\n", 100 * goodput_first_order(&pin),
	       100 * goodput_first_order(&prq), cf_gap, cf_gap >= GOAL_POINTS ? "holds" : "does not hold");
	if (sim_gap < GOAL_POINTS) {
		double q = simulated_breakeven_queue(*base, spares, o);
		/* first order: each second of Q costs requeue-only 1/M of ETTR, in-allocation nothing */
		double q_first = base->queue_wait + fmax(0, GOAL_POINTS - cf_gap) / 100 * goodput_mtbf(base);
		if (q >= 0)
			printf("#   it holds from a queue wait of about %.0f s per requeue (simulated; first order: "
			       "%.0f s)\n",
			       q, q_first);
	}
}

/* Where the first-order form's assumptions hold: no time limit, spares never run out. */
static int print_fair_regime(struct goodput_params p, const struct options *o)
{
	static const double factors[] = { 1, 0.1 };
	printf("\n# the closed form where its assumptions hold: no time limit, a spare always there;\n"
	       "# failures rare against tau (tau/M = %.3f at the rate above, %.4f at a tenth of it)\n",
	       p.interval / goodput_mtbf(&p), p.interval / goodput_mtbf(&p) / 10);
	print_header();
	p.alloc_limit = 0;
	double rate = p.node_rate;
	for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++) {
		char name[64];
		struct summary s;
		p.node_rate = rate * factors[i];
		p.restart = GOODPUT_REQUEUE_ONLY;
		if (run_seeds(p, o, &s) != 0)
			return -1;
		snprintf(name, sizeof name, "requeue-only, rate x %g", factors[i]);
		print_row(name, &p, &s);
		p.restart = GOODPUT_FREE_SPARES;
		if (run_seeds(p, o, &s) != 0)
			return -1;
		snprintf(name, sizeof name, "free spare (bound), rate x %g", factors[i]);
		print_row(name, &p, &s);
	}
	return 0;
}

static void print_inputs(const struct goodput_params *p, const struct options *o, double daly)
{
	double m = goodput_mtbf(p);
	printf("# bench_goodput: ETTR of a training job under node failures, simulated (doc/benchmarks.md)\n");
	printf("# N = %u nodes; lambda = %.3e failures per node-hour; job MTBF M = 1/(N lambda) = %.2f h\n",
	       p->nodes, o->rate_per_hour, m / HOUR);
	if (o->tau > 0)
		printf("# checkpoints: tau = %.1f s (given; Young/Daly's sqrt(2 delta M) = %.1f s), stall delta = %g s\n",
		       p->interval, daly, p->stall);
	else
		printf("# checkpoints: tau = %.1f s (Young/Daly: sqrt(2 delta M)), stall delta = %g s\n",
		       p->interval, p->stall);
	printf("# in-allocation restart: R = %g s per failure (an input: a design budget, not measured)\n",
	       p->recovery);
	printf("# requeue: D %g + R_q %g + Q %g + S %g = %g s per failure%s\n", p->detect, p->requeue,
	       p->queue_wait, p->startup, p->detect + p->requeue + p->queue_wait + p->startup,
	       p->queue_wait == 0 ? " (no queue wait: favourable to requeue-only)" : "");
	if (p->alloc_limit > 0)
		printf("# allocations of %g h: the limit costs a stop checkpoint + R_q + Q + S = %g s, spares "
		       "renewed\n",
		       o->alloc_hours, p->stall + p->requeue + p->queue_wait + p->startup);
	else
		printf("# no allocation time limit: spares renewed only by a requeue\n");
	printf("# spares run out -> requeue (D + R_q + Q + S), a new allocation with its k spares\n");
	printf("# %u seeds from %llu x %g days; ETTR = training kept x N / (wall x nodes held), in %%;\n"
	       "# sd over seeds and differences in points; renewal: the model solved exactly without\n"
	       "# time limit and spares; failures, fallbacks (requeues for want of a spare), stops: per run\n",
	       o->seeds, o->seed, o->days);
}

int main(int argc, char **argv)
{
	struct options o = {
		.seeds = 64,
		.seed = 1,
		.nodes = 2048,
		.rate_per_hour = 419.0 / (54 * 24.0 * 2048),
		.tau = 472,
		.delta = 10,
		.recovery = 90,
		.detect = 300,
		.requeue = 131,
		.startup = 60,
		.queue = 0,
		.spares = 10,
		.days = 54,
		.alloc_hours = 24,
	};
	int rc = parse_options(&o, argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 2;

	struct goodput_params p = base_params(&o);
	double daly = sqrt(2 * o.delta * goodput_mtbf(&p));
	if (o.tau == 0 && !(isfinite(daly) && daly > o.delta)) {
		fprintf(stderr,
			"bench_goodput: --tau daly: sqrt(2 delta M) needs --rate and --delta above 0\n");
		return 2;
	}
	if (o.tau == 0)
		p.interval = daly;
	else if (o.delta >= o.tau) {
		fprintf(stderr, "bench_goodput: --delta: %g s is not below --tau (%g s)\n", o.delta, o.tau);
		return 2;
	}
	const char *why = goodput_invalid(&p);
	if (why) {
		fprintf(stderr, "bench_goodput: %s: %s\n", option_of(why), why);
		return 2;
	}
	print_inputs(&p, &o, daly);

	unsigned one = spares_for(o.nodes, 1), two = spares_for(o.nodes, 2);
	struct {
		char name[48];
		enum goodput_restart restart;
		unsigned spares;
	} rows[] = {
		{ "requeue-only", GOODPUT_REQUEUE_ONLY, 0 },
		{ "in-allocation, 0 spares", GOODPUT_IN_ALLOCATION, 0 },
		{ "", GOODPUT_IN_ALLOCATION, o.spares },
		{ "", GOODPUT_IN_ALLOCATION, one },
		{ "", GOODPUT_IN_ALLOCATION, two },
		{ "in-allocation, free spare (bound)", GOODPUT_FREE_SPARES, 0 },
	};
	snprintf(rows[2].name, sizeof rows[2].name, "in-allocation, %u spares", o.spares);
	snprintf(rows[3].name, sizeof rows[3].name, "in-allocation, 1%% spares (%u)", one);
	snprintf(rows[4].name, sizeof rows[4].name, "in-allocation, 2%% spares (%u)", two);

	struct summary requeue_only = { 0 }, one_percent = { 0 }, s;
	printf("\n");
	print_header();
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		p.restart = rows[i].restart;
		p.spares = rows[i].spares;
		if (run_seeds(p, &o, &s) != 0)
			return 2;
		print_row(rows[i].name, &p, &s);
		if (i == 0)
			requeue_only = s;
		if (i == 3)
			one_percent = s;
	}
	printf("# 1st-ord assumes a spare at every failure and no time limit: fallbacks and stops cost\n"
	       "# what it leaves out; with 0 spares (fixed dp) every failure requeues: requeue-only's figure\n");
	p.restart = GOODPUT_REQUEUE_ONLY;
	p.spares = 0;
	print_goal(&p, &o, &requeue_only, &one_percent, one);
	return print_fair_regime(p, &o) == 0 ? 0 : 2;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_options.h - the command line of mlp_train.
 */
#ifndef MLP_OPTIONS_H
#define MLP_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#define MLP_PROG "mlp_train"
#define MLP_NO_RANK UINT32_MAX /* no fault of this kind asked for */

/* The model's global sizes: identical on every rank, whatever the layout. */
typedef struct mlp_dims {
	uint32_t in;     /* D: inputs per sample */
	uint32_t hidden; /* H: hidden units, split over tp */
	uint32_t out;    /* O: outputs per sample */
	uint32_t batch;  /* B: samples per step, split over dp */
} mlp_dims;

/* Faults for the tests: one rank hangs or crashes at the start of a step. */
typedef struct mlp_faults {
	uint32_t hang_rank, crash_rank; /* world ranks; MLP_NO_RANK: none */
	uint64_t hang_step, crash_step;
	bool always; /* also on restarted runs, not only on the first */
} mlp_faults;

typedef struct mlp_options {
	mlp_dims dims;
	uint64_t steps; /* steps of the whole training, over all runs */
	uint64_t seed;
	double lr;
	uint32_t sleep_ms;  /* per step, so a test can interrupt mid-way */
	uint32_t slow_rank; /* this world rank computes slow_ms longer each step; MLP_NO_RANK: none */
	uint32_t slow_ms;
	mlp_faults faults;
	bool grad_check; /* hidden: check the backward pass and exit */
} mlp_options;

/* What mlp_options_parse() decided. */
enum mlp_parse_result {
	MLP_PARSE_RUN,   /* options valid: go on */
	MLP_PARSE_HELP,  /* --help printed: exit 0 */
	MLP_PARSE_ERROR, /* a message naming the option printed: exit */
};

/*
 * Parse argv into *opts. Every rank parses the same command line, so every
 * rank prints the same error: the message goes to stderr, prefixed with the
 * program's name, and names the option and why it is refused.
 */
enum mlp_parse_result mlp_options_parse(int argc, char **argv, mlp_options *opts);

#endif /* MLP_OPTIONS_H */

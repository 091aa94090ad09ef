/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.h - how the cluster test programs (tests/runtime, tests/ckpt)
 * count checks and print them: every line starts "rank R: ", at most 12
 * "WRONG:" lines are printed, and the last line is the summary the bats
 * files look for, "rank R: N checks, M wrong".
 */
#ifndef LLMP_TESTS_REPORT_H
#define LLMP_TESTS_REPORT_H

#include <stdbool.h>
#include <stdint.h>

/* The rank printed in front of every line ("?" until known). */
void report_set_rank(uint32_t rank);

/* An informative line. */
void report_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Count one check, passed or not, without printing. */
void report_done(bool ok);

/* Count one check; if it failed, print "WRONG: " and the message. Returns ok. */
bool report_expect(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print a "WRONG: " line for a failure already counted (within the limit). */
void report_wrong(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

unsigned long report_wrong_count(void);

/* Print the summary line; 1 if anything was wrong, else 0 (an exit status). */
int report_summary(void);

#endif /* LLMP_TESTS_REPORT_H */

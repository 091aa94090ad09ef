/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fail.h - how the planner reports a failure: a status for the program and
 * a sentence for the person, written into the caller's optional buffer.
 * Not installed.
 */
#ifndef LLMP_FAIL_H
#define LLMP_FAIL_H

#include <stddef.h>

#include <llmp/llmp_status.h>

/* Format into msg (if not NULL) and return status. */
llmp_status llmp_fail(llmp_status status, char *msg, size_t msglen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * User text for a message: at most LLMP_SHOW_TEXT bytes of s[0..n) with every
 * byte that is not printable ASCII shown as '?', and "..." when cut, so a
 * message stays short and a hostile option cannot write escape sequences to a
 * terminal or a job log. Returns out, which needs LLMP_SHOW_MAX bytes.
 */
#define LLMP_SHOW_TEXT 40
#define LLMP_SHOW_MAX (LLMP_SHOW_TEXT + 4)
const char *llmp_show(char out[LLMP_SHOW_MAX], const char *s, size_t n);
/* The same into out of outlen (>= 4) bytes: at most outlen - 4 bytes of s, for longer text (a path). */
const char *llmp_show_in(char *out, size_t outlen, const char *s, size_t n);
/*
 * A whole message made one line, in place: every control byte (newline,
 * carriage return, escape, DEL) as '?', the same rule as llmp_show's for
 * those bytes. The last step of every sink that hands a message to Slurm's
 * logger or a job's output, which write it as it is: a newline in a user's
 * value would start a line of their choosing there. Returns msg.
 */
char *llmp_show_line(char *msg);

#endif /* LLMP_FAIL_H */

/*
 * fail.h - how the planner reports a failure: a status for the program and
 * a sentence for the person, written into the caller's optional buffer.
 * Not installed.
 */
#ifndef LLMP_FAIL_H
#define LLMP_FAIL_H

#include <stddef.h>

#include "llmp_status.h"

/* Format into msg (if not NULL) and return status. */
llmp_status llmp_fail(llmp_status status, char *msg, size_t msglen, const char *fmt,
		      ...) __attribute__((format(printf, 4, 5)));

#endif /* LLMP_FAIL_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_check.h - a property the fuzz targets check: traps (libFuzzer reports a crash) when false. */
#ifndef LLMP_FUZZ_CHECK_H
#define LLMP_FUZZ_CHECK_H

#define CHECK(cond)                       \
	do {                              \
		if (!(cond))              \
			__builtin_trap(); \
	} while (0)

#endif /* LLMP_FUZZ_CHECK_H */

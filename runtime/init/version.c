/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * version.c - llmp_version: which libllmp the program loaded. The headers'
 * LLMP_VERSION_* are configure.ac's version; tests/surface.bats checks it.
 */
#include <llmp/llmp.h>

unsigned llmp_version(void)
{
	return LLMP_VERSION;
}

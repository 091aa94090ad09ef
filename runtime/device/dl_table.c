/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dl_table.c - a dlopen'ed library's calls into a table, by name.
 */
#include "dl_table.h"

#include <dlfcn.h>
#include <string.h>

#include "common/fail.h"

llmp_status rt_dl_resolve(void *lib, const char *path, const struct rt_dl_symbol *syms, size_t n, void *table,
			  char *msg, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		/* POSIX allows converting dlsym's object pointer to a function pointer. */
		void *sym = dlsym(lib, syms[i].name);
		if (!sym)
			return llmp_fail(LLMP_ERR_UNSUPPORTED, msg, len, "%s has no %s", path, syms[i].name);
		memcpy((char *)table + syms[i].offset, &sym, sizeof sym);
	}
	return LLMP_OK;
}

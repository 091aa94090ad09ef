/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hostlist.h - Slurm's host lists, expanded: "dgx[001-003,007],login1" is
 * dgx001 dgx002 dgx003 dgx007 login1. One bracket per name, with numbers
 * or ranges inside; a range keeps the width of its lower bound
 * ("[08-10]": 08 09 10), as Slurm writes them.
 */
#ifndef LLMP_HOSTLIST_H
#define LLMP_HOSTLIST_H

#include <stddef.h>
#include <stdio.h>

#include <llmp/llmp_status.h>

#define HOSTLIST_NAME_MAX 63 /* bytes of one host name */

/*
 * The names of list, in its order, as one malloc'd array of malloc'd
 * strings (hostlist_free). More than max names, an empty name, a bad
 * range: LLMP_ERR_ARG and a message quoting the list.
 */
llmp_status hostlist_expand(const char *list, size_t max, char ***names, size_t *n, char *msg, size_t len);
void hostlist_free(char **names, size_t n);

/*
 * names[0..n) written to out as one host list that hostlist_expand reads
 * back as the same names in the same order: neighbours that differ only
 * in a counting number at the end share a bracket ("n[001-128,131]").
 * Names are written as they are, so each must be a valid host name.
 * Returns 0, or -1 when out failed.
 */
int hostlist_write(FILE *out, const char *const *names, size_t n);

#endif /* LLMP_HOSTLIST_H */

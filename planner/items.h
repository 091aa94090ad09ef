/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * items.h - the comma-separated items both option grammars are made of
 * (--llm-parallel, llmp_spec.c; --llm-checkpoint, llmp_ckpt_spec.c).
 * Not installed.
 */
#ifndef LLMP_ITEMS_H
#define LLMP_ITEMS_H

#include <stddef.h>

#include <llmp/llmp_status.h>

/* Parse one item, item[0..n) (never empty), into the caller's state. */
typedef llmp_status (*llmp_item_parser)(const char *item, size_t n, void *state, char *msg, size_t msglen);

/*
 * Hand each comma-separated item of text[0..len) to parse, in order, and
 * stop at the first error. An empty item (two commas in a row, or a comma
 * at an end) is an error naming its position.
 */
llmp_status plan_parse_items(const char *text, size_t len, llmp_item_parser parse, void *state, char *msg,
			     size_t msglen);

#endif /* LLMP_ITEMS_H */

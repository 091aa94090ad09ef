/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * items.c - split an option's text into its comma-separated items.
 */
#include "items.h"

#include "common/fail.h"

llmp_status plan_parse_items(const char *text, size_t len, llmp_item_parser parse, void *state, char *msg,
			     size_t msglen)
{
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && text[i] != ',')
			continue;
		if (i == start)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 "empty item at character %zu (two commas in a row, "
					 "or a comma at an end)",
					 start + 1);
		llmp_status st = parse(text + start, i - start, state, msg, msglen);
		if (st != LLMP_OK)
			return st;
		start = i + 1;
	}
	return LLMP_OK;
}

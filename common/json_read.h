/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * json_read.h - a JSON document read into a tree whose every value knows
 * its line, so whoever checks it can name the line of a culprit.
 *
 * Strict RFC 8259: no comments, no trailing commas, no NaN, strings of
 * valid escapes (\uXXXX pairs become UTF-8; a NUL is refused), at most
 * JSON_MAX_DEPTH deep. Duplicate keys are refused too: a reader would
 * otherwise pick one silently.
 */
#ifndef LLMP_JSON_READ_H
#define LLMP_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_status.h>

#define JSON_MAX_DEPTH 32

enum json_kind { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json_member;

struct json_value {
	enum json_kind kind;
	unsigned line;
	bool boolean;
	double number;
	bool integer;                /* a number without fraction or exponent that fits an int64 */
	int64_t int64;               /* its value then */
	char *string;                /* NUL-terminated (a NUL inside is refused) */
	struct json_value *items;    /* array */
	struct json_member *members; /* object, in file order */
	size_t n;                    /* items or members */
};

struct json_member {
	char *key;
	unsigned line; /* of the key */
	struct json_value value;
};

/*
 * Parse text[0..len) into *root. On failure returns LLMP_ERR_ARG (or
 * LLMP_ERR_NOMEM) with "line N: what" in msg, and *root holds nothing.
 */
llmp_status json_parse(const char *text, size_t len, struct json_value *root, char *msg, size_t msglen);
void json_free(struct json_value *v);

/* The member of object v named key, or NULL. */
const struct json_value *json_get(const struct json_value *v, const char *key);
/* "object", "array", ...: for messages. */
const char *json_kind_name(enum json_kind kind);

#endif /* LLMP_JSON_READ_H */

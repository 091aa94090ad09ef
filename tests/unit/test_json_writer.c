/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_json_writer.c - the tool's JSON writer (common/json_writer.h): commas,
 * nesting, escaping, numbers, and what it reports. Every expected document
 * is written out here by hand.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/json_writer.h"

/* The writer on a memory stream, and what it wrote. */
struct out {
	char *text;
	size_t len;
	FILE *f;
	struct json_writer w;
};

static void start(struct out *o)
{
	o->text = NULL;
	o->f = open_memstream(&o->text, &o->len);
	assert_non_null(o->f);
	json_begin(&o->w, o->f);
}

/* Ends the document; returns json_end's verdict, the text in o->text (free it). */
static bool finish(struct out *o)
{
	bool ok = json_end(&o->w);
	assert_int_equal(fclose(o->f), 0);
	return ok;
}

static void document(void **state)
{
	(void)state;
	struct out o;
	start(&o);
	json_object(&o.w, NULL);
	json_string(&o.w, "root", "/ck");
	json_string(&o.w, "latest", NULL);
	json_uint(&o.w, "step", UINT64_MAX);
	json_bool(&o.w, "ok", true);
	json_bool(&o.w, "bad", false);
	json_null(&o.w, "none");
	json_array(&o.w, "shape");
	json_uint(&o.w, NULL, 13);
	json_uint(&o.w, NULL, 10);
	json_array_end(&o.w);
	json_array(&o.w, "empty");
	json_array_end(&o.w);
	json_array(&o.w, "list");
	json_object(&o.w, NULL);
	json_object_end(&o.w);
	json_object(&o.w, NULL);
	json_double(&o.w, "x", 0.5);
	json_double(&o.w, "nan", NAN);
	json_object_end(&o.w);
	json_array_end(&o.w);
	json_object_end(&o.w);
	assert_true(finish(&o));
	assert_string_equal(o.text,
			    "{\"root\":\"/ck\",\"latest\":null,\"step\":18446744073709551615,\"ok\":true,"
			    "\"bad\":false,\"none\":null,\"shape\":[13,10],\"empty\":[],"
			    "\"list\":[{},{\"x\":0.5,\"nan\":null}]}\n");
	free(o.text);
}

static void escaping(void **state)
{
	(void)state;
	struct out o;
	start(&o);
	json_array(&o.w, NULL);
	json_string(&o.w, NULL, "quote \" backslash \\ slash /");
	json_string(&o.w, NULL, "nl \n cr \r tab \t bell \a del \x7f");
	json_string(&o.w, NULL, "caf\xc3\xa9"); /* UTF-8 passes through */
	json_array_end(&o.w);
	assert_true(finish(&o));
	assert_string_equal(o.text, "[\"quote \\\" backslash \\\\ slash /\","
				    "\"nl \\n cr \\r tab \\t bell \\u0007 del \\u007f\",\"caf\xc3\xa9\"]\n");
	free(o.text);
	/* keys are escaped too */
	start(&o);
	json_object(&o.w, NULL);
	json_uint(&o.w, "a\"b", 1);
	json_object_end(&o.w);
	assert_true(finish(&o));
	assert_string_equal(o.text, "{\"a\\\"b\":1}\n");
	free(o.text);
}

static void misuse_is_reported(void **state)
{
	(void)state;
	struct out o;
	/* left open */
	start(&o);
	json_object(&o.w, NULL);
	assert_false(finish(&o));
	free(o.text);
	/* closed once too often */
	start(&o);
	json_array(&o.w, NULL);
	json_array_end(&o.w);
	json_array_end(&o.w);
	assert_false(finish(&o));
	free(o.text);
	/* deeper than JSON_WRITER_DEPTH */
	start(&o);
	for (int i = 0; i <= JSON_WRITER_DEPTH; i++)
		json_array(&o.w, NULL);
	for (int i = 0; i <= JSON_WRITER_DEPTH; i++)
		json_array_end(&o.w);
	assert_false(finish(&o));
	free(o.text);
	/* exactly JSON_WRITER_DEPTH is fine */
	start(&o);
	for (int i = 0; i < JSON_WRITER_DEPTH; i++)
		json_array(&o.w, NULL);
	for (int i = 0; i < JSON_WRITER_DEPTH; i++)
		json_array_end(&o.w);
	assert_true(finish(&o));
	free(o.text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(document),
		cmocka_unit_test(escaping),
		cmocka_unit_test(misuse_is_reported),
	};
	return cmocka_run_group_tests_name("json_writer", tests, NULL, NULL);
}

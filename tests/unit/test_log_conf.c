/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_log_conf.c - LLMP_DEBUG read into a level per part
 * (runtime/comm/log_conf.c, compiled here alone): the default, every level,
 * parts taking the level alone while the others stay at info, any case; and
 * every malformed value refused with a message naming the variable and the
 * word, the configuration left at the default. Expected levels and messages
 * are written out by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/comm/log.h"

/* The levels of comm, coll, device, ckpt, job and init, as one string ("iiiiii"). */
static const char *levels(const struct rt_log_conf *c)
{
	static char out[RT_LOG_NPARTS + 1];
	for (int p = 0; p < RT_LOG_NPARTS; p++)
		out[p] = "nwidt"[c->level[p]];
	out[RT_LOG_NPARTS] = '\0';
	return out;
}

static void good(const char *text, const char *want, bool set)
{
	struct rt_log_conf c;
	char msg[256] = "untouched";
	assert_int_equal(rt_log_conf_parse(text, &c, msg, sizeof msg), 0);
	assert_string_equal(levels(&c), want);
	assert_int_equal(c.set, set);
	assert_string_equal(msg, "untouched");
}

static void refused(const char *text, const char *want)
{
	struct rt_log_conf c;
	char msg[256] = "";
	memset(&c, 0x5a, sizeof c);
	assert_int_equal(rt_log_conf_parse(text, &c, msg, sizeof msg), -1);
	assert_string_equal(msg, want);
	assert_string_equal(levels(&c), "iiiiii"); /* the default, as if unset */
	assert_false(c.set);
}

static void unset_is_info_everywhere_in_the_old_format(void **state)
{
	(void)state;
	good(NULL, "iiiiii", false);
	good("", "iiiiii", false);
}

static void each_level_for_every_part(void **state)
{
	(void)state;
	good("none", "nnnnnn", true);
	good("warn", "wwwwww", true);
	good("info", "iiiiii", true); /* the default's levels, but the fixed format */
	good("debug", "dddddd", true);
	good("trace", "tttttt", true);
	good("DEBUG", "dddddd", true); /* NCCL_DEBUG=INFO's habit */
	good("Trace", "tttttt", true);
}

static void parts_take_the_level_alone(void **state)
{
	(void)state;
	/* comm coll device ckpt job init */
	good("debug,ckpt", "iiidii", true);
	good("trace,comm,device", "titiii", true);
	good("debug,init,job,coll", "idiidd", true);
	good("debug,ckpt,ckpt", "iiidii", true);
	good("TRACE,Ckpt", "iiitii", true);
	/* Below info, the named parts and the others alike. */
	good("warn,ckpt", "wwwwww", true);
	good("none,comm", "nnnnnn", true);
}

static void malformed_values_name_the_variable_and_the_word(void **state)
{
	(void)state;
	refused("debgu", "LLMP_DEBUG='debgu': 'debgu' is not a level (expected LEVEL[,PART...], LEVEL one of "
			 "none, warn, info, debug or trace)");
	refused("ckpt", "LLMP_DEBUG='ckpt': 'ckpt' is not a level (expected LEVEL[,PART...], LEVEL one of "
			"none, warn, info, debug or trace)");
	refused("debug,ckp",
		"LLMP_DEBUG='debug,ckp': 'ckp' is not a part (expected comm, coll, device, ckpt, job or init)");
	refused("debug,info",
		"LLMP_DEBUG='debug,info': 'info' is a second level (one level, then parts: comm, "
		"coll, device, ckpt, job or init)");
	refused("debug,", "LLMP_DEBUG='debug,': an empty word (expected LEVEL[,PART...], e.g. debug,ckpt)");
	refused(",debug", "LLMP_DEBUG=',debug': an empty word (expected LEVEL[,PART...], e.g. debug,ckpt)");
	refused("debug,,ckpt",
		"LLMP_DEBUG='debug,,ckpt': an empty word (expected LEVEL[,PART...], e.g. debug,ckpt)");
	refused("debug ckpt",
		"LLMP_DEBUG='debug ckpt': 'debug ckpt' is not a level (expected LEVEL[,PART...], "
		"LEVEL one of none, warn, info, debug or trace)");
	refused("1", "LLMP_DEBUG='1': '1' is not a level (expected LEVEL[,PART...], LEVEL one of none, warn, "
		     "info, debug or trace)");
	/* A long word is cut in the message, which stays one short line. */
	refused("debug,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"LLMP_DEBUG='debug,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa': 'aaaaaaaaaaaaaaaaaaaaaaaa' is not a part "
		"(expected comm, coll, device, ckpt, job or init)");
}

static void names_of_levels_and_parts(void **state)
{
	(void)state;
	assert_string_equal(rt_log_level_name(RT_LOG_DEBUG), "debug");
	assert_string_equal(rt_log_level_name(RT_LOG_WARN), "warn");
	assert_string_equal(rt_log_part_name(RT_LOG_CKPT), "ckpt");
	assert_string_equal(rt_log_part_name(RT_LOG_INIT), "init");
	assert_string_equal(rt_log_level_name((enum rt_log_level)99), "?");
	assert_string_equal(rt_log_part_name((enum rt_log_part) - 1), "?");
	/* A message buffer too small is cut, never overrun. */
	struct rt_log_conf c;
	char small[12];
	assert_int_equal(rt_log_conf_parse("x", &c, small, sizeof small), -1);
	assert_string_equal(small, "LLMP_DEBUG=");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unset_is_info_everywhere_in_the_old_format),
		cmocka_unit_test(each_level_for_every_part),
		cmocka_unit_test(parts_take_the_level_alone),
		cmocka_unit_test(malformed_values_name_the_variable_and_the_word),
		cmocka_unit_test(names_of_levels_and_parts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

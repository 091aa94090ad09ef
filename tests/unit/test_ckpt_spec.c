/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ckpt_spec.c - the --llm-checkpoint grammar (include/llmp/llmp_ckpt_spec.h):
 * the directory in every position and form, every key, the defaults that
 * check fills, the layering of sources, the canonical printer and its round
 * trip, every rejection with a message that names the culprit, and the
 * boundaries of numbers and lengths.
 *
 * Expected values are written out by hand from the grammar, never taken from
 * the code under test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <llmp/llmp_ckpt_spec.h>

#define ARRAY_LEN(a) (sizeof a / sizeof((a)[0]))
#define GIVEN_ALL \
	(LLMP_CKPT_GIVEN_DIR | LLMP_CKPT_GIVEN_EVERY | LLMP_CKPT_GIVEN_KEEP | LLMP_CKPT_GIVEN_RESTARTS)

/* ------------------------------------------------------------ helpers */

static void assert_msg_has(const char *msg, const char *needle, const char *input)
{
	if (!strstr(msg, needle))
		fail_msg("message for '%s' is \"%s\": it lacks \"%s\"", input, msg, needle);
}

/* Every byte printable ASCII: nothing of the user's raw bytes gets through. */
static void assert_msg_printable(const char *msg)
{
	for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			fail_msg("message \"%s\" holds byte 0x%02x", msg, *p);
}

/* text must parse (partially); returns the spec. */
static llmp_ckpt_spec accept(const char *text)
{
	char msg[LLMP_MSG_MAX] = "";
	llmp_ckpt_spec spec;

	memset(&spec, 0x5a, sizeof spec); /* garbage the parser must overwrite */
	llmp_status st = llmp_ckpt_spec_parse_partial(text, &spec, msg, sizeof msg);
	if (st != LLMP_OK)
		fail_msg("'%s' rejected (%d): %s", text, st, msg);
	return spec;
}

/* text must parse and pass the check; returns the checked spec. */
static llmp_ckpt_spec accept_checked(const char *text)
{
	char msg[LLMP_MSG_MAX] = "";
	llmp_ckpt_spec spec = accept(text);

	if (llmp_ckpt_spec_check(&spec, msg, sizeof msg) != LLMP_OK)
		fail_msg("'%s' refused by check: %s", text, msg);
	return spec;
}

/*
 * text must be rejected by parse_partial with status; the message must hold
 * every one of the NULL-terminated needles and be printable. Returns the
 * message (static storage).
 */
static const char *reject_status(const char *text, llmp_status status, ...)
{
	static char msg[LLMP_MSG_MAX];
	const char *needle, *shown = text ? text : "(null)";
	llmp_ckpt_spec spec;
	va_list ap;

	strcpy(msg, "(no message written)");
	llmp_status got = llmp_ckpt_spec_parse_partial(text, &spec, msg, sizeof msg);
	if (got != status)
		fail_msg("'%s': status %d, expected %d (message \"%s\")", shown, got, status, msg);
	if (strcmp(msg, "(no message written)") == 0 || msg[0] == '\0')
		fail_msg("'%s': rejected without a message", shown);
	va_start(ap, status);
	while ((needle = va_arg(ap, const char *)) != NULL)
		assert_msg_has(msg, needle, shown);
	va_end(ap);
	assert_msg_printable(msg);
	return msg;
}

#define REJECT(text, ...) reject_status((text), LLMP_ERR_SPEC, __VA_ARGS__, (const char *)NULL)

/* A string of n copies of c (static storage, one at a time). */
#define REPEAT_MAX (2 * LLMP_CKPT_SPEC_MAX_LEN)
#define TEXT_MAX (REPEAT_MAX + 128) /* room for a repeat() and some items */
static const char *repeat(char c, size_t n)
{
	static char buf[REPEAT_MAX];

	assert_true(n < sizeof buf);
	memset(buf, c, n);
	buf[n] = '\0';
	return buf;
}

/* ------------------------------------------------------ accepted input */

static void init_is_empty(void **state)
{
	(void)state;
	llmp_ckpt_spec s;

	memset(&s, 0x5a, sizeof s);
	llmp_ckpt_spec_init(&s);
	assert_string_equal(s.dir, "");
	assert_int_equal(s.every, 0);
	assert_false(s.every_minutes);
	assert_int_equal(s.keep, 0);
	assert_int_equal(s.max_restarts, 0);
	assert_int_equal(s.given, 0);
	assert_false(s.help);
}

static void dir_alone_gets_the_defaults(void **state)
{
	(void)state;
	llmp_ckpt_spec s = accept("/scratch/run1");

	assert_string_equal(s.dir, "/scratch/run1");
	assert_int_equal(s.given, LLMP_CKPT_GIVEN_DIR);
	assert_int_equal(s.keep, 0); /* not filled before the check */

	s = accept_checked("/scratch/run1");
	assert_string_equal(s.dir, "/scratch/run1");
	assert_int_equal(s.every, 0); /* only when asked to stop */
	assert_false(s.every_minutes);
	assert_int_equal(s.keep, 2);
	assert_int_equal(s.max_restarts, 3);
	assert_int_equal(s.given, LLMP_CKPT_GIVEN_DIR); /* check keeps given */
	assert_false(s.help);
}

static void each_key(void **state)
{
	(void)state;
	llmp_ckpt_spec s;

	s = accept("d,every=100");
	assert_int_equal(s.every, 100);
	assert_false(s.every_minutes);
	assert_int_equal(s.given, LLMP_CKPT_GIVEN_DIR | LLMP_CKPT_GIVEN_EVERY);

	s = accept("d,every=30min");
	assert_int_equal(s.every, 30);
	assert_true(s.every_minutes);

	s = accept("d,keep=5");
	assert_int_equal(s.keep, 5);
	assert_int_equal(s.given, LLMP_CKPT_GIVEN_DIR | LLMP_CKPT_GIVEN_KEEP);

	s = accept("d,restarts=7");
	assert_int_equal(s.max_restarts, 7);
	assert_int_equal(s.given, LLMP_CKPT_GIVEN_DIR | LLMP_CKPT_GIVEN_RESTARTS);

	/* restarts=0 is a real value (never requeue after a failure), not "unset". */
	s = accept_checked("d,restarts=0");
	assert_int_equal(s.max_restarts, 0);
	assert_int_equal(s.keep, 2);

	s = accept("dir=/a/b");
	assert_string_equal(s.dir, "/a/b");
	assert_int_equal(s.given, LLMP_CKPT_GIVEN_DIR);

	/* Keys only, no directory: a partial spec (a site default, say). */
	s = accept("every=30min,keep=3,restarts=5");
	assert_int_equal(s.given, GIVEN_ALL & ~LLMP_CKPT_GIVEN_DIR);
	assert_string_equal(s.dir, "");
	assert_int_equal(s.every, 30);
	assert_true(s.every_minutes);
	assert_int_equal(s.keep, 3);
	assert_int_equal(s.max_restarts, 5);
}

static void dir_in_any_position_and_form(void **state)
{
	(void)state;
	static const char *const texts[] = {
		"/x/y,every=5,keep=3",     "every=5,/x/y,keep=3",     "every=5,keep=3,/x/y",
		"dir=/x/y,every=5,keep=3", "every=5,dir=/x/y,keep=3", "keep=3,every=5,dir=/x/y",
	};
	for (size_t i = 0; i < ARRAY_LEN(texts); i++) {
		llmp_ckpt_spec s = accept(texts[i]);
		assert_string_equal(s.dir, "/x/y");
		assert_int_equal(s.every, 5);
		assert_int_equal(s.keep, 3);
		assert_int_equal(s.given, GIVEN_ALL & ~LLMP_CKPT_GIVEN_RESTARTS);
	}
	/* A relative directory, one with spaces, '=' through dir=, UTF-8. */
	assert_string_equal(accept("ckpt").dir, "ckpt");
	assert_string_equal(accept("./my run").dir, "./my run");
	assert_string_equal(accept("dir=/a=b/c").dir, "/a=b/c");
	assert_string_equal(accept("/data/\xc3\xa9t\xc3\xa9").dir, "/data/\xc3\xa9t\xc3\xa9");
	/* "help" as a directory needs dir= or a path. */
	assert_string_equal(accept("dir=help").dir, "help");
	assert_string_equal(accept("./help").dir, "./help");
}

static void repeated_keys_last_wins(void **state)
{
	(void)state;
	llmp_ckpt_spec s;

	s = accept("d,keep=3,keep=4");
	assert_int_equal(s.keep, 4);
	/* A later every in steps clears the earlier unit. */
	s = accept("d,every=5min,every=7");
	assert_int_equal(s.every, 7);
	assert_false(s.every_minutes);
	s = accept("d,every=7,every=5min");
	assert_int_equal(s.every, 5);
	assert_true(s.every_minutes);
	s = accept("dir=/a,dir=/b");
	assert_string_equal(s.dir, "/b");
	s = accept("d,restarts=9,restarts=0");
	assert_int_equal(s.max_restarts, 0);
}

static void help_alone(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	llmp_ckpt_spec s = accept("help");

	assert_true(s.help);
	assert_int_equal(s.given, 0);
	assert_string_equal(s.dir, "");
	/* The check refuses it: a caller must answer help before checking. */
	assert_int_equal(llmp_ckpt_spec_check(&s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "'help'", "help");
	REJECT("help,keep=2", "'help' must be given alone", "dir=help");
	REJECT("/a,help", "'help' must be given alone");
}

static void grammar_names_every_key(void **state)
{
	(void)state;
	const char *g = llmp_ckpt_spec_grammar();
	static const char *const words[] = { "DIR",
					     "dir=DIR",
					     "every=N",
					     "every=Nmin",
					     "keep=N",
					     "restarts=N",
					     "help",
					     "(default 2)",
					     "(default 3)",
					     "files=rank|node",
					     "stripe=COUNT[:SIZE][:POOL]" };
	for (size_t i = 0; i < ARRAY_LEN(words); i++)
		if (!strstr(g, words[i]))
			fail_msg("grammar lacks '%s'", words[i]);
}

/* ---------------------------------------------------------- rejections */

static void null_empty_and_empty_items(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];

	reject_status(NULL, LLMP_ERR_ARG, "no checkpoint spec given", (const char *)NULL);
	assert_int_equal(llmp_ckpt_spec_parse_partial("d", NULL, msg, sizeof msg), LLMP_ERR_ARG);
	REJECT("", "empty checkpoint spec", "DIR[,every=N|Nmin]");
	REJECT(",d", "empty item at character 1");
	REJECT("d,", "empty item at character 3");
	REJECT("d,,keep=1", "empty item at character 3");
	REJECT(",", "empty item at character 1");
	/* No message buffer: still a status, no crash. */
	assert_int_equal(llmp_ckpt_spec_parse_partial("", &(llmp_ckpt_spec){ 0 }, NULL, 0), LLMP_ERR_SPEC);
}

static void two_directories(void **state)
{
	(void)state;
	/* A comma inside a path must not pass as a second item. */
	REJECT("/a,b", "'b': a second directory after '/a'", "cannot contain a comma");
	REJECT("dir=/a,b", "'b': a second directory after '/a'");
	REJECT("/a,dir=/b", "'dir=/b': a second directory after '/a'", "dir=DIR");
	REJECT("/a,keep=2,/b", "'/b': a second directory after '/a'");
}

static void keys_and_values_missing_or_unknown(void **state)
{
	(void)state;
	REJECT("d,=5", "'=5': missing key before '='");
	REJECT("d,keep=", "keep=: missing value");
	REJECT("d,every=", "every=: missing value");
	REJECT("d,restarts=", "restarts=: missing value");
	REJECT("dir=", "dir=: missing value");
	REJECT("d,kep=3", "unknown key 'kep'", "known keys: dir every keep restarts files stripe");
	REJECT("d,files=", "files=: missing value");
	/* The value is named with the key, and what it may be. */
	REJECT("d,files=nodes", "files=nodes: must be rank", "or node");
	REJECT("d,files=Node", "files=Node: must be rank");
	REJECT("d,files=1", "files=1: must be rank");
	REJECT("d,Keep=3", "unknown key 'Keep'");
	REJECT("d,every_min=3", "unknown key 'every_min'");
	/* A path with '=' reads as a key: the message says how to write it. */
	REJECT("/a=b", "unknown key '/a'", "dir=DIR");
}

static void numbers_below_the_minimum(void **state)
{
	(void)state;
	REJECT("d,every=0", "every=0: must be at least 1");
	REJECT("d,every=0min", "every=0min: must be at least 1");
	REJECT("d,keep=0", "keep=0: must be at least 1");
	REJECT("d,keep=-1", "keep=-1: must be at least 1");
	REJECT("d,every=-5", "every=-5: must be at least 1");
	REJECT("d,every=-5min", "every=-5min: must be at least 1");
	REJECT("d,restarts=-1", "restarts=-1: must not be negative");
	REJECT("d,keep=00", "keep=00: must be at least 1");
}

static void values_that_are_not_numbers(void **state)
{
	(void)state;
	static const char *const keep_bad[] = {
		"x", "1x", "+1", " 1", "1 ", "0x10", "1.5", "-", "--1", "1e3"
	};
	char text[64];

	for (size_t i = 0; i < ARRAY_LEN(keep_bad); i++) {
		char want[64];
		snprintf(text, sizeof text, "d,keep=%s", keep_bad[i]);
		snprintf(want, sizeof want, "keep=%s: not a number", keep_bad[i]);
		REJECT(text, want);
	}
	REJECT("d,restarts=many", "restarts=many: not a number");
	static const char *const every_bad[] = {
		"5m", "5MIN", "min", "5mins", "5 min", "x", "min5", "5minmin"
	};
	for (size_t i = 0; i < ARRAY_LEN(every_bad); i++) {
		char want[64];
		snprintf(text, sizeof text, "d,every=%s", every_bad[i]);
		snprintf(want, sizeof want, "every=%s: not a number", every_bad[i]);
		REJECT(text, want, "steps (N) or minutes (Nmin)");
	}
}

static void number_boundaries(void **state)
{
	(void)state;
	llmp_ckpt_spec s;

	s = accept("d,every=1,keep=1,restarts=0");
	assert_int_equal(s.every, 1);
	assert_int_equal(s.keep, 1);
	assert_int_equal(s.max_restarts, 0);
	s = accept("d,every=1min");
	assert_int_equal(s.every, 1);
	assert_true(s.every_minutes);

	/* The largest accepted, 10^9, for each key; one more is refused. */
	s = accept("d,every=1000000000,keep=1000000000,restarts=1000000000");
	assert_int_equal(s.every, 1000000000u);
	assert_int_equal(s.keep, 1000000000u);
	assert_int_equal(s.max_restarts, 1000000000u);
	assert_int_equal(accept("d,every=1000000000min").every, 1000000000u);
	assert_int_equal(accept("d,keep=0001000000000").keep, 1000000000u);
	REJECT("d,every=1000000001", "every=1000000001: larger than the largest accepted, 1000000000");
	REJECT("d,every=1000000001min", "every=1000000001min: larger than");
	REJECT("d,keep=1000000001", "keep=1000000001: larger than the largest accepted");
	REJECT("d,restarts=1000000001", "restarts=1000000001: larger than");
	/* Values that wrap a 32- or 64-bit integer are still refused. */
	REJECT("d,keep=4294967296", "keep=4294967296: larger than");
	REJECT("d,keep=4294967297", "keep=4294967297: larger than");
	REJECT("d,restarts=18446744073709551617", "restarts=18446744073709551617: larger than");
	REJECT("d,every=99999999999999999999999999999999min", "every=", "larger than");
}

static void directory_length_and_bytes(void **state)
{
	(void)state;
	char text[TEXT_MAX];
	llmp_ckpt_spec s;

	/* The longest directory, LLMP_CKPT_DIR_MAX - 1 = 1023 bytes, bare and keyed. */
	snprintf(text, sizeof text, "/%s,every=10min,keep=9,restarts=9", repeat('a', 1022));
	s = accept(text);
	assert_int_equal(strlen(s.dir), 1023);
	assert_int_equal(s.dir[0], '/');
	snprintf(text, sizeof text, "dir=/%s", repeat('b', 1022));
	assert_int_equal(strlen(accept(text).dir), 1023);
	/* One byte more is refused by name. */
	snprintf(text, sizeof text, "/%s", repeat('a', 1023));
	REJECT(text, "directory is longer than 1023 bytes", "'/aaaa");
	snprintf(text, sizeof text, "dir=/%s,keep=1", repeat('b', 1023));
	REJECT(text, "directory is longer than 1023 bytes", "'dir=/bbb");
	/* The whole text is bounded too: 1184 characters at most (DIR and the canonical keys). */
	assert_int_equal(LLMP_CKPT_SPEC_MAX_LEN, 1184);
	snprintf(text, sizeof text, "d,%s", repeat(',', 1182));
	assert_int_equal(strlen(text), 1184);
	REJECT(text, "empty item"); /* 1184 is read (and is wrong) */
	snprintf(text, sizeof text, "d%s", repeat(',', 1184));
	REJECT(text, "checkpoint spec is longer than 1184 characters");

	/* Control characters are refused and never echoed. */
	REJECT("/a\nb", "'/a?b': control character at byte 3 of the directory");
	REJECT("dir=/x\tz", "'dir=/x?z': control character at byte 3");
	REJECT("/\x1b[31mred", "control character at byte 2");
	REJECT("ok\x7f", "control character at byte 3");
	REJECT("d,\x1b[2J=1", "unknown key '?[2J'");
}

static void check_requires_a_directory(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	llmp_ckpt_spec s;

	s = accept("every=100,keep=4");
	assert_int_equal(llmp_ckpt_spec_check(&s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_string_equal(msg, "no checkpoint directory given (DIR or dir=DIR)");
	llmp_ckpt_spec_init(&s);
	assert_int_equal(llmp_ckpt_spec_check(&s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "no checkpoint directory", "(empty)");
	assert_int_equal(llmp_ckpt_spec_check(NULL, msg, sizeof msg), LLMP_ERR_ARG);
	/* Given values are kept; only missing ones get defaults. */
	s = accept_checked("d,keep=7");
	assert_int_equal(s.keep, 7);
	assert_int_equal(s.max_restarts, 3);
	s = accept_checked("d,restarts=1");
	assert_int_equal(s.keep, 2);
	assert_int_equal(s.max_restarts, 1);
}

/* ------------------------------------------------------------- overlay */

static void overlay_precedence(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	/* site < LLMP_CHECKPOINT < --llm-checkpoint, key by key */
	llmp_ckpt_spec site = accept("every=30min,keep=3,restarts=5");
	llmp_ckpt_spec env = accept("/env,keep=4");
	llmp_ckpt_spec opt = accept("/opt,every=100");
	llmp_ckpt_spec s;

	llmp_ckpt_spec_init(&s);
	llmp_ckpt_spec_overlay(&s, &site);
	llmp_ckpt_spec_overlay(&s, &env);
	llmp_ckpt_spec_overlay(&s, &opt);
	assert_int_equal(llmp_ckpt_spec_check(&s, msg, sizeof msg), LLMP_OK);
	assert_string_equal(s.dir, "/opt");  /* option over env */
	assert_int_equal(s.every, 100);      /* option over site... */
	assert_false(s.every_minutes);       /* ...unit included */
	assert_int_equal(s.keep, 4);         /* env over site */
	assert_int_equal(s.max_restarts, 5); /* site */
	assert_int_equal(s.given, GIVEN_ALL);

	/* The other way round: the site's minutes come back over steps. */
	llmp_ckpt_spec_init(&s);
	llmp_ckpt_spec_overlay(&s, &opt);
	llmp_ckpt_spec_overlay(&s, &site);
	assert_int_equal(s.every, 30);
	assert_true(s.every_minutes);
	assert_string_equal(s.dir, "/opt"); /* the site gave none: kept */

	/* files= layers like the others: a site's files=node, then an option's files=rank. */
	llmp_ckpt_spec site_node = accept("files=node"), opt_rank = accept("files=rank");
	llmp_ckpt_spec_overlay(&s, &site_node);
	llmp_ckpt_spec_overlay(&s, &env); /* gives no files=: the site's stays */
	assert_true(s.node_files);
	llmp_ckpt_spec_overlay(&s, &opt_rank);
	assert_false(s.node_files);
	llmp_ckpt_spec_overlay(&s, &opt); /* the option's directory back, files=rank kept */
	assert_false(s.node_files);

	/* stripe= layers whole: an option's count drops the site's size and pool. */
	llmp_ckpt_spec site_stripe = accept("stripe=4:1M:flash"), opt_stripe = accept("stripe=-1");
	llmp_ckpt_spec_overlay(&s, &site_stripe);
	llmp_ckpt_spec_overlay(&s, &env); /* gives no stripe=: the site's stays */
	assert_int_equal(s.stripe_count, 4);
	assert_true(s.stripe_size == 1048576);
	assert_string_equal(s.stripe_pool, "flash");
	llmp_ckpt_spec_overlay(&s, &opt_stripe);
	assert_int_equal(s.stripe_count, -1);
	assert_true(s.stripe_size == 0);
	assert_string_equal(s.stripe_pool, "");
	llmp_ckpt_spec_overlay(&s, &opt); /* the option's directory back, stripe=-1 kept */
	assert_int_equal(s.stripe_count, -1);

	/* An overlay of nothing keeps everything. */
	llmp_ckpt_spec none, before;
	llmp_ckpt_spec_init(&none);
	before = s;
	llmp_ckpt_spec_overlay(&s, &none);
	assert_memory_equal(&s, &before, sizeof s);

	/* A help request anywhere carries over. */
	llmp_ckpt_spec help = accept("help");
	llmp_ckpt_spec_overlay(&s, &help);
	assert_true(s.help);
	assert_string_equal(s.dir, "/opt");
}

/* -------------------------------------------------------------- stripe= */

/* Values worked out by hand: K, M, G are 2^10, 2^20, 2^30 bytes. */
static void stripe_accepted(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int32_t count;
		uint64_t size;
		const char *pool;
	} cases[] = {
		{ "d,stripe=1", 1, 0, "" },
		{ "d,stripe=-1", -1, 0, "" },
		{ "d,stripe=2000", 2000, 0, "" },
		{ "d,stripe=8:4M", 8, 4194304, "" },
		{ "d,stripe=8:4m", 8, 4194304, "" },
		{ "d,stripe=8:65536", 8, 65536, "" },
		{ "d,stripe=8:64K", 8, 65536, "" },
		{ "d,stripe=8:3G", 8, 3221225472u, "" },
		{ "d,stripe=8:4194240K", 8, 4294901760u, "" }, /* 4G - 64K, the largest */
		{ "d,stripe=4:1M:flash", 4, 1048576, "flash" },
		{ "d,stripe=4::flash", 4, 0, "flash" },
		{ "d,stripe=-1::A_b-9", -1, 0, "A_b-9" },
		{ "d,stripe=2,stripe=3:1M", 3, 1048576, "" }, /* the last wins, whole */
		{ "d,stripe=2::x,stripe=3", 3, 0, "" },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		llmp_ckpt_spec s = accept_checked(cases[i].text);
		if (s.stripe_count != cases[i].count || s.stripe_size != cases[i].size ||
		    strcmp(s.stripe_pool, cases[i].pool) != 0)
			fail_msg("'%s': count %d size %llu pool '%s'", cases[i].text, (int)s.stripe_count,
				 (unsigned long long)s.stripe_size, s.stripe_pool);
		assert_true(s.given & LLMP_CKPT_GIVEN_STRIPE);
	}
	/* Not given: count 0, and the flag unset. */
	llmp_ckpt_spec s = accept_checked("d");
	assert_int_equal(s.stripe_count, 0);
	assert_false(s.given & LLMP_CKPT_GIVEN_STRIPE);
}

static void stripe_rejected_naming_the_key(void **state)
{
	(void)state;
	REJECT("d,stripe=", "stripe=: missing value");
	REJECT("d,stripe=0", "stripe=0: must be at least 1");
	REJECT("d,stripe=-2", "stripe=-2: count must be -1 (all OSTs) or 1..2000");
	REJECT("d,stripe=2001", "stripe=2001: count must be -1 (all OSTs) or 1..2000");
	REJECT("d,stripe=all", "stripe=all: not a number of OSTs");
	REJECT("d,stripe=:1M", "stripe=:1M: not a number of OSTs");
	REJECT("d,stripe=4:", "stripe=4:: empty size");
	REJECT("d,stripe=4:1000", "stripe=4:1000: size must be a multiple of 64K below 4G");
	REJECT("d,stripe=4:4G", "stripe=4:4G: size must be a multiple of 64K below 4G");
	REJECT("d,stripe=4:0", "stripe=4:0: size must be a multiple of 64K");
	REJECT("d,stripe=4:99999999999999999999999G", "size must be a multiple of 64K below 4G");
	REJECT("d,stripe=4:1T", "stripe=4:1T: size is not a number of bytes");
	REJECT("d,stripe=4:K", "stripe=4:K: size is not a number of bytes");
	REJECT("d,stripe=4:1M:", "stripe=4:1M:: pool name must be 1-15 characters");
	REJECT("d,stripe=4:1M:abcdefghijklmnop", "pool name must be 1-15 characters");
	REJECT("d,stripe=4:1M:fs.pool", "stripe=4:1M:fs.pool: pool may hold only letters, digits");
	REJECT("d,stripe=4:1M:a b", "pool may hold only");
	REJECT("d,stripe=4:1M:p:q", "stripe=4:1M:p:q: more than COUNT:SIZE:POOL");
	REJECT("d,stripe=4:\x1b", "stripe=4:?:", "size is not a number");
}

/* The check llmp_ckpt_open shares, on values that never went through text. */
static void stripe_check_values(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	assert_int_equal(llmp_ckpt_stripe_check(0, 0, NULL, msg, sizeof msg), LLMP_OK);
	assert_int_equal(llmp_ckpt_stripe_check(-1, 65536, "p", msg, sizeof msg), LLMP_OK);
	assert_int_equal(llmp_ckpt_stripe_check(2000, 4294901760u, "", msg, sizeof msg), LLMP_OK);
	assert_int_equal(llmp_ckpt_stripe_check(0, 65536, NULL, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "stripe=: a stripe size or pool needs a stripe count", "0,65536");
	assert_int_equal(llmp_ckpt_stripe_check(0, 0, "p", msg, sizeof msg), LLMP_ERR_SPEC);
	assert_int_equal(llmp_ckpt_stripe_check(-2, 0, NULL, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "count -2 is not -1 (all OSTs) or 1..2000", "-2");
	assert_int_equal(llmp_ckpt_stripe_check(2001, 0, NULL, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_int_equal(llmp_ckpt_stripe_check(1, 65537, NULL, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "size 65537 bytes is not a multiple of 64K below 4G", "65537");
	assert_int_equal(llmp_ckpt_stripe_check(1, 4294967296u, NULL, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_int_equal(llmp_ckpt_stripe_check(1, 0, "0123456789abcdef", msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "pool name longer than 15 characters", "16 characters");
	assert_int_equal(llmp_ckpt_stripe_check(1, 0, "a/b", msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "pool 'a/b' may hold only letters", "a/b");
}

/* -------------------------------------------------------------- format */

static void format_canonical_text(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "/scratch/run1", "/scratch/run1,keep=2,restarts=3" },
		{ "restarts=0,keep=9,every=100,ckpt", "ckpt,every=100,keep=9,restarts=0" },
		{ "every=30min,dir=/a", "/a,every=30min,keep=2,restarts=3" },
		{ "dir=/a=b", "dir=/a=b,keep=2,restarts=3" },
		{ "dir=help", "dir=help,keep=2,restarts=3" },
		{ "./help", "./help,keep=2,restarts=3" },
		{ "./my run,every=1min", "./my run,every=1min,keep=2,restarts=3" },
		/* files=rank is the default and not printed, so older readers see the old text. */
		{ "/a,files=rank", "/a,keep=2,restarts=3" },
		{ "files=node,/a", "/a,keep=2,restarts=3,files=node" },
		{ "/a,files=node,files=rank", "/a,keep=2,restarts=3" },
		/* stripe=: the size in its largest exact unit, an empty size kept before a pool. */
		{ "/a,stripe=8", "/a,keep=2,restarts=3,stripe=8" },
		{ "/a,stripe=-1:1048576", "/a,keep=2,restarts=3,stripe=-1:1M" },
		{ "/a,stripe=4:2048m:flash", "/a,keep=2,restarts=3,stripe=4:2G:flash" },
		{ "/a,stripe=2:192K", "/a,keep=2,restarts=3,stripe=2:192K" },
		{ "stripe=2000::ssd_pool-1,/a,files=node",
		  "/a,keep=2,restarts=3,files=node,stripe=2000::ssd_pool-1" },
	};
	char out[LLMP_CKPT_SPEC_MAX_LEN + 1];

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		llmp_ckpt_spec s = accept_checked(cases[i].in);
		int n = llmp_ckpt_spec_format(&s, out, sizeof out);
		assert_int_equal(n, (int)strlen(cases[i].out));
		if (strcmp(out, cases[i].out) != 0)
			fail_msg("'%s' printed as '%s', expected '%s'", cases[i].in, out, cases[i].out);
	}
}

static void format_round_trip(void **state)
{
	(void)state;
	static const char *const texts[] = {
		"/scratch/run1",
		"d,every=1",
		"d,every=1000000000min,keep=1000000000,restarts=1000000000",
		"dir=/x=y=z,every=3min",
		"dir=help,restarts=0",
		"/data/\xc3\xa9t\xc3\xa9,keep=1",
		"d,files=node",
		"d,stripe=-1",
		"d,stripe=7:64k",
		"d,stripe=3::p",
		"d,stripe=16:4194240K:abcdefghijklmno",
	};
	char out[LLMP_CKPT_SPEC_MAX_LEN + 1], again_text[LLMP_CKPT_SPEC_MAX_LEN + 1];

	for (size_t i = 0; i < ARRAY_LEN(texts); i++) {
		llmp_ckpt_spec s = accept_checked(texts[i]);
		llmp_ckpt_spec_format(&s, out, sizeof out);
		llmp_ckpt_spec again = accept_checked(out);
		assert_string_equal(again.dir, s.dir);
		assert_int_equal(again.every, s.every);
		assert_int_equal(again.every_minutes, s.every_minutes);
		assert_int_equal(again.keep, s.keep);
		assert_int_equal(again.max_restarts, s.max_restarts);
		assert_int_equal(again.node_files, s.node_files);
		assert_int_equal(again.stripe_count, s.stripe_count);
		assert_true(again.stripe_size == s.stripe_size);
		assert_string_equal(again.stripe_pool, s.stripe_pool);
		/* The canonical text is a fixed point. */
		llmp_ckpt_spec_format(&again, again_text, sizeof again_text);
		assert_string_equal(again_text, out);
	}
	/* The longest spec fits LLMP_CKPT_SPEC_MAX_LEN. */
	char text[TEXT_MAX];
	snprintf(text, sizeof text,
		 "dir=/%s=,every=1000000000min,keep=1000000000,restarts=1000000000,files=node,"
		 "stripe=2000:4194240K:ppppppppppppppp",
		 repeat('q', 1021));
	llmp_ckpt_spec s = accept_checked(text);
	int n = llmp_ckpt_spec_format(&s, out, sizeof out);
	assert_true(n <= LLMP_CKPT_SPEC_MAX_LEN);
	assert_string_equal(accept_checked(out).dir, s.dir);
}

static void format_small_buffer(void **state)
{
	(void)state;
	llmp_ckpt_spec s = accept_checked("/a,every=5");
	char out[8];

	/* "/a,every=5,keep=2,restarts=3" is 28 characters: like snprintf. */
	assert_int_equal(llmp_ckpt_spec_format(&s, out, sizeof out), 28);
	assert_string_equal(out, "/a,ever");
	assert_int_equal(llmp_ckpt_spec_format(&s, NULL, 0), 28);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_is_empty),
		cmocka_unit_test(dir_alone_gets_the_defaults),
		cmocka_unit_test(each_key),
		cmocka_unit_test(dir_in_any_position_and_form),
		cmocka_unit_test(repeated_keys_last_wins),
		cmocka_unit_test(help_alone),
		cmocka_unit_test(grammar_names_every_key),
		cmocka_unit_test(null_empty_and_empty_items),
		cmocka_unit_test(two_directories),
		cmocka_unit_test(keys_and_values_missing_or_unknown),
		cmocka_unit_test(numbers_below_the_minimum),
		cmocka_unit_test(values_that_are_not_numbers),
		cmocka_unit_test(number_boundaries),
		cmocka_unit_test(directory_length_and_bytes),
		cmocka_unit_test(check_requires_a_directory),
		cmocka_unit_test(overlay_precedence),
		cmocka_unit_test(stripe_accepted),
		cmocka_unit_test(stripe_rejected_naming_the_key),
		cmocka_unit_test(stripe_check_values),
		cmocka_unit_test(format_canonical_text),
		cmocka_unit_test(format_round_trip),
		cmocka_unit_test(format_small_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_spec.c - the --llm-parallel grammar (include/llmp/llmp_spec.h): defaults,
 * every key, any subset in any order, every rejection with a message that
 * names the culprit and the reason, the length limit, safe echoing of user
 * bytes, the canonical printer and the layering of several sources.
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

#include <llmp/llmp_spec.h>

#define ARRAY_LEN(a) (sizeof a / sizeof((a)[0]))
#define BITK(k) (1u << (k))

/* ------------------------------------------------------------ helpers */

/* Fail, showing the whole message, unless msg contains needle. */
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

static void assert_is_init(const llmp_spec *s)
{
	llmp_spec init;

	llmp_spec_init(&init);
	assert_true(llmp_spec_equal(s, &init));
	assert_int_equal(s->given, 0);
	assert_int_equal(s->size[LLMP_DIM_TP], 1);
	assert_int_equal(s->size[LLMP_DIM_DP], 0);
}

/*
 * text must be rejected by llmp_spec_parse() with status; the message must
 * contain every one of the NULL-terminated needles and be printable; the spec
 * must be left at its defaults. Returns the message (static storage).
 */
static const char *reject_v(const char *text, llmp_status status, va_list ap)
{
	static char msg[LLMP_MSG_MAX];
	llmp_spec spec;
	const char *needle;

	memset(&spec, 0x5a, sizeof spec); /* garbage the parser must overwrite */
	strcpy(msg, "(no message written)");
	llmp_status got = llmp_spec_parse(text, &spec, msg, sizeof msg);
	if (got != status)
		fail_msg("'%s': status %d, expected %d (message \"%s\")", text ? text : "(null)", got, status,
			 msg);
	if (strcmp(msg, "(no message written)") == 0 || msg[0] == '\0')
		fail_msg("'%s': rejected without a message", text ? text : "(null)");
	while ((needle = va_arg(ap, const char *)) != NULL)
		assert_msg_has(msg, needle, text ? text : "(null)");
	assert_msg_printable(msg);
	assert_is_init(&spec);
	return msg;
}

static const char *reject(const char *text, llmp_status status, ...)
{
	va_list ap;
	va_start(ap, status);
	const char *msg = reject_v(text, status, ap);
	va_end(ap);
	return msg;
}

#define REJECT(text, ...) reject((text), LLMP_ERR_SPEC, __VA_ARGS__, (const char *)NULL)

/* text must parse (with the cross-key check); returns the spec. */
static llmp_spec accept(const char *text)
{
	char msg[LLMP_MSG_MAX] = "";
	llmp_spec spec;

	llmp_status st = llmp_spec_parse(text, &spec, msg, sizeof msg);
	if (st != LLMP_OK)
		fail_msg("'%s' rejected (%d): %s", text, st, msg);
	return spec;
}

/* parse_partial must accept text (no cross-key checks); returns the spec. */
static llmp_spec accept_partial(const char *text)
{
	char msg[LLMP_MSG_MAX] = "";
	llmp_spec spec;

	llmp_status st = llmp_spec_parse_partial(text, &spec, msg, sizeof msg);
	if (st != LLMP_OK)
		fail_msg("'%s' rejected by parse_partial (%d): %s", text, st, msg);
	return spec;
}

static void assert_order(const llmp_spec *s, const enum llmp_dim want[LLMP_NDIMS])
{
	for (int i = 0; i < LLMP_NDIMS; i++)
		if (s->order[i] != want[i])
			fail_msg("order position %d is %s, expected %s", i, llmp_dim_name(s->order[i]),
				 llmp_dim_name(want[i]));
}

static const enum llmp_dim megatron_default[LLMP_NDIMS] = {
	LLMP_DIM_TP, LLMP_DIM_CP, LLMP_DIM_EP, LLMP_DIM_DP, LLMP_DIM_PP,
};

/* ------------------------------------------------------------ defaults and keys */

static void defaults(void **state)
{
	(void)state;
	llmp_spec s;

	memset(&s, 0xff, sizeof s);
	llmp_spec_init(&s);
	assert_int_equal(s.size[LLMP_DIM_TP], 1);
	assert_int_equal(s.size[LLMP_DIM_PP], 1);
	assert_int_equal(s.size[LLMP_DIM_CP], 1);
	assert_int_equal(s.size[LLMP_DIM_EP], 1);
	assert_int_equal(s.size[LLMP_DIM_DP], 0); /* auto */
	assert_int_equal(s.etp, 0);               /* same as tp */
	assert_int_equal(s.vpp, 0);
	assert_int_equal(s.order_len, 0);
	assert_int_equal(s.given, 0);
	assert_false(s.help);
	assert_order(&s, megatron_default);
	assert_int_equal(llmp_spec_check(&s, NULL, 0), LLMP_OK);

	/* Names of dimensions and keys. */
	assert_string_equal(llmp_dim_name(LLMP_DIM_TP), "tp");
	assert_string_equal(llmp_dim_name(LLMP_DIM_CP), "cp");
	assert_string_equal(llmp_dim_name(LLMP_DIM_EP), "ep");
	assert_string_equal(llmp_dim_name(LLMP_DIM_DP), "dp");
	assert_string_equal(llmp_dim_name(LLMP_DIM_PP), "pp");
	assert_string_equal(llmp_key_name(LLMP_KEY_TP), "tp");
	assert_string_equal(llmp_key_name(LLMP_KEY_PP), "pp");
	assert_string_equal(llmp_key_name(LLMP_KEY_CP), "cp");
	assert_string_equal(llmp_key_name(LLMP_KEY_EP), "ep");
	assert_string_equal(llmp_key_name(LLMP_KEY_DP), "dp");
	assert_string_equal(llmp_key_name(LLMP_KEY_ETP), "etp");
	assert_string_equal(llmp_key_name(LLMP_KEY_ORDER), "order");
	assert_string_equal(llmp_key_name(LLMP_KEY_VPP), "vpp");
	assert_non_null(llmp_dim_name(LLMP_NDIMS));
	assert_non_null(llmp_key_name(LLMP_NKEYS));
}

static void each_key(void **state)
{
	(void)state;
	llmp_spec s;

	s = accept("tp=8");
	assert_int_equal(s.size[LLMP_DIM_TP], 8);
	assert_int_equal(s.given, BITK(LLMP_KEY_TP));
	assert_int_equal(s.size[LLMP_DIM_PP], 1);
	assert_int_equal(s.size[LLMP_DIM_DP], 0);

	s = accept("pp=4");
	assert_int_equal(s.size[LLMP_DIM_PP], 4);
	assert_int_equal(s.given, BITK(LLMP_KEY_PP));

	s = accept("cp=2");
	assert_int_equal(s.size[LLMP_DIM_CP], 2);
	assert_int_equal(s.given, BITK(LLMP_KEY_CP));

	s = accept("ep=16");
	assert_int_equal(s.size[LLMP_DIM_EP], 16);
	assert_int_equal(s.given, BITK(LLMP_KEY_EP));

	s = accept("etp=2");
	assert_int_equal(s.etp, 2);
	assert_int_equal(s.size[LLMP_DIM_TP], 1); /* etp does not touch tp */
	assert_int_equal(s.given, BITK(LLMP_KEY_ETP));

	s = accept("dp=3");
	assert_int_equal(s.size[LLMP_DIM_DP], 3);
	assert_int_equal(s.given, BITK(LLMP_KEY_DP));

	s = accept("dp=auto");
	assert_int_equal(s.size[LLMP_DIM_DP], 0);
	assert_int_equal(s.given, BITK(LLMP_KEY_DP));

	s = accept("pp=2,vpp=3");
	assert_int_equal(s.vpp, 3);
	assert_int_equal(s.given, BITK(LLMP_KEY_PP) | BITK(LLMP_KEY_VPP));

	s = accept("order=pp-dp-ep-cp-tp");
	const enum llmp_dim rev[LLMP_NDIMS] = { LLMP_DIM_PP, LLMP_DIM_DP, LLMP_DIM_EP, LLMP_DIM_CP,
						LLMP_DIM_TP };
	assert_order(&s, rev);
	assert_int_equal(s.order_len, 5);
	assert_int_equal(s.given, BITK(LLMP_KEY_ORDER));

	/* The example, every key at once. */
	s = accept("tp=8,pp=4,cp=2,ep=1,dp=auto,order=tp-cp-ep-dp-pp,vpp=2");
	assert_int_equal(s.size[LLMP_DIM_TP], 8);
	assert_int_equal(s.size[LLMP_DIM_PP], 4);
	assert_int_equal(s.size[LLMP_DIM_CP], 2);
	assert_int_equal(s.size[LLMP_DIM_EP], 1);
	assert_int_equal(s.size[LLMP_DIM_DP], 0);
	assert_int_equal(s.vpp, 2);
	assert_int_equal(s.etp, 0);
	assert_int_equal(s.order_len, 5);
	assert_order(&s, megatron_default);
	assert_false(s.help);
	assert_int_equal(s.given, BITK(LLMP_KEY_TP) | BITK(LLMP_KEY_PP) | BITK(LLMP_KEY_CP) |
					  BITK(LLMP_KEY_EP) | BITK(LLMP_KEY_DP) | BITK(LLMP_KEY_ORDER) |
					  BITK(LLMP_KEY_VPP));

	/* Leading zeros are still decimal, not octal. */
	s = accept("tp=010");
	assert_int_equal(s.size[LLMP_DIM_TP], 10);
	/* The largest accepted size. */
	s = accept("tp=1048576");
	assert_int_equal(s.size[LLMP_DIM_TP], LLMP_SIZE_MAX);
}

/*
 * Every subset of the keys, each in several item orders (as given, reversed,
 * every rotation): each given key has its value, every other key its default.
 */
static void any_subset_any_order(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		enum llmp_key key;
	} items[] = {
		{ "tp=2", LLMP_KEY_TP },
		{ "pp=4", LLMP_KEY_PP },
		{ "cp=3", LLMP_KEY_CP },
		{ "ep=5", LLMP_KEY_EP },
		{ "etp=6", LLMP_KEY_ETP },
		{ "dp=7", LLMP_KEY_DP },
		{ "order=pp-dp-ep-cp-tp", LLMP_KEY_ORDER },
		{ "vpp=9", LLMP_KEY_VPP }, /* only together with pp */
	};
	const size_t nitems = ARRAY_LEN(items);
	unsigned tested = 0;

	for (unsigned mask = 1; mask < (1u << nitems); mask++) {
		if ((mask & BITK(7)) && !(mask & BITK(1)))
			continue; /* vpp without pp is a rejection, tested elsewhere */
		const char *chosen[8];
		size_t n = 0;
		for (size_t i = 0; i < nitems; i++)
			if (mask & BITK(i))
				chosen[n++] = items[i].text;

		for (size_t variant = 0; variant <= n; variant++) {
			char text[LLMP_SPEC_MAX_LEN + 1] = "";
			for (size_t j = 0; j < n; j++) {
				/* variant < n: rotation by variant; variant == n: reversed */
				size_t idx = variant < n ? (j + variant) % n : n - 1 - j;
				if (j)
					strcat(text, ",");
				strcat(text, chosen[idx]);
			}
			llmp_spec s = accept(text);
			unsigned given = 0;
			for (size_t i = 0; i < nitems; i++)
				if (mask & BITK(i))
					given |= BITK(items[i].key);
			assert_int_equal(s.given, given);
			assert_int_equal(s.size[LLMP_DIM_TP], (mask & BITK(0)) ? 2 : 1);
			assert_int_equal(s.size[LLMP_DIM_PP], (mask & BITK(1)) ? 4 : 1);
			assert_int_equal(s.size[LLMP_DIM_CP], (mask & BITK(2)) ? 3 : 1);
			assert_int_equal(s.size[LLMP_DIM_EP], (mask & BITK(3)) ? 5 : 1);
			assert_int_equal(s.etp, (mask & BITK(4)) ? 6 : 0);
			assert_int_equal(s.size[LLMP_DIM_DP], (mask & BITK(5)) ? 7 : 0);
			assert_int_equal(s.order_len, (mask & BITK(6)) ? 5 : 0);
			if (mask & BITK(6)) {
				const enum llmp_dim rev[LLMP_NDIMS] = { LLMP_DIM_PP, LLMP_DIM_DP, LLMP_DIM_EP,
									LLMP_DIM_CP, LLMP_DIM_TP };
				assert_order(&s, rev);
			} else {
				assert_order(&s, megatron_default);
			}
			assert_int_equal(s.vpp, (mask & BITK(7)) ? 9 : 0);
			assert_false(s.help);
			tested++;
		}
	}
	assert_true(tested > 500);
}

/* ------------------------------------------------------------ help */

static void help_alone(void **state)
{
	(void)state;
	llmp_spec s = accept("help");
	assert_true(s.help);
	assert_int_equal(s.given, 0);
	assert_int_equal(llmp_spec_check(&s, NULL, 0), LLMP_OK);

	s = accept_partial("help");
	assert_true(s.help);

	/* The grammar names every key, 'auto' and the default order. */
	const char *g = llmp_spec_grammar();
	assert_non_null(g);
	static const char *const words[] = { "tp=",  "pp=",    "cp=",  "ep=",  "etp=",          "dp=",
					     "auto", "order=", "vpp=", "help", "tp-cp-ep-dp-pp" };
	for (size_t i = 0; i < ARRAY_LEN(words); i++)
		assert_msg_has(g, words[i], "(grammar)");
}

static void help_mixed_is_an_error(void **state)
{
	(void)state;
	REJECT("help,tp=2", "help", "alone");
	REJECT("tp=2,help", "help", "alone");
	REJECT("help,help", "help", "alone");
	/* Not the word help: no special treatment. */
	REJECT("help=1", "unknown key", "help");
	REJECT("HELP", "HELP", "not key=value");
	REJECT(" help", " help", "not key=value");
}

/* ------------------------------------------------------------ syntax errors */

static void null_and_empty_input(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX] = "";
	llmp_spec s;

	reject(NULL, LLMP_ERR_ARG, "no layout", (const char *)NULL);
	assert_int_equal(llmp_spec_parse_partial(NULL, &s, msg, sizeof msg), LLMP_ERR_ARG);
	assert_is_init(&s);
	REJECT("", "empty layout");

	/* No spec to fill, no message buffer: statuses only, no crash. */
	assert_int_equal(llmp_spec_parse("tp=2", NULL, msg, sizeof msg), LLMP_ERR_ARG);
	assert_int_equal(llmp_spec_parse_partial("tp=2", NULL, NULL, 0), LLMP_ERR_ARG);
	assert_int_equal(llmp_spec_parse("tp=0", &s, NULL, 0), LLMP_ERR_SPEC);
	assert_int_equal(llmp_spec_parse("", &s, NULL, 0), LLMP_ERR_SPEC);
	assert_int_equal(llmp_spec_check(NULL, msg, sizeof msg), LLMP_ERR_ARG);
}

static void empty_items(void **state)
{
	(void)state;
	REJECT(",", "empty item", "character 1");
	REJECT(",,", "empty item", "character 1");
	REJECT(",tp=2", "empty item", "character 1");
	REJECT("tp=2,", "empty item", "character 6");      /* trailing comma */
	REJECT("tp=2,,pp=2", "empty item", "character 6"); /* two in a row */
	REJECT("tp=2,pp=2,", "empty item", "character 11");
}

static void missing_equals(void **state)
{
	(void)state;
	REJECT("tp", "'tp'", "not key=value");
	REJECT("tp2", "'tp2'", "not key=value");
	REJECT("tp=2,pp", "'pp'", "not key=value");
	REJECT("auto", "'auto'", "not key=value");
}

static void missing_key(void **state)
{
	(void)state;
	REJECT("=2", "'=2'", "missing key");
	REJECT("tp=2,=auto", "'=auto'", "missing key");
	REJECT("=", "missing key");
}

static void missing_value(void **state)
{
	(void)state;
	REJECT("tp=", "tp=", "missing value");
	REJECT("pp=2,cp=", "cp=", "missing value");
	REJECT("order=", "order=", "missing value");
	REJECT("dp=", "dp=", "missing value");
	REJECT("vpp=", "vpp=", "missing value");
	REJECT("etp=,tp=2", "etp=", "missing value");
}

static void unknown_key(void **state)
{
	(void)state;
	REJECT("foo=1", "unknown key", "'foo'");
	REJECT("tp=2,xp=2", "unknown key", "'xp'");
	REJECT("TP=2", "unknown key", "'TP'"); /* keys are lower case */
	REJECT("tpp=2", "unknown key", "'tpp'");
	REJECT("t=2", "unknown key", "'t'");
	REJECT("edp=2", "unknown key", "'edp'"); /* derived, not a key */
	REJECT(" tp=2", "unknown key", "' tp'");
	/* The message lists the known keys. */
	const char *m = REJECT("world=8", "unknown key", "'world'");
	static const char *const keys[] = { "tp", "pp", "cp", "ep", "etp", "dp", "order", "vpp" };
	for (size_t i = 0; i < ARRAY_LEN(keys); i++)
		assert_msg_has(m, keys[i], "world=8");
}

static void duplicate_key(void **state)
{
	(void)state;
	REJECT("tp=2,tp=2", "'tp'", "twice");
	REJECT("tp=2,pp=2,tp=4", "'tp'", "twice");
	REJECT("pp=2,cp=2,pp=2", "'pp'", "twice");
	REJECT("cp=2,cp=4", "'cp'", "twice");
	REJECT("ep=2,ep=2", "'ep'", "twice");
	REJECT("etp=2,etp=2", "'etp'", "twice");
	REJECT("dp=auto,dp=2", "'dp'", "twice");
	REJECT("dp=auto,dp=auto", "'dp'", "twice");
	REJECT("order=tp-pp,order=pp-tp", "'order'", "twice");
	REJECT("pp=2,vpp=2,vpp=2", "'vpp'", "twice");
}

/* ------------------------------------------------------------ bad values */

static const char *const numeric_keys[] = { "tp", "pp", "cp", "ep", "etp", "dp", "vpp" };

static void zero_value(void **state)
{
	(void)state;
	char text[64], culprit[64];

	for (size_t i = 0; i < ARRAY_LEN(numeric_keys); i++) {
		snprintf(text, sizeof text, "%s=0", numeric_keys[i]);
		REJECT(text, text, "at least 1");
		/* After a valid item, the culprit is still the one named. */
		snprintf(text, sizeof text, "pp=2,%s=000", numeric_keys[i]);
		snprintf(culprit, sizeof culprit, "%s=000", numeric_keys[i]);
		if (strcmp(numeric_keys[i], "pp") != 0)
			REJECT(text, culprit, "at least 1");
	}
}

static void negative_value(void **state)
{
	(void)state;
	char text[64];

	for (size_t i = 0; i < ARRAY_LEN(numeric_keys); i++) {
		snprintf(text, sizeof text, "%s=-2", numeric_keys[i]);
		REJECT(text, text, "positive integer");
	}
	REJECT("tp=-0", "tp=-0", "positive integer");
	REJECT("tp=2,pp=-4", "pp=-4", "positive integer");
}

static void non_numeric_value(void **state)
{
	(void)state;
	REJECT("tp=abc", "tp=abc", "not a number");
	REJECT("tp=2x", "tp=2x", "not a number");
	REJECT("tp=x2", "tp=x2", "not a number");
	REJECT("tp= 2", "tp= 2", "not a number");
	REJECT("tp=2 ", "tp=2 ", "not a number");
	REJECT("tp=+2", "tp=+2", "not a number");
	REJECT("tp=0x10", "tp=0x10", "not a number");
	REJECT("tp=1.5", "tp=1.5", "not a number");
	REJECT("tp=1e3", "tp=1e3", "not a number");
	REJECT("tp=-", "tp=-", "not a number");
	REJECT("tp=2=3", "tp=2=3", "not a number");
	REJECT("cp=two", "cp=two", "not a number");
	REJECT("etp=x", "etp=x", "not a number");
	REJECT("vpp=x", "vpp=x", "not a number");
	/* dp also allows auto, and says so. */
	REJECT("dp=x", "dp=x", "not a number", "auto");
	REJECT("dp=Auto", "dp=Auto", "not a number", "auto");
	REJECT("dp=autox", "dp=autox", "not a number", "auto");
}

static void overflowing_value(void **state)
{
	(void)state;
	REJECT("tp=1048577", "tp=1048577", "larger than", "1048576"); /* LLMP_SIZE_MAX + 1 */
	REJECT("pp=2097152", "pp=2097152", "larger than");
	REJECT("tp=123456789012345678901234567890", "tp=123456789012345678901234567890", "larger than");
	/* Values that wrap a 32- or 64-bit integer to a small one. */
	REJECT("vpp=4294967296", "vpp=4294967296", "larger than");
	REJECT("cp=4294967297", "cp=4294967297", "larger than");
	REJECT("ep=18446744073709551617", "ep=18446744073709551617", "larger than");
	REJECT("dp=18446744073709551616", "dp=18446744073709551616", "larger than");
	REJECT("etp=99999999999999999999999999999999999", "etp=99999999999999999999999999999999999",
	       "larger than");
}

static void dp_auto_and_number(void **state)
{
	(void)state;
	llmp_spec s = accept("tp=2");
	assert_int_equal(s.size[LLMP_DIM_DP], 0);
	assert_false(s.given & BITK(LLMP_KEY_DP));

	s = accept("dp=auto,tp=2");
	assert_int_equal(s.size[LLMP_DIM_DP], 0);
	assert_true(s.given & BITK(LLMP_KEY_DP));

	s = accept("tp=2,dp=4");
	assert_int_equal(s.size[LLMP_DIM_DP], 4);
	assert_true(s.given & BITK(LLMP_KEY_DP));

	/* auto is for dp only. */
	REJECT("tp=auto", "tp=auto", "not a number");
	REJECT("pp=auto", "pp=auto", "not a number");
	REJECT("cp=auto", "cp=auto", "not a number");
	REJECT("ep=auto", "ep=auto", "not a number");
	REJECT("etp=auto", "etp=auto", "not a number");
	REJECT("vpp=auto", "vpp=auto", "not a number");
	const char *m = REJECT("tp=auto", "tp=auto");
	assert_null(strstr(m, "'auto'")); /* not advertised where it is not allowed */
}

/* ------------------------------------------------------------ order */

static void order_duplicate_dim(void **state)
{
	(void)state;
	REJECT("order=tp-tp", "order=tp-tp", "'tp'", "twice");
	REJECT("order=tp-cp-ep-dp-pp-tp", "order=tp-cp-ep-dp-pp-tp", "'tp'", "twice");
	REJECT("order=pp-dp-pp", "order=pp-dp-pp", "'pp'", "twice");
	REJECT("tp=2,order=cp-dp-cp", "order=cp-dp-cp", "'cp'", "twice");
}

static void order_unknown_dim(void **state)
{
	(void)state;
	REJECT("order=tp-xx-pp", "order=tp-xx-pp", "unknown dimension", "'xx'");
	REJECT("order=tp-etp", "order=tp-etp", "unknown dimension", "'etp'");
	REJECT("order=t", "order=t", "unknown dimension", "'t'");
	REJECT("order=tpcp", "order=tpcp", "unknown dimension", "'tpcp'");
	REJECT("order=TP", "order=TP", "unknown dimension", "'TP'");
	REJECT("order=tp,cp", "'cp'", "not key=value"); /* a comma ends the item */
}

static void order_empty_token(void **state)
{
	(void)state;
	REJECT("order=tp--pp", "order=tp--pp", "empty dimension name");
	REJECT("order=-tp", "order=-tp", "empty dimension name");
	REJECT("order=tp-", "order=tp-", "empty dimension name");
	REJECT("order=-", "order=-", "empty dimension name");
}

/* An order must name every dimension whose size is not 1. */
static void order_omits_sized_dim(void **state)
{
	(void)state;
	REJECT("pp=2,order=tp-dp", "order=tp-dp", "omits pp", "size is 2");
	REJECT("order=tp-pp-dp,cp=4", "order=tp-pp-dp", "omits cp", "size is 4");
	REJECT("ep=8,order=tp-cp-dp-pp", "order=tp-cp-dp-pp", "omits ep", "size is 8");
	REJECT("dp=4,order=tp-pp", "order=tp-pp", "omits dp", "size is 4");
	REJECT("tp=2,order=pp-dp", "order=pp-dp", "omits tp", "size is 2");
	REJECT("etp=2,order=pp-dp", "order=pp-dp", "omits tp", "etp=2");

	/* Only the cross-key check finds it: each item alone is well formed. */
	char msg[LLMP_MSG_MAX] = "";
	llmp_spec s = accept_partial("pp=2,order=tp-dp");
	assert_int_equal(llmp_spec_check(&s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "omits pp", "pp=2,order=tp-dp");
}

/* Dimensions left out with size 1 are appended as Megatron does: tp pp dp ep cp. */
static void order_completion(void **state)
{
	(void)state;
	llmp_spec s;

	s = accept("order=dp");
	assert_int_equal(s.order_len, 1);
	assert_order(&s, (const enum llmp_dim[]){ LLMP_DIM_DP, LLMP_DIM_TP, LLMP_DIM_PP, LLMP_DIM_EP,
						  LLMP_DIM_CP });
	s = accept("order=cp");
	assert_int_equal(s.order_len, 1);
	assert_order(&s, (const enum llmp_dim[]){ LLMP_DIM_CP, LLMP_DIM_TP, LLMP_DIM_PP, LLMP_DIM_DP,
						  LLMP_DIM_EP });
	s = accept("pp=2,cp=2,order=pp-cp");
	assert_int_equal(s.order_len, 2);
	assert_order(&s, (const enum llmp_dim[]){ LLMP_DIM_PP, LLMP_DIM_CP, LLMP_DIM_TP, LLMP_DIM_DP,
						  LLMP_DIM_EP });
	s = accept("order=ep-tp,tp=4,ep=2");
	assert_int_equal(s.order_len, 2);
	assert_order(&s, (const enum llmp_dim[]){ LLMP_DIM_EP, LLMP_DIM_TP, LLMP_DIM_PP, LLMP_DIM_DP,
						  LLMP_DIM_CP });
	s = accept("tp=2,pp=2,order=tp-dp-pp");
	assert_int_equal(s.order_len, 3);
	assert_order(&s, (const enum llmp_dim[]){ LLMP_DIM_TP, LLMP_DIM_DP, LLMP_DIM_PP, LLMP_DIM_EP,
						  LLMP_DIM_CP });
	/* dp=auto is not known to be 1 yet: the spec alone cannot reject it. */
	s = accept("tp=2,order=tp");
	assert_order(&s, (const enum llmp_dim[]){ LLMP_DIM_TP, LLMP_DIM_PP, LLMP_DIM_DP, LLMP_DIM_EP,
						  LLMP_DIM_CP });
	/* Explicit size 1 may be left out. */
	s = accept("pp=1,cp=1,order=tp-dp");
	assert_int_equal(s.order_len, 2);
}

static void vpp_needs_pp(void **state)
{
	(void)state;
	REJECT("vpp=2", "vpp=2", "pp is 1");
	REJECT("pp=1,vpp=2", "vpp=2", "pp is 1");
	REJECT("vpp=4,tp=2", "vpp=4", "pp");
	llmp_spec s = accept("pp=2,vpp=2");
	assert_int_equal(s.vpp, 2);
	s = accept("vpp=2,pp=2"); /* regardless of item order */
	assert_int_equal(s.vpp, 2);
	/* parse_partial leaves it to the check. */
	s = accept_partial("vpp=2");
	char msg[LLMP_MSG_MAX] = "";
	assert_int_equal(llmp_spec_check(&s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "vpp=2", "vpp=2");
}

/* ------------------------------------------------------------ length, bytes, buffers */

static void length_limit(void **state)
{
	(void)state;
	char text[LLMP_SPEC_MAX_LEN + 2];

	/* Exactly LLMP_SPEC_MAX_LEN bytes, well formed: "tp=000...02". */
	memset(text, '0', sizeof text);
	memcpy(text, "tp=", 3);
	text[LLMP_SPEC_MAX_LEN - 1] = '2';
	text[LLMP_SPEC_MAX_LEN] = '\0';
	assert_int_equal(strlen(text), LLMP_SPEC_MAX_LEN);
	llmp_spec s = accept(text);
	assert_int_equal(s.size[LLMP_DIM_TP], 2);

	/* One byte more. */
	text[LLMP_SPEC_MAX_LEN] = '2';
	text[LLMP_SPEC_MAX_LEN + 1] = '\0';
	REJECT(text, "longer than 256");

	/* Exactly the limit but ill formed: the syntax message, not the length one. */
	memset(text, 'x', LLMP_SPEC_MAX_LEN);
	text[LLMP_SPEC_MAX_LEN] = '\0';
	const char *m = REJECT(text, "not key=value");
	assert_null(strstr(m, "longer"));

	/* A huge, unterminated-looking input: the parser must not read past the
	 * limit (ASan catches a read beyond this exact-size buffer). */
	char *raw = malloc(LLMP_SPEC_MAX_LEN + 1);
	assert_non_null(raw);
	memset(raw, 'a', LLMP_SPEC_MAX_LEN + 1); /* no NUL at all */
	char msg[LLMP_MSG_MAX] = "";
	assert_int_equal(llmp_spec_parse(raw, &s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "longer than", "(unterminated)");
	free(raw);

	/* A long string of valid items beyond the limit. */
	char big[4096] = "";
	while (strlen(big) < 1000)
		strcat(big, "tp=2,");
	REJECT(big, "longer than 256");
}

static void nonprintable_bytes_not_echoed(void **state)
{
	(void)state;
	/* Each REJECT also asserts the message is printable ASCII. */
	REJECT("tp=\x1b[31m", "tp=?[31m", "not a number");
	REJECT("tp=2\a", "tp=2?", "not a number");
	REJECT("\x1b]0;pwned\a=1", "unknown key", "'?]0;pwned?'");
	REJECT("tp\n=2", "unknown key", "'tp?'");
	REJECT("t\tp=2", "unknown key", "'t?p'");
	REJECT("tp=\x7f", "tp=?", "not a number");
	REJECT("tp=\x80\xff", "tp=?\?", "not a number");
	REJECT("order=tp-\x1b\x1b", "unknown dimension", "'?\?'");
	REJECT("tp\x01", "'tp?'", "not key=value");
	REJECT("=\x1b", "'=?'", "missing key");
	REJECT("tp=-\x1b", "tp=-?", "not a number");
	REJECT("\xc3\xa9=1", "unknown key", "'?\?'"); /* UTF-8 is not echoed either */

	/* A long culprit is shortened, not copied whole. */
	char text[200];
	memset(text, 'x', 150);
	memcpy(text, "tp=", 3);
	text[150] = '\0';
	const char *m = REJECT(text, "tp=xxxx", "not a number");
	assert_true(strlen(m) < 150);
	assert_msg_has(m, "...", "tp=xxx...");
}

static void small_message_buffer(void **state)
{
	(void)state;
	char full[LLMP_MSG_MAX], small[9];
	llmp_spec s;

	assert_int_equal(llmp_spec_parse("foo=1", &s, full, sizeof full), LLMP_ERR_SPEC);
	memset(small, '#', sizeof small);
	assert_int_equal(llmp_spec_parse("foo=1", &s, small, sizeof small), LLMP_ERR_SPEC);
	assert_int_equal(strlen(small), sizeof small - 1); /* truncated, terminated */
	assert_memory_equal(small, full, sizeof small - 1);

	/* msglen 0: the buffer is not touched. */
	small[0] = '#';
	assert_int_equal(llmp_spec_parse("foo=1", &s, small, 0), LLMP_ERR_SPEC);
	assert_int_equal(small[0], '#');

	/* No message from any check fills LLMP_MSG_MAX: the longest culprits. */
	char text[LLMP_SPEC_MAX_LEN + 1];
	memset(text, '9', LLMP_SPEC_MAX_LEN);
	memcpy(text, "etp=", 4);
	text[LLMP_SPEC_MAX_LEN] = '\0';
	assert_int_equal(llmp_spec_parse(text, &s, full, sizeof full), LLMP_ERR_SPEC);
	assert_true(strlen(full) < LLMP_MSG_MAX - 1);
}

/* A failed parse leaves the spec at its defaults, even after good items. */
static void failure_leaves_defaults(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	llmp_spec s;

	assert_int_equal(llmp_spec_parse_partial("tp=4,pp=2,cp=x", &s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_is_init(&s);
	assert_int_equal(llmp_spec_parse("tp=4,order=tp-dp,pp=2", &s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_is_init(&s);
	assert_int_equal(llmp_spec_parse("tp=4,vpp=2", &s, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_is_init(&s);
}

/* ------------------------------------------------------------ format */

static void format_round_trip(void **state)
{
	(void)state;
	static const char *const specs[] = {
		"help",
		"tp=1",
		"tp=8,pp=4,cp=2,ep=1,dp=auto,order=tp-cp-ep-dp-pp,vpp=2",
		"dp=auto",
		"dp=16",
		"tp=2,dp=4",
		"etp=4,ep=8",
		"etp=1,tp=8",
		"order=pp",
		"order=dp-tp",
		"pp=2,vpp=1",
		"tp=1048576",
		"tp=0002,pp=03",
		"vpp=19,order=pp-dp-ep-cp-tp,dp=17,etp=13,ep=11,cp=7,pp=5,tp=3",
		"cp=2,order=cp-tp-dp",
		"pp=8,vpp=4,order=tp-pp-dp",
		"ep=64,etp=1,pp=4,order=tp-ep-dp-pp",
	};
	char buf[LLMP_SPEC_MAX_LEN + 1], msg[LLMP_MSG_MAX];

	for (size_t i = 0; i < ARRAY_LEN(specs); i++) {
		llmp_spec a = accept(specs[i]), b;
		size_t n = llmp_spec_format(&a, buf, sizeof buf);
		assert_int_equal(n, strlen(buf));
		if (llmp_spec_parse(buf, &b, msg, sizeof msg) != LLMP_OK)
			fail_msg("'%s' formats as '%s', which does not parse: %s", specs[i], buf, msg);
		if (!llmp_spec_equal(&a, &b))
			fail_msg("'%s' formats as '%s', which parses differently", specs[i], buf);
		/* Canonical: formatting again gives the same text. */
		char again[LLMP_SPEC_MAX_LEN + 1];
		llmp_spec_format(&b, again, sizeof again);
		assert_string_equal(again, buf);
	}

	/* Defaults: nothing given, nothing printed; parse of "" is an error, so
	 * the round trip of the empty spec is not through the parser. */
	llmp_spec d;
	llmp_spec_init(&d);
	assert_int_equal(llmp_spec_format(&d, buf, sizeof buf), 0);
	assert_string_equal(buf, "");

	/* Round trip of every generated combination too. */
	static const char *const items[] = { "tp=2",  "pp=4",    "cp=3",          "ep=5",
					     "etp=6", "dp=auto", "order=dp-pp-cp" };
	for (unsigned mask = 1; mask < (1u << ARRAY_LEN(items)); mask++) {
		char text[LLMP_SPEC_MAX_LEN + 1] = "";
		for (size_t i = ARRAY_LEN(items); i-- > 0;)
			if (mask & BITK(i)) {
				if (text[0])
					strcat(text, ",");
				strcat(text, items[i]);
			}
		llmp_spec a, b;
		if (llmp_spec_parse(text, &a, msg, sizeof msg) != LLMP_OK)
			continue; /* e.g. order=dp-pp-cp with tp=2: rejected, fine */
		llmp_spec_format(&a, buf, sizeof buf);
		assert_int_equal(llmp_spec_parse(buf, &b, msg, sizeof msg), LLMP_OK);
		if (!llmp_spec_equal(&a, &b))
			fail_msg("'%s' -> '%s' does not round-trip", text, buf);
	}
}

/* The canonical text: grammar key order tp pp cp ep etp dp order vpp. */
static void format_canonical_text(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "vpp=2,order=pp-tp,dp=auto,pp=2,tp=4", "tp=4,pp=2,dp=auto,order=pp-tp,vpp=2" },
		{ "tp=0002", "tp=2" },
		{ "dp=8,etp=2,ep=4,cp=2", "cp=2,ep=4,etp=2,dp=8" },
		{ "order=dp", "order=dp" }, /* the order as given, not as completed */
		{ "help", "help" },
	};
	char buf[LLMP_SPEC_MAX_LEN + 1];

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		llmp_spec s = accept(cases[i].in);
		llmp_spec_format(&s, buf, sizeof buf);
		assert_string_equal(buf, cases[i].out);
	}
}

/* Like snprintf: returns the length needed, truncates with a NUL. */
static void format_small_buffer(void **state)
{
	(void)state;
	llmp_spec s = accept("tp=4,pp=2,order=tp-pp-dp"); /* "tp=4,pp=2,order=tp-pp-dp" */
	const char *want = "tp=4,pp=2,order=tp-pp-dp";
	char buf[8];

	assert_int_equal(llmp_spec_format(&s, NULL, 0), strlen(want));
	memset(buf, '#', sizeof buf);
	assert_int_equal(llmp_spec_format(&s, buf, sizeof buf), strlen(want));
	assert_string_equal(buf, "tp=4,pp");
	char exact[32];
	assert_int_equal(llmp_spec_format(&s, exact, strlen(want)), strlen(want));
	assert_int_equal(strlen(exact), strlen(want) - 1);
	assert_int_equal(llmp_spec_format(&s, exact, strlen(want) + 1), strlen(want));
	assert_string_equal(exact, want);
}

static void equal_distinguishes(void **state)
{
	(void)state;
	llmp_spec a = accept("tp=2,pp=2"), b = accept("pp=2,tp=2");
	assert_true(llmp_spec_equal(&a, &b));
	b = accept("tp=2,pp=4");
	assert_false(llmp_spec_equal(&a, &b));
	a = accept("order=tp-pp-dp");
	b = accept("order=tp-dp-pp");
	assert_false(llmp_spec_equal(&a, &b));
	a = accept("tp=2,etp=1");
	b = accept("tp=2,etp=2");
	assert_false(llmp_spec_equal(&a, &b));
	a = accept("dp=2");
	b = accept("dp=auto");
	assert_false(llmp_spec_equal(&a, &b));
	a = accept("help");
	llmp_spec_init(&b);
	assert_false(llmp_spec_equal(&a, &b));
}

/* ------------------------------------------------------------ overlay */

/* site < env < command line: later keys win, keys not given are kept. */
static void overlay_precedence(void **state)
{
	(void)state;
	llmp_spec site = accept_partial("tp=2,pp=4,ep=2,order=tp-cp-ep-dp-pp");
	llmp_spec env = accept_partial("pp=2,cp=2,dp=auto");
	llmp_spec cmd = accept_partial("tp=8,ep=1");

	llmp_spec merged = site;
	llmp_spec_overlay(&merged, &env);
	llmp_spec_overlay(&merged, &cmd);
	assert_int_equal(llmp_spec_check(&merged, NULL, 0), LLMP_OK);

	assert_int_equal(merged.size[LLMP_DIM_TP], 8); /* cmd over site */
	assert_int_equal(merged.size[LLMP_DIM_PP], 2); /* env over site */
	assert_int_equal(merged.size[LLMP_DIM_CP], 2); /* env only */
	assert_int_equal(merged.size[LLMP_DIM_EP], 1); /* cmd over site */
	assert_int_equal(merged.size[LLMP_DIM_DP], 0);
	assert_int_equal(merged.order_len, 5); /* site only */
	assert_order(&merged, megatron_default);

	llmp_spec want = accept("tp=8,pp=2,cp=2,ep=1,dp=auto,order=tp-cp-ep-dp-pp");
	assert_true(llmp_spec_equal(&merged, &want));

	/* Reverse precedence gives the other values. */
	merged = cmd;
	llmp_spec_overlay(&merged, &env);
	llmp_spec_overlay(&merged, &site);
	want = accept("tp=2,pp=4,cp=2,ep=2,dp=auto,order=tp-cp-ep-dp-pp");
	assert_true(llmp_spec_equal(&merged, &want));

	/* dp=auto given later replaces a number; etp and vpp are carried. */
	merged = accept_partial("dp=4,etp=2,pp=2,vpp=3");
	llmp_spec top = accept_partial("dp=auto");
	llmp_spec_overlay(&merged, &top);
	want = accept("dp=auto,etp=2,pp=2,vpp=3");
	assert_true(llmp_spec_equal(&merged, &want));
	top = accept_partial("etp=4,vpp=5");
	llmp_spec_overlay(&merged, &top);
	want = accept("dp=auto,etp=4,pp=2,vpp=5");
	assert_true(llmp_spec_equal(&merged, &want));

	/* A later order replaces an earlier one entirely, completion included. */
	merged = accept_partial("order=pp-dp-ep-cp-tp");
	top = accept_partial("order=dp");
	llmp_spec_overlay(&merged, &top);
	want = accept("order=dp");
	assert_true(llmp_spec_equal(&merged, &want));
	assert_int_equal(merged.order_len, 1);
}

static void overlay_of_nothing_keeps_all(void **state)
{
	(void)state;
	llmp_spec base = accept("tp=4,pp=2,vpp=2,order=pp-tp-dp"), empty, copy;

	copy = base;
	llmp_spec_init(&empty);
	llmp_spec_overlay(&base, &empty);
	assert_true(llmp_spec_equal(&base, &copy));

	/* And the defaults under a source take that source's keys. */
	llmp_spec_init(&empty);
	llmp_spec_overlay(&empty, &base);
	assert_true(llmp_spec_equal(&empty, &base));
}

/* Problems only the merged spec has are caught by llmp_spec_check(). */
static void overlay_then_check(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	llmp_spec site, user;

	/* Site order leaves out cp; the user asks for cp=2. */
	site = accept("order=tp-dp-pp");
	user = accept("cp=2");
	llmp_spec_overlay(&site, &user);
	msg[0] = '\0';
	assert_int_equal(llmp_spec_check(&site, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "order=tp-dp-pp", "site order + cp=2");
	assert_msg_has(msg, "omits cp", "site order + cp=2");
	assert_msg_has(msg, "2", "site order + cp=2");
	assert_msg_printable(msg);

	/* Site pipeline with vpp; the user turns pipelining off. */
	site = accept("pp=4,vpp=2");
	user = accept("pp=1");
	llmp_spec_overlay(&site, &user);
	msg[0] = '\0';
	assert_int_equal(llmp_spec_check(&site, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "vpp=2", "pp=4,vpp=2 + pp=1");
	assert_msg_has(msg, "pp is 1", "pp=4,vpp=2 + pp=1");

	/* Site vpp alone (partial), user brings the pipeline: fine. */
	site = accept_partial("vpp=2");
	user = accept("pp=2");
	llmp_spec_overlay(&site, &user);
	assert_int_equal(llmp_spec_check(&site, msg, sizeof msg), LLMP_OK);

	/* User order that names cp repairs the site order. */
	site = accept("order=tp-dp-pp");
	user = accept("cp=2,order=tp-cp-dp-pp");
	llmp_spec_overlay(&site, &user);
	assert_int_equal(llmp_spec_check(&site, msg, sizeof msg), LLMP_OK);

	/* Site tp-less order, user etp. */
	site = accept("order=pp-dp");
	user = accept("etp=4");
	llmp_spec_overlay(&site, &user);
	msg[0] = '\0';
	assert_int_equal(llmp_spec_check(&site, msg, sizeof msg), LLMP_ERR_SPEC);
	assert_msg_has(msg, "omits tp", "order=pp-dp + etp=4");
	assert_msg_has(msg, "etp=4", "order=pp-dp + etp=4");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(each_key),
		cmocka_unit_test(any_subset_any_order),
		cmocka_unit_test(help_alone),
		cmocka_unit_test(help_mixed_is_an_error),
		cmocka_unit_test(null_and_empty_input),
		cmocka_unit_test(empty_items),
		cmocka_unit_test(missing_equals),
		cmocka_unit_test(missing_key),
		cmocka_unit_test(missing_value),
		cmocka_unit_test(unknown_key),
		cmocka_unit_test(duplicate_key),
		cmocka_unit_test(zero_value),
		cmocka_unit_test(negative_value),
		cmocka_unit_test(non_numeric_value),
		cmocka_unit_test(overflowing_value),
		cmocka_unit_test(dp_auto_and_number),
		cmocka_unit_test(order_duplicate_dim),
		cmocka_unit_test(order_unknown_dim),
		cmocka_unit_test(order_empty_token),
		cmocka_unit_test(order_omits_sized_dim),
		cmocka_unit_test(order_completion),
		cmocka_unit_test(vpp_needs_pp),
		cmocka_unit_test(length_limit),
		cmocka_unit_test(nonprintable_bytes_not_echoed),
		cmocka_unit_test(small_message_buffer),
		cmocka_unit_test(failure_leaves_defaults),
		cmocka_unit_test(format_round_trip),
		cmocka_unit_test(format_canonical_text),
		cmocka_unit_test(format_small_buffer),
		cmocka_unit_test(equal_distinguishes),
		cmocka_unit_test(overlay_precedence),
		cmocka_unit_test(overlay_of_nothing_keeps_all),
		cmocka_unit_test(overlay_then_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

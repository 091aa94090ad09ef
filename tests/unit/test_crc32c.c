/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_crc32c.c - CRC-32C and the CRC of a concatenation from its parts'
 * (kernels/crc32c.h).
 *
 * Expected values come from published check values and from a reference
 * written here the slow way: eight one-bit shifts per byte with the reflected
 * polynomial, no tables. Nothing is taken from the code under test.
 *
 * Both implementations are tested. On x86-64 the library picks the crc32
 * instruction by itself, and LLMP_CRC32C_PORTABLE=1 in its environment, read
 * at its first call, makes it take the portable slice-by-8 code instead. So
 * main() forks before anything here calls kern_crc32c: the child sets the
 * variable and runs the same comparisons (its report goes to stderr, outside
 * the TAP stream), and the test case portable_code_passes_the_same_tests
 * asserts that it exited cleanly. Elsewhere both processes run the portable
 * code, which is tested twice.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernels/crc32c.h"
#include "tests/unit/bits.h"

#define ARRAY_LEN(a) (sizeof a / sizeof((a)[0]))

/* ---------------------------------------------------------- random numbers */

static unsigned char *random_buffer(size_t len, uint64_t seed)
{
	unsigned char *p = malloc(len);
	assert_non_null(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)next_random(&seed);
	return p;
}

/* -------------------------------------------------------------- reference */

/* One bit at a time: the definition of a reflected CRC, with CRC-32C's
 * polynomial 0x1EDC6F41 bit-reversed, and the 0xFFFFFFFF in and out. */
static uint32_t reference_crc32c(uint32_t crc, const unsigned char *p, size_t len)
{
	uint32_t reg = ~crc;

	for (size_t i = 0; i < len; i++) {
		reg ^= p[i];
		for (int bit = 0; bit < 8; bit++)
			reg = (reg & 1) ? (reg >> 1) ^ 0x82F63B78u : reg >> 1;
	}
	return ~reg;
}

/* ---------------------------------------------------------- known vectors */

struct vector {
	const char *name;
	unsigned char bytes[32];
	size_t len;
	uint32_t crc;
};

/* "123456789" is the usual check value; the 32-byte ones are RFC 3720's
 * (iSCSI) appendix B.4 examples. */
static void fill_vectors(struct vector *v)
{
	v[0] = (struct vector){ .name = "123456789", .len = 9, .crc = 0xE3069283u };
	memcpy(v[0].bytes, "123456789", 9);
	v[1] = (struct vector){ .name = "32 zeros", .len = 32, .crc = 0x8A9136AAu };
	v[2] = (struct vector){ .name = "32 x 0xff", .len = 32, .crc = 0x62A8AB43u };
	memset(v[2].bytes, 0xff, 32);
	v[3] = (struct vector){ .name = "0..31", .len = 32, .crc = 0x46DD794Eu };
	v[4] = (struct vector){ .name = "31..0", .len = 32, .crc = 0x113FDB5Cu };
	for (int i = 0; i < 32; i++) {
		v[3].bytes[i] = (unsigned char)i;
		v[4].bytes[i] = (unsigned char)(31 - i);
	}
	v[5] = (struct vector){ .name = "empty", .len = 0, .crc = 0 };
}

static void known_vectors_match_published_values(void **state)
{
	(void)state;
	struct vector v[6];

	fill_vectors(v);
	for (size_t i = 0; i < ARRAY_LEN(v); i++) {
		/* The reference must agree too, or the other tests prove nothing. */
		if (reference_crc32c(0, v[i].bytes, v[i].len) != v[i].crc ||
		    kern_crc32c(0, v[i].bytes, v[i].len) != v[i].crc)
			fail_msg("%s: reference %08x, kern_crc32c %08x, expected %08x", v[i].name,
				 reference_crc32c(0, v[i].bytes, v[i].len),
				 kern_crc32c(0, v[i].bytes, v[i].len), v[i].crc);
	}
}

static void null_with_zero_length_returns_crc_unchanged(void **state)
{
	(void)state;
	static const uint32_t crcs[] = { 0, 1, 0xE3069283u, 0xFFFFFFFFu, 0xDEADBEEFu };
	unsigned char byte = 0x5a;

	for (size_t i = 0; i < ARRAY_LEN(crcs); i++) {
		assert_int_equal(kern_crc32c(crcs[i], NULL, 0), crcs[i]);
		assert_int_equal(kern_crc32c(crcs[i], &byte, 0), crcs[i]);
	}
}

/* ------------------------------------------------- against the reference */

static void check_against_reference(const unsigned char *p, size_t len, uint32_t start, size_t offset)
{
	uint32_t want = reference_crc32c(start, p, len), got = kern_crc32c(start, p, len);
	if (got != want)
		fail_msg("length %zu at offset %zu from %08x: got %08x, want %08x", len, offset, start, got,
			 want);
}

static void every_length_to_300_at_every_offset_matches_reference(void **state)
{
	(void)state;
	enum { MAX_LEN = 300, OFFSETS = 16 };
	/* The buffer itself is 64-byte aligned (malloc gives 16), so offset 0..15
	 * covers every position relative to an 8- or 16-byte boundary. */
	unsigned char *buf = random_buffer(MAX_LEN + OFFSETS + 64, 1);
	unsigned char *base = buf + (64 - (uintptr_t)buf % 64) % 64;

	for (size_t offset = 0; offset < OFFSETS; offset++)
		for (size_t len = 0; len <= MAX_LEN; len++) {
			check_against_reference(base + offset, len, 0, offset);
			check_against_reference(base + offset, len, 0x12345678u, offset);
		}
	free(buf);
}

static void long_lengths_match_reference(void **state)
{
	(void)state;
	/* Lengths near multiples of 256 and 4096 bytes and of three times those,
	 * where a fast implementation may change strategy, then random ones. */
	static const size_t edges[] = { 256, 512, 768, 1024, 3072, 4096, 8192, 12288, 16384, 24576, 36864 };
	enum { MAX_LEN = 65536 + 64 };
	unsigned char *buf = random_buffer(MAX_LEN + 16, 2);
	uint64_t rng = 3;

	for (size_t e = 0; e < ARRAY_LEN(edges); e++)
		for (size_t len = edges[e] - 9; len <= edges[e] + 9; len++)
			for (size_t offset = 0; offset < 16; offset += 5)
				check_against_reference(buf + offset, len, 0, offset);
	for (int i = 0; i < 200; i++) {
		size_t len = (size_t)(next_random(&rng) % MAX_LEN);
		size_t offset = (size_t)(next_random(&rng) % 16);
		check_against_reference(buf + offset, len, (uint32_t)next_random(&rng), offset);
	}
	free(buf);
}

static void one_mebibyte_and_three_matches_reference(void **state)
{
	(void)state;
	size_t len = ((size_t)1 << 20) + 3;
	unsigned char *buf = random_buffer(len + 1, 4);

	check_against_reference(buf, len, 0, 0);
	check_against_reference(buf + 1, len, 0, 1);
	free(buf);
}

/* ------------------------------------------------------------ incremental */

static void pieces_at_random_split_points_equal_one_shot(void **state)
{
	(void)state;
	enum { LEN = 50000 };
	unsigned char *buf = random_buffer(LEN, 5);
	uint64_t rng = 6;
	uint32_t whole = kern_crc32c(0, buf, LEN);

	assert_int_equal(whole, reference_crc32c(0, buf, LEN));
	for (int trial = 0; trial < 300; trial++) {
		/* Up to 8 pieces, cut where the random numbers say; some are empty. */
		size_t cuts[9] = { 0 }, ncuts = 1 + (size_t)(next_random(&rng) % 8);
		for (size_t i = 1; i < ncuts; i++)
			cuts[i] = (size_t)(next_random(&rng) % (LEN + 1));
		cuts[ncuts] = LEN;
		for (size_t i = 1; i < ncuts; i++) /* insertion sort */
			for (size_t j = i; j > 1 && cuts[j - 1] > cuts[j]; j--) {
				size_t t = cuts[j];
				cuts[j] = cuts[j - 1], cuts[j - 1] = t;
			}
		uint32_t crc = 0;
		for (size_t i = 0; i < ncuts; i++)
			crc = kern_crc32c(crc, buf + cuts[i], cuts[i + 1] - cuts[i]);
		if (crc != whole)
			fail_msg("trial %d in %zu pieces: %08x, one shot %08x", trial, ncuts, crc, whole);
	}
	/* Byte by byte too. */
	uint32_t crc = 0;
	for (size_t i = 0; i < 5000; i++)
		crc = kern_crc32c(crc, buf + i, 1);
	assert_int_equal(crc, kern_crc32c(0, buf, 5000));
	free(buf);
}

/* ---------------------------------------------------------------- combine */

/* The CRC of A followed by B from the two CRCs, with the reference computing all three. */
static void combine_equals_the_crc_of_the_concatenation(void **state)
{
	(void)state;
	enum { LEN = 20000 };
	unsigned char *buf = random_buffer(LEN, 7);
	uint64_t rng = 8;

	for (int trial = 0; trial < 200; trial++) {
		size_t len = (size_t)(next_random(&rng) % (LEN + 1));
		size_t cut = (size_t)(next_random(&rng) % (len + 1)); /* either part may be empty */
		uint32_t a = reference_crc32c(0, buf, cut), b = reference_crc32c(0, buf + cut, len - cut);
		uint32_t want = reference_crc32c(0, buf, len), got = kern_crc32c_combine(a, b, len - cut);
		if (got != want)
			fail_msg("trial %d: %zu + %zu bytes: combined %08x, whole %08x", trial, cut,
				 len - cut, got, want);
	}
	/* A long second part: a mebibyte and three of zeros after "123456789". */
	size_t zeros = ((size_t)1 << 20) + 3;
	unsigned char *joined = calloc(9 + zeros, 1);
	assert_non_null(joined);
	memcpy(joined, "123456789", 9);
	assert_int_equal(kern_crc32c_combine(0xE3069283u, reference_crc32c(0, joined + 9, zeros), zeros),
			 reference_crc32c(0, joined, 9 + zeros));
	free(joined);
	free(buf);
}

/* Lengths far past any buffer: joining three parts either way gives one answer. */
static void combine_is_associative_at_large_lengths(void **state)
{
	(void)state;
	uint64_t rng = 9;

	for (int trial = 0; trial < 100; trial++) {
		uint32_t a = (uint32_t)next_random(&rng), b = (uint32_t)next_random(&rng);
		uint32_t c = (uint32_t)next_random(&rng);
		uint64_t lb = next_random(&rng) >> 20, lc = next_random(&rng) >> 20;
		uint32_t left = kern_crc32c_combine(kern_crc32c_combine(a, b, lb), c, lc);
		uint32_t right = kern_crc32c_combine(a, kern_crc32c_combine(b, c, lc), lb + lc);
		if (left != right)
			fail_msg("trial %d: (ab)c %08x, a(bc) %08x", trial, left, right);
	}
	/* An empty second part leaves the first CRC as it is. */
	assert_int_equal(kern_crc32c_combine(0xE3069283u, 0, 0), 0xE3069283u);
}

/* ------------------------------------------------------- portable process */

static const struct CMUnitTest comparisons[] = {
	cmocka_unit_test(known_vectors_match_published_values),
	cmocka_unit_test(null_with_zero_length_returns_crc_unchanged),
	cmocka_unit_test(every_length_to_300_at_every_offset_matches_reference),
	cmocka_unit_test(long_lengths_match_reference),
	cmocka_unit_test(one_mebibyte_and_three_matches_reference),
	cmocka_unit_test(pieces_at_random_split_points_equal_one_shot),
};

static pid_t portable_child = -1;

/* Fork a process that runs the comparisons on the portable code. Must run
 * before this process calls kern_crc32c, whose choice the child would inherit. */
static pid_t start_portable_child(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid; /* the parent, or -1 */
	if (setenv("LLMP_CRC32C_PORTABLE", "1", 1) != 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 ||
	    setenv("CMOCKA_MESSAGE_OUTPUT", "STDOUT", 1) != 0) /* not TAP: not counted */
		exit(2);
	printf("test_crc32c: the portable code, LLMP_CRC32C_PORTABLE=1\n");
	int failed = cmocka_run_group_tests(comparisons, NULL, NULL);
	fflush(stdout);
	exit(failed == 0 ? 0 : 1);
}

static void portable_code_passes_the_same_tests(void **state)
{
	(void)state;
	int status;

	assert_true(portable_child > 0);
	assert_int_equal(waitpid(portable_child, &status, 0), portable_child);
	portable_child = -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the child running the portable code %s %d; its report is on stderr",
			 WIFEXITED(status) ? "exited with" : "died of signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

int main(void)
{
	portable_child = start_portable_child();

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(known_vectors_match_published_values),
		cmocka_unit_test(null_with_zero_length_returns_crc_unchanged),
		cmocka_unit_test(every_length_to_300_at_every_offset_matches_reference),
		cmocka_unit_test(long_lengths_match_reference),
		cmocka_unit_test(one_mebibyte_and_three_matches_reference),
		cmocka_unit_test(pieces_at_random_split_points_equal_one_shot),
		cmocka_unit_test(combine_equals_the_crc_of_the_concatenation),
		cmocka_unit_test(combine_is_associative_at_large_lengths),
		cmocka_unit_test(portable_code_passes_the_same_tests),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_ckpt_spec.c - parser and printer of the --llm-checkpoint grammar.
 *
 * Written like the layout parser (llmp_spec.c): every rejection names the
 * item at fault and the reason, and user bytes reach a message only through
 * llmp_show(). What differs is the directory: it is the one item that is not
 * key=value, and being a path it may hold anything but a comma, so the
 * parser is careful that a path cut by a comma is an error, never a quiet
 * second item.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include <llmp/llmp_ckpt_spec.h>

#include <stdio.h>
#include <string.h>

#include "common/fail.h"
#include "items.h"

#define KNOWN_KEYS "dir every keep restarts files stripe"
#define STR_(x) #x
#define STR(x) STR_(x)

void llmp_ckpt_spec_init(llmp_ckpt_spec *spec)
{
	memset(spec, 0, sizeof *spec);
}

/*
 * A decimal count in min..LLMP_CKPT_NUMBER_MAX from v[0..n). shown is the
 * item's value for messages ("30min" for every=30min); unit says what the
 * number counts, for a value that is not a number at all.
 */
static llmp_status parse_count(const char *key, const char *shown, const char *v, size_t n, uint32_t min,
			       const char *unit, uint32_t *out, char *msg, size_t msglen)
{
	uint64_t value = 0;
	size_t sign = n > 1 && v[0] == '-', end = sign;

	while (end < n && v[end] >= '0' && v[end] <= '9')
		end++;
	if (n == 0 || end < n)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "%s=%s: not a number%s", key, shown, unit);
	if (sign)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "%s=%s: must %s", key, shown,
				 min ? "be at least 1" : "not be negative");
	for (size_t i = 0; i < n; i++) {
		/* Checked per digit, so no number of digits can overflow. */
		value = value * 10 + (uint64_t)(v[i] - '0');
		if (value > LLMP_CKPT_NUMBER_MAX)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 "%s=%s: larger than the largest accepted, %u", key, shown,
					 LLMP_CKPT_NUMBER_MAX);
	}
	if (value < min)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "%s=%s: must be at least %u", key, shown, min);
	*out = (uint32_t)value;
	return LLMP_OK;
}

/* every=N (steps) or every=Nmin (minutes). */
static llmp_status parse_every(const char *v, size_t n, llmp_ckpt_spec *spec, char *msg, size_t msglen)
{
	char shown[LLMP_SHOW_MAX];
	bool minutes = n > 3 && memcmp(v + n - 3, "min", 3) == 0;

	llmp_show(shown, v, n);
	if (parse_count("every", shown, v, minutes ? n - 3 : n, 1, " of steps (N) or minutes (Nmin)",
			&spec->every, msg, msglen) != LLMP_OK)
		return LLMP_ERR_SPEC;
	spec->every_minutes = minutes;
	return LLMP_OK;
}

/* files=rank (a shard file per rank, the default) or files=node (one per node). */
static llmp_status parse_files(const char *v, size_t n, llmp_ckpt_spec *spec, char *msg, size_t msglen)
{
	char shown[LLMP_SHOW_MAX];
	if (n == 4 && memcmp(v, "rank", 4) == 0)
		spec->node_files = false;
	else if (n == 4 && memcmp(v, "node", 4) == 0)
		spec->node_files = true;
	else
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "files=%s: must be rank (a shard file per rank) or node (one per node)",
				 llmp_show(shown, v, n));
	return LLMP_OK;
}

llmp_status llmp_ckpt_stripe_check(int64_t count, uint64_t size, const char *pool, char *msg, size_t msglen)
{
	size_t plen = pool ? strnlen(pool, LLMP_CKPT_STRIPE_POOL_MAX) : 0;
	if (count == 0 && (size || plen))
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "stripe=: a stripe size or pool needs a stripe count");
	if (count < -1 || count > LLMP_CKPT_STRIPE_COUNT_MAX)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "stripe=: count %lld is not -1 (all OSTs) or 1..%d", (long long)count,
				 LLMP_CKPT_STRIPE_COUNT_MAX);
	/* Lustre refuses other sizes when the layout is set (EINVAL). */
	if (size % LLMP_CKPT_STRIPE_UNIT || size >= ((uint64_t)4 << 30))
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "stripe=: size %llu bytes is not a multiple of 64K below 4G",
				 (unsigned long long)size);
	if (plen >= LLMP_CKPT_STRIPE_POOL_MAX)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "stripe=: pool name longer than %d characters",
				 LLMP_CKPT_STRIPE_POOL_MAX - 1);
	for (size_t i = 0; i < plen; i++) {
		char c = pool[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-')) {
			char shown[LLMP_SHOW_MAX];
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 "stripe=: pool '%s' may hold only letters, digits, '_' and '-'",
					 llmp_show(shown, pool, plen));
		}
	}
	return LLMP_OK;
}

/* SIZE of stripe=: bytes, or K, M, G (binary) of them. */
static llmp_status parse_stripe_size(const char *shown, const char *v, size_t n, uint64_t *out, char *msg,
				     size_t msglen)
{
	uint64_t value = 0, unit = 1;
	size_t digits = n;
	if (n > 1) {
		switch (v[n - 1]) {
		case 'k':
		case 'K': unit = (uint64_t)1 << 10; break;
		case 'm':
		case 'M': unit = (uint64_t)1 << 20; break;
		case 'g':
		case 'G': unit = (uint64_t)1 << 30; break;
		}
		digits -= unit > 1;
	}
	for (size_t i = 0; i < digits; i++) {
		if (v[i] < '0' || v[i] > '9')
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 "stripe=%s: size is not a number of bytes (K, M, G suffixes)",
					 shown);
		value = value * 10 + (uint64_t)(v[i] - '0');
		if (value > ((uint64_t)4 << 30)) /* checked per digit: no overflow */
			break;
	}
	*out = value * unit;
	if (value == 0 || value > ((uint64_t)4 << 30) || *out % LLMP_CKPT_STRIPE_UNIT ||
	    *out >= ((uint64_t)4 << 30))
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "stripe=%s: size must be a multiple of 64K below 4G (64K, 1M, 4M...)",
				 shown);
	return LLMP_OK;
}

/*
 * stripe=COUNT[:SIZE][:POOL]: COUNT -1 or 1..2000; an empty SIZE between two
 * colons keeps the filesystem's (stripe=8::flash).
 */
static llmp_status parse_stripe(const char *v, size_t n, llmp_ckpt_spec *spec, char *msg, size_t msglen)
{
	char shown[LLMP_SHOW_MAX];
	const char *part[3] = { v, NULL, NULL };
	size_t len[3] = { n, 0, 0 }, parts = 1;
	llmp_show(shown, v, n);
	for (size_t i = 0; i < n; i++) {
		if (v[i] != ':')
			continue;
		if (parts == 3)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "stripe=%s: more than COUNT:SIZE:POOL",
					 shown);
		len[parts - 1] = (size_t)(v + i - part[parts - 1]);
		part[parts] = v + i + 1;
		len[parts] = n - i - 1;
		parts++;
	}
	uint32_t count = 0;
	if (len[0] == 2 && memcmp(v, "-1", 2) == 0)
		spec->stripe_count = -1;
	else if (len[0] > 1 && v[0] == '-')
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "stripe=%s: count must be -1 (all OSTs) or 1..%d", shown,
				 LLMP_CKPT_STRIPE_COUNT_MAX);
	else if (parse_count("stripe", shown, v, len[0], 1, " of OSTs (COUNT, -1: all)", &count, msg,
			     msglen) != LLMP_OK)
		return LLMP_ERR_SPEC;
	else if (count > LLMP_CKPT_STRIPE_COUNT_MAX)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "stripe=%s: count must be -1 (all OSTs) or 1..%d", shown,
				 LLMP_CKPT_STRIPE_COUNT_MAX);
	else
		spec->stripe_count = (int32_t)count;
	spec->stripe_size = 0;
	spec->stripe_pool[0] = '\0';
	if (parts > 1 && len[1] == 0 && parts == 2)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "stripe=%s: empty size after ':'", shown);
	if (parts > 1 && len[1] && parse_stripe_size(shown, part[1], len[1], &spec->stripe_size, msg, msglen))
		return LLMP_ERR_SPEC;
	if (parts == 3) {
		if (len[2] == 0 || len[2] >= LLMP_CKPT_STRIPE_POOL_MAX)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 "stripe=%s: pool name must be 1-%d characters", shown,
					 LLMP_CKPT_STRIPE_POOL_MAX - 1);
		memcpy(spec->stripe_pool, part[2], len[2]);
		spec->stripe_pool[len[2]] = '\0';
	}
	llmp_status st = llmp_ckpt_stripe_check(spec->stripe_count, spec->stripe_size, spec->stripe_pool, msg,
						msglen);
	if (st != LLMP_OK) /* the pool's characters: name the whole item */
		return llmp_fail(st, msg, msglen,
				 "stripe=%s: pool may hold only letters, digits, '_' and '-'", shown);
	return LLMP_OK;
}

/* The directory, from a bare item or dir=: a path of printable bytes. */
static llmp_status set_dir(const char *item, size_t itemlen, const char *v, size_t n, llmp_ckpt_spec *spec,
			   char *msg, size_t msglen)
{
	char shown[LLMP_SHOW_MAX];

	if (n >= LLMP_CKPT_DIR_MAX)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "'%s': directory is longer than %d bytes",
				 llmp_show(shown, item, itemlen), LLMP_CKPT_DIR_MAX - 1);
	/* A newline or escape in a path breaks the environment's readers and
	 * the logs that print it; no real checkpoint root needs one. */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 "'%s': control character at byte %zu of the directory",
					 llmp_show(shown, item, itemlen), i + 1);
	memcpy(spec->dir, v, n);
	spec->dir[n] = '\0';
	spec->given |= LLMP_CKPT_GIVEN_DIR;
	return LLMP_OK;
}

/* Where the DIR of the source being parsed came from. */
enum dir_source { DIR_NONE, DIR_BARE, DIR_KEY };

static llmp_status parse_bare(const char *item, size_t n, enum dir_source *dir_from, llmp_ckpt_spec *spec,
			      char *msg, size_t msglen)
{
	char shown[LLMP_SHOW_MAX], first[LLMP_SHOW_MAX];

	if (n == 4 && memcmp(item, "help", 4) == 0)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "'help' must be given alone (a directory named help: dir=help or ./help)");
	if (*dir_from != DIR_NONE)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "'%s': a second directory after '%s' (a directory cannot "
				 "contain a comma; other items are key=value)",
				 llmp_show(shown, item, n), llmp_show(first, spec->dir, strlen(spec->dir)));
	*dir_from = DIR_BARE;
	return set_dir(item, n, item, n, spec, msg, msglen);
}

static const struct {
	const char *name;
	unsigned bit;
} keys[] = {
	{ "dir", LLMP_CKPT_GIVEN_DIR },     { "every", LLMP_CKPT_GIVEN_EVERY },
	{ "keep", LLMP_CKPT_GIVEN_KEEP },   { "restarts", LLMP_CKPT_GIVEN_RESTARTS },
	{ "files", LLMP_CKPT_GIVEN_FILES }, { "stripe", LLMP_CKPT_GIVEN_STRIPE },
};

/* The index in keys[] of the key s[0..n), or -1 when unknown. */
static int key_lookup(const char *s, size_t n)
{
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
		if (strlen(keys[k].name) == n && memcmp(keys[k].name, s, n) == 0)
			return (int)k;
	return -1;
}

/* What parsing one source builds up, item by item. */
struct parse_state {
	enum dir_source dir_from;
	llmp_ckpt_spec spec;
};

static llmp_status parse_item(const char *item, size_t n, void *state, char *msg, size_t msglen)
{
	enum dir_source *dir_from = &((struct parse_state *)state)->dir_from;
	llmp_ckpt_spec *spec = &((struct parse_state *)state)->spec;
	char shown[LLMP_SHOW_MAX], first[LLMP_SHOW_MAX];
	const char *eq = memchr(item, '=', n);

	if (!eq)
		return parse_bare(item, n, dir_from, spec, msg, msglen);
	size_t kn = (size_t)(eq - item), vn = n - kn - 1;
	const char *v = eq + 1;
	if (kn == 0)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "'%s': missing key before '='",
				 llmp_show(shown, item, n));
	int k = key_lookup(item, kn);
	if (k < 0)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "unknown key '%s' (known keys: " KNOWN_KEYS "%s)",
				 llmp_show(shown, item, kn),
				 memchr(item, '/', kn) ? "; a directory with '=' in it: dir=DIR" : "");
	unsigned key = keys[k].bit;
	if (vn == 0)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "%s=: missing value", keys[k].name);
	if (key == LLMP_CKPT_GIVEN_DIR) {
		if (*dir_from == DIR_BARE)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 "'%s': a second directory after '%s' (give it once, "
					 "as DIR or dir=DIR)",
					 llmp_show(shown, item, n),
					 llmp_show(first, spec->dir, strlen(spec->dir)));
		*dir_from = DIR_KEY;
		return set_dir(item, n, v, vn, spec, msg, msglen);
	}
	llmp_status st = LLMP_OK;
	llmp_show(shown, v, vn);
	switch (key) {
	case LLMP_CKPT_GIVEN_EVERY: st = parse_every(v, vn, spec, msg, msglen); break;
	case LLMP_CKPT_GIVEN_KEEP:
		st = parse_count("keep", shown, v, vn, 1, "", &spec->keep, msg, msglen);
		break;
	case LLMP_CKPT_GIVEN_RESTARTS:
		st = parse_count("restarts", shown, v, vn, 0, "", &spec->max_restarts, msg, msglen);
		break;
	case LLMP_CKPT_GIVEN_FILES: st = parse_files(v, vn, spec, msg, msglen); break;
	case LLMP_CKPT_GIVEN_STRIPE: st = parse_stripe(v, vn, spec, msg, msglen); break;
	}
	if (st == LLMP_OK)
		spec->given |= key;
	return st;
}

llmp_status llmp_ckpt_spec_parse_partial(const char *text, llmp_ckpt_spec *spec, char *msg, size_t msglen)
{
	if (!spec)
		return llmp_fail(LLMP_ERR_ARG, msg, msglen, "no checkpoint spec to fill");
	llmp_ckpt_spec_init(spec);
	if (!text)
		return llmp_fail(LLMP_ERR_ARG, msg, msglen, "no checkpoint spec given");

	size_t len = strnlen(text, LLMP_CKPT_SPEC_MAX_LEN + 1);
	if (len > LLMP_CKPT_SPEC_MAX_LEN)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "checkpoint spec is longer than %d characters",
				 LLMP_CKPT_SPEC_MAX_LEN);
	if (len == 0)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "empty checkpoint spec (expected DIR[,every=N|Nmin]"
				 "[,keep=N][,restarts=N][,files=rank|node][,stripe=COUNT[:SIZE][:POOL]], "
				 "or 'help')");
	if (strcmp(text, "help") == 0) {
		spec->help = true;
		return LLMP_OK;
	}

	struct parse_state parsed = { .dir_from = DIR_NONE };
	llmp_ckpt_spec_init(&parsed.spec);
	llmp_status st = plan_parse_items(text, len, parse_item, &parsed, msg, msglen);
	if (st != LLMP_OK)
		return st;
	*spec = parsed.spec;
	return LLMP_OK;
}

void llmp_ckpt_spec_overlay(llmp_ckpt_spec *base, const llmp_ckpt_spec *top)
{
	if (top->given & LLMP_CKPT_GIVEN_DIR)
		memcpy(base->dir, top->dir, sizeof base->dir);
	if (top->given & LLMP_CKPT_GIVEN_EVERY) {
		base->every = top->every;
		base->every_minutes = top->every_minutes;
	}
	if (top->given & LLMP_CKPT_GIVEN_KEEP)
		base->keep = top->keep;
	if (top->given & LLMP_CKPT_GIVEN_RESTARTS)
		base->max_restarts = top->max_restarts;
	if (top->given & LLMP_CKPT_GIVEN_FILES)
		base->node_files = top->node_files;
	if (top->given & LLMP_CKPT_GIVEN_STRIPE) {
		base->stripe_count = top->stripe_count;
		base->stripe_size = top->stripe_size;
		memcpy(base->stripe_pool, top->stripe_pool, sizeof base->stripe_pool);
	}
	base->given |= top->given;
	base->help = base->help || top->help;
}

llmp_status llmp_ckpt_spec_check(llmp_ckpt_spec *spec, char *msg, size_t msglen)
{
	if (!spec)
		return llmp_fail(LLMP_ERR_ARG, msg, msglen, "no checkpoint spec to check");
	if (spec->help)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "'help' asks for the grammar, it is not a checkpoint spec");
	if (!(spec->given & LLMP_CKPT_GIVEN_DIR) || !spec->dir[0])
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "no checkpoint directory given (DIR or dir=DIR)");
	if (!(spec->given & LLMP_CKPT_GIVEN_KEEP))
		spec->keep = LLMP_CKPT_DEFAULT_KEEP;
	if (!(spec->given & LLMP_CKPT_GIVEN_RESTARTS))
		spec->max_restarts = LLMP_CKPT_DEFAULT_RESTARTS;
	return LLMP_OK;
}

/* ",stripe=COUNT[:SIZE][:POOL]" with SIZE in its largest exact unit, or "" when not asked for. */
static void format_stripe(const llmp_ckpt_spec *spec, char *out, size_t outlen)
{
	char size[32] = "";
	uint64_t b = spec->stripe_size;
	out[0] = '\0';
	if (!spec->stripe_count)
		return;
	if (b)
		snprintf(size, sizeof size, ":%llu%s",
			 (unsigned long long)(b % (1u << 30) == 0   ? b >> 30
					      : b % (1u << 20) == 0 ? b >> 20
								    : b >> 10),
			 b % (1u << 30) == 0   ? "G"
			 : b % (1u << 20) == 0 ? "M"
					       : "K");
	snprintf(out, outlen, ",stripe=%d%s%s%s", (int)spec->stripe_count,
		 spec->stripe_pool[0] && !b ? ":" : size, spec->stripe_pool[0] ? ":" : "", spec->stripe_pool);
}

int llmp_ckpt_spec_format(const llmp_ckpt_spec *spec, char *out, size_t outlen)
{
	char every[32] = "", stripe[64];

	if (spec->every)
		snprintf(every, sizeof every, ",every=%u%s", spec->every, spec->every_minutes ? "min" : "");
	/* A bare DIR with '=' would read as a key, and a bare "help" as the
	 * request for help: those two need the dir= form to parse back. */
	bool keyed = strchr(spec->dir, '=') || strcmp(spec->dir, "help") == 0;
	/* files=rank, the default, is left out: the text is the one older versions wrote. */
	format_stripe(spec, stripe, sizeof stripe);
	return snprintf(out, outlen, "%s%s%s,keep=%u,restarts=%u%s%s", keyed ? "dir=" : "", spec->dir, every,
			spec->keep, spec->max_restarts, spec->node_files ? ",files=node" : "", stripe);
}

const char *llmp_ckpt_spec_grammar(void)
{
	return "Checkpoint grammar: DIR[,every=N|Nmin][,keep=N][,restarts=N][,files=rank|node]\n"
	       "                    [,stripe=COUNT[:SIZE][:POOL]], any order\n"
	       "  DIR, dir=DIR  checkpoint root, one directory per step below it; relative\n"
	       "             to the job's working directory unless absolute   (required)\n"
	       "  every=N    a checkpoint every N training steps\n  every=Nmin a checkpoint every N minutes\n"
	       "             (default: only when the job is asked to stop)\n"
	       "  keep=N     complete checkpoints kept, N >= 1                (default " STR(
		       LLMP_CKPT_DEFAULT_KEEP) ")\n"
					       "  restarts=N failed runs in a row without a new checkpoint after which\n"
					       "             the job is not requeued; 0: never after a failure (default " STR(
						       LLMP_CKPT_DEFAULT_RESTARTS) ")\n"
										   "  files=node one shard file per node, written by all its ranks, instead of\n"
										   "             one per rank: fewer files on a parallel filesystem (default rank)\n"
										   "  stripe=COUNT[:SIZE][:POOL]  on Lustre, the layout of the files of each step\n"
										   "             directory: COUNT OSTs (-1: all), SIZE per stripe (64K multiple; K M G),\n"
										   "             OST pool POOL; stripe=8::flash keeps the size. Ignored elsewhere\n"
										   "             (default: the directory's own layout)\n"
										   "  help       print this text\n"
										   "A directory cannot contain a comma; one with '=' in it is given as dir=DIR.\n"
										   "Example: /scratch/run1,every=500,keep=3   or   dir=ckpt,every=30min\n";
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_spec.c - parser and printer of the --llm-parallel grammar.
 *
 * Every rejection names the item at fault and the reason, because the text
 * reaches users through sbatch and srun, far from any source code. Bytes of
 * user input are never echoed raw: non-printable characters become '?', so a
 * hostile option cannot write escape sequences to a terminal or a job log.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include <llmp/llmp_spec.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/fail.h"
#include "items.h"
#include "plan_internal.h"

static const char *const dim_names[LLMP_NDIMS] = { "tp", "cp", "ep", "dp", "pp" };

static const char *const key_names[LLMP_NKEYS] = {
	"tp", "cp", "ep", "dp", "pp", "etp", "order", "vpp",
};

/* Megatron-Core's default order; dimensions missing from a user's order are
 * appended in Megatron's own sequence (RankGenerator walks tp, pp, dp, ep, cp). */
static const enum llmp_dim default_order[LLMP_NDIMS] = {
	LLMP_DIM_TP, LLMP_DIM_CP, LLMP_DIM_EP, LLMP_DIM_DP, LLMP_DIM_PP,
};

const char *llmp_dim_name(enum llmp_dim dim)
{
	return (unsigned)dim < LLMP_NDIMS ? dim_names[dim] : "?";
}

const char *llmp_key_name(enum llmp_key key)
{
	return (unsigned)key < LLMP_NKEYS ? key_names[key] : "?";
}

void llmp_spec_init(llmp_spec *spec)
{
	memset(spec, 0, sizeof *spec);
	for (int d = 0; d < LLMP_NDIMS; d++)
		spec->size[d] = 1;
	spec->size[LLMP_DIM_DP] = PLAN_DP_FILL;
	memcpy(spec->order, default_order, sizeof default_order);
}

static int key_lookup(const char *s, size_t n)
{
	for (int k = 0; k < LLMP_NKEYS; k++)
		if (strlen(key_names[k]) == n && memcmp(key_names[k], s, n) == 0)
			return k;
	return -1;
}

static int dim_lookup(const char *s, size_t n)
{
	for (int d = 0; d < LLMP_NDIMS; d++)
		if (n == 2 && memcmp(dim_names[d], s, 2) == 0)
			return d;
	return -1;
}

/* A size: decimal digits only, 1..LLMP_SIZE_MAX. */
static llmp_status parse_size(const char *key, const char *v, size_t n, uint32_t *out, char *msg,
			      size_t msglen)
{
	char shown[LLMP_SHOW_MAX];
	uint64_t value = 0;
	size_t i;

	if (v[0] == '-' && n > 1) {
		for (i = 1; i < n && v[i] >= '0' && v[i] <= '9'; i++)
			;
		if (i == n)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "%s=%s: must be a positive integer", key,
					 llmp_show(shown, v, n));
	}
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "%s=%s: not a number%s", key,
					 llmp_show(shown, v, n), strcmp(key, "dp") == 0 ? " or 'auto'" : "");
		value = value * 10 + (uint64_t)(v[i] - '0');
		if (value > LLMP_SIZE_MAX)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 "%s=%s: larger than the largest size, %u", key,
					 llmp_show(shown, v, n), LLMP_SIZE_MAX);
	}
	if (value == 0)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "%s=%s: must be at least 1", key,
				 llmp_show(shown, v, n));
	*out = (uint32_t)value;
	return LLMP_OK;
}

/* An order: dimension names joined by '-', each at most once. */
static llmp_status parse_order(const char *v, size_t n, llmp_spec *spec, char *msg, size_t msglen)
{
	char shown[LLMP_SHOW_MAX], tok[LLMP_SHOW_MAX];
	unsigned seen = 0, len = 0;
	size_t start = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && v[i] != '-')
			continue;
		size_t tn = i - start;
		if (tn == 0)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 "order=%s: empty dimension name (expected names "
					 "joined by '-', e.g. tp-cp-ep-dp-pp)",
					 llmp_show(shown, v, n));
		int d = dim_lookup(v + start, tn);
		if (d < 0)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
					 "order=%s: unknown dimension '%s' (known: tp cp ep dp pp)",
					 llmp_show(shown, v, n), llmp_show(tok, v + start, tn));
		if (seen & (1u << d))
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "order=%s: '%s' appears twice",
					 llmp_show(shown, v, n), dim_names[d]);
		seen |= 1u << d;
		spec->order[len++] = (enum llmp_dim)d;
		start = i + 1;
	}
	/* Complete the order as Megatron does; llmp_spec_check() rejects the
	 * result if an appended dimension has a size other than 1. */
	static const enum llmp_dim append[LLMP_NDIMS] = {
		LLMP_DIM_TP, LLMP_DIM_PP, LLMP_DIM_DP, LLMP_DIM_EP, LLMP_DIM_CP,
	};
	spec->order_len = len;
	for (int k = 0; k < LLMP_NDIMS; k++)
		if (!(seen & (1u << append[k])))
			spec->order[len++] = append[k];
	return LLMP_OK;
}

static llmp_status parse_item(const char *item, size_t n, void *state, char *msg, size_t msglen)
{
	llmp_spec *spec = state;
	char shown[LLMP_SHOW_MAX];
	const char *eq = memchr(item, '=', n);

	if (!eq) {
		if (n == 4 && memcmp(item, "help", 4) == 0)
			return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "'help' must be given alone");
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "'%s' is not key=value (e.g. tp=2)",
				 llmp_show(shown, item, n));
	}
	size_t kn = (size_t)(eq - item), vn = n - kn - 1;
	const char *v = eq + 1;
	if (kn == 0)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "'%s': missing key before '='",
				 llmp_show(shown, item, n));
	int key = key_lookup(item, kn);
	if (key < 0)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "unknown key '%s' (known keys: tp pp cp ep etp dp order vpp)",
				 llmp_show(shown, item, kn));
	const char *name = key_names[key];
	if (spec->given & (1u << key))
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "key '%s' given twice", name);
	if (vn == 0)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "%s=: missing value", name);

	llmp_status st = LLMP_OK;
	switch ((enum llmp_key)key) {
	case LLMP_KEY_ORDER: st = parse_order(v, vn, spec, msg, msglen); break;
	case LLMP_KEY_DP:
		if (vn == 4 && memcmp(v, "auto", 4) == 0)
			spec->size[LLMP_DIM_DP] = PLAN_DP_FILL;
		else
			st = parse_size(name, v, vn, &spec->size[LLMP_DIM_DP], msg, msglen);
		break;
	case LLMP_KEY_ETP: st = parse_size(name, v, vn, &spec->etp, msg, msglen); break;
	case LLMP_KEY_VPP: st = parse_size(name, v, vn, &spec->vpp, msg, msglen); break;
	case LLMP_KEY_TP:
	case LLMP_KEY_CP:
	case LLMP_KEY_EP:
	case LLMP_KEY_PP:
		/* These keys share their index with their dimension. */
		st = parse_size(name, v, vn, &spec->size[key], msg, msglen);
		break;
	case LLMP_NKEYS: break;
	}
	if (st == LLMP_OK)
		spec->given |= 1u << key;
	return st;
}

llmp_status llmp_spec_parse_partial(const char *text, llmp_spec *spec, char *msg, size_t msglen)
{
	if (!spec)
		return llmp_fail(LLMP_ERR_ARG, msg, msglen, "no spec to fill");
	llmp_spec_init(spec);
	if (!text)
		return llmp_fail(LLMP_ERR_ARG, msg, msglen, "no layout given");

	size_t len = strnlen(text, LLMP_SPEC_MAX_LEN + 1);
	if (len > LLMP_SPEC_MAX_LEN)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "layout is longer than %d characters",
				 LLMP_SPEC_MAX_LEN);
	if (len == 0)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "empty layout (expected key=value items such as tp=2,pp=2, or 'help')");
	if (strcmp(text, "help") == 0) {
		spec->help = true;
		return LLMP_OK;
	}

	llmp_spec parsed;
	llmp_spec_init(&parsed);
	llmp_status st = plan_parse_items(text, len, parse_item, &parsed, msg, msglen);
	if (st != LLMP_OK)
		return st;
	*spec = parsed;
	return LLMP_OK;
}

void llmp_spec_overlay(llmp_spec *base, const llmp_spec *top)
{
	for (int k = 0; k < LLMP_NKEYS; k++) {
		if (!(top->given & (1u << k)))
			continue;
		switch ((enum llmp_key)k) {
		case LLMP_KEY_ORDER:
			memcpy(base->order, top->order, sizeof base->order);
			base->order_len = top->order_len;
			break;
		case LLMP_KEY_ETP: base->etp = top->etp; break;
		case LLMP_KEY_VPP: base->vpp = top->vpp; break;
		default: base->size[k] = top->size[k]; break;
		}
		base->given |= 1u << k;
	}
	base->help = base->help || top->help;
}

/* Render the order the user gave (not the completed one) for messages. */
static void order_text(const llmp_spec *spec, char *buf, size_t buflen)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < spec->order_len && off < buflen; i++)
		off += (size_t)snprintf(buf + off, buflen - off, "%s%s", i ? "-" : "",
					dim_names[spec->order[i]]);
}

llmp_status llmp_spec_check(const llmp_spec *spec, char *msg, size_t msglen)
{
	if (!spec)
		return llmp_fail(LLMP_ERR_ARG, msg, msglen, "no spec to check");
	if (spec->help)
		return LLMP_OK;

	if (spec->order_len) {
		char order[32];
		order_text(spec, order, sizeof order);
		for (unsigned i = spec->order_len; i < LLMP_NDIMS; i++) {
			enum llmp_dim d = spec->order[i];
			uint32_t size = spec->size[d];
			if (d == LLMP_DIM_TP && spec->etp > 1 && size == 1)
				return llmp_fail(LLMP_ERR_SPEC, msg, msglen, "order=%s omits tp, but etp=%u",
						 order, spec->etp);
			if (size > 1)
				return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
						 "order=%s omits %s, whose size is %u", order, dim_names[d],
						 size);
		}
	}
	if (spec->vpp && spec->size[LLMP_DIM_PP] < 2)
		return llmp_fail(LLMP_ERR_SPEC, msg, msglen,
				 "vpp=%u needs pipeline parallelism, but pp is %u", spec->vpp,
				 spec->size[LLMP_DIM_PP]);
	return LLMP_OK;
}

llmp_status llmp_spec_parse(const char *text, llmp_spec *spec, char *msg, size_t msglen)
{
	llmp_status st = llmp_spec_parse_partial(text, spec, msg, msglen);
	if (st == LLMP_OK)
		st = llmp_spec_check(spec, msg, msglen);
	if (st != LLMP_OK && spec)
		llmp_spec_init(spec);
	return st;
}

/* Append to a bounded buffer, tracking the length a big enough one would need. */
static void put(char *buf, size_t buflen, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t buflen, size_t *off, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(*off < buflen ? buf + *off : NULL, *off < buflen ? buflen - *off : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n;
}

size_t llmp_spec_format(const llmp_spec *spec, char *buf, size_t buflen)
{
	/* Grammar order of the keys, not enum order. */
	static const enum llmp_key printed[LLMP_NKEYS] = {
		LLMP_KEY_TP,  LLMP_KEY_PP, LLMP_KEY_CP,    LLMP_KEY_EP,
		LLMP_KEY_ETP, LLMP_KEY_DP, LLMP_KEY_ORDER, LLMP_KEY_VPP,
	};
	size_t off = 0;
	const char *sep = "";

	if (buflen)
		buf[0] = '\0';
	if (spec->help) {
		put(buf, buflen, &off, "help");
		return off;
	}
	for (int i = 0; i < LLMP_NKEYS; i++) {
		enum llmp_key k = printed[i];
		if (!(spec->given & (1u << k)))
			continue;
		put(buf, buflen, &off, "%s%s=", sep, key_names[k]);
		sep = ",";
		switch (k) {
		case LLMP_KEY_ORDER:
			for (unsigned j = 0; j < spec->order_len; j++)
				put(buf, buflen, &off, "%s%s", j ? "-" : "", dim_names[spec->order[j]]);
			break;
		case LLMP_KEY_DP:
			if (spec->size[LLMP_DIM_DP] == PLAN_DP_FILL)
				put(buf, buflen, &off, "auto");
			else
				put(buf, buflen, &off, "%u", spec->size[LLMP_DIM_DP]);
			break;
		case LLMP_KEY_ETP: put(buf, buflen, &off, "%u", spec->etp); break;
		case LLMP_KEY_VPP: put(buf, buflen, &off, "%u", spec->vpp); break;
		default: put(buf, buflen, &off, "%u", spec->size[k]); break;
		}
	}
	return off;
}

bool llmp_spec_equal(const llmp_spec *a, const llmp_spec *b)
{
	return a->help == b->help && a->given == b->given && a->etp == b->etp && a->vpp == b->vpp &&
	       a->order_len == b->order_len && memcmp(a->size, b->size, sizeof a->size) == 0 &&
	       memcmp(a->order, b->order, sizeof a->order) == 0;
}

const char *llmp_spec_grammar(void)
{
	return "Layout grammar: KEY=VALUE[,KEY=VALUE...], any subset, any order\n"
	       "  tp=N     tensor parallel size                 (default 1)\n"
	       "  pp=N     pipeline parallel size               (default 1)\n"
	       "  cp=N     context parallel size                (default 1)\n"
	       "  ep=N     expert parallel size                 (default 1)\n"
	       "  etp=N    expert tensor parallel size          (default: tp)\n"
	       "  dp=N|auto  data parallel size; auto = tasks / (tp*pp*cp)  (default auto)\n"
	       "  order=D-D-D-D-D  rank order, leftmost dimension varies fastest;\n"
	       "           names from tp cp ep dp pp, each at most once; a dimension\n"
	       "           left out must have size 1   (default tp-cp-ep-dp-pp)\n"
	       "  vpp=N    virtual pipeline stages per rank, needs pp > 1\n  help     print this text\n"
	       "Groups are those of Megatron-Core's RankGenerator for the same sizes\n"
	       "and order; experts use the grid etp x ep x expert-dp x pp.\n"
	       "Example: tp=8,pp=4,cp=2   (on 64 tasks: dp=auto gives dp=1)\n";
}

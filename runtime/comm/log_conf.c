/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log_conf.c - LLMP_DEBUG read into a level per part (log.h). No context:
 * the unit test (tests/unit/test_log_conf.c) compiles this file alone.
 */
#include "log.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <llmp/llmp_env.h>

static const char *const level_names[RT_LOG_NLEVELS] = { "none", "warn", "info", "debug", "trace" };
static const char *const part_names[RT_LOG_NPARTS] = { "comm", "coll", "device", "ckpt", "job", "init" };

#define LEVELS "none, warn, info, debug or trace"
#define PARTS "comm, coll, device, ckpt, job or init"

const char *rt_log_level_name(enum rt_log_level level)
{
	return (unsigned)level < RT_LOG_NLEVELS ? level_names[level] : "?";
}

const char *rt_log_part_name(enum rt_log_part part)
{
	return (unsigned)part < RT_LOG_NPARTS ? part_names[part] : "?";
}

static void set_default(struct rt_log_conf *conf)
{
	memset(conf, 0, sizeof *conf);
	for (int p = 0; p < RT_LOG_NPARTS; p++)
		conf->level[p] = RT_LOG_DEFAULT;
}

/* The index of word (len bytes) in names, any case; -1 when absent. */
static int lookup(const char *const *names, int n, const char *word, size_t len)
{
	for (int i = 0; i < n; i++) {
		size_t j = 0;
		while (j < len && names[i][j] && tolower((unsigned char)word[j]) == names[i][j])
			j++;
		if (j == len && !names[i][j])
			return i;
	}
	return -1;
}

/* "LLMP_DEBUG='TEXT': 'WORD' what", conf back at the default, -1. */
static int bad(struct rt_log_conf *conf, char *msg, size_t msglen, const char *text, const char *word,
	       size_t len, const char *what)
{
	if (len)
		snprintf(msg, msglen, LLMP_ENV_DEBUG "='%.40s': '%.*s' %s", text, (int)(len < 24 ? len : 24),
			 word, what);
	else
		snprintf(msg, msglen, LLMP_ENV_DEBUG "='%.40s': %s", text, what);
	set_default(conf);
	return -1;
}

int rt_log_conf_parse(const char *text, struct rt_log_conf *conf, char *msg, size_t msglen)
{
	set_default(conf);
	if (!text || !*text)
		return 0;
	int level = -1;
	bool named[RT_LOG_NPARTS] = { false }, any_part = false;
	for (const char *word = text;; word++) {
		size_t len = strcspn(word, ",");
		if (len == 0)
			return bad(conf, msg, msglen, text, word, 0,
				   "an empty word (expected LEVEL[,PART...], e.g. debug,ckpt)");
		if (level < 0) {
			level = lookup(level_names, RT_LOG_NLEVELS, word, len);
			if (level < 0)
				return bad(conf, msg, msglen, text, word, len,
					   "is not a level (expected LEVEL[,PART...], LEVEL one of " LEVELS
					   ")");
		} else {
			int part = lookup(part_names, RT_LOG_NPARTS, word, len);
			if (part < 0)
				return bad(conf, msg, msglen, text, word, len,
					   lookup(level_names, RT_LOG_NLEVELS, word, len) >= 0
						   ? "is a second level (one level, then parts: " PARTS ")"
						   : "is not a part (expected " PARTS ")");
			named[part] = any_part = true;
		}
		word += len;
		if (!*word)
			break;
	}
	for (int p = 0; p < RT_LOG_NPARTS; p++)
		conf->level[p] = (unsigned char)(!any_part || named[p] || level < RT_LOG_DEFAULT
							 ? level
							 : RT_LOG_DEFAULT);
	conf->set = true;
	return 0;
}

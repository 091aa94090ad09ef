/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_record.c - ROOT/llmp-run: how the newest run of a job went.
 *
 * A small text file next to the checkpoints (doc/fault-tolerance.md):
 *
 *     llmp-run 2
 *     job 1234
 *     restart 2
 *     outcome stopped
 *     failures 0
 *     ckpt-at-start 39
 *     step 42
 *     reason SIGTERM on rank 3
 *     slurm-step 4
 *     suspect node7
 *     end
 *
 * Version 2 adds two optional lines (version 1 records are read too):
 * slurm-step, the Slurm step the run is (SLURM_STEP_ID), which tells runs
 * of one allocation apart (`llmp job run` launches several under one
 * restart count, and a rank of an older one may still be ending); suspect,
 * only in a failed run's record, the host of the rank the failure was
 * blamed on, as that rank published it: what `llmp job run` takes out of
 * the next run first.
 * A run writes it as "running" when it opens and with its outcome when it
 * ends, each time under a temporary name then renamed, so a reader sees one
 * whole version or the other. A run that dies without a word leaves
 * "running": the next run counts that as a failure.
 */
#include "job_record.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp_ckpt_spec.h>
#include "runtime/ckpt/format/ckpt_format.h"

#define RECORD_NAME "llmp-run"
#define RECORD_VERSION 2

static const char *const outcome_names[] = {
	[LLMP_RUN_RUNNING] = "running", [LLMP_RUN_DONE] = "done",       [LLMP_RUN_STOPPED] = "stopped",
	[LLMP_RUN_FAILED] = "failed",   [LLMP_RUN_GAVE_UP] = "gave-up",
};

const char *llmp_run_outcome_name(llmp_run_outcome outcome)
{
	if ((unsigned)outcome >= sizeof outcome_names / sizeof outcome_names[0])
		return "unknown";
	return outcome_names[outcome];
}

static void format_step(uint64_t step, char *buf, size_t len)
{
	if (step == LLMP_NO_STEP)
		snprintf(buf, len, "none");
	else
		snprintf(buf, len, "%" PRIu64, step);
}

bool job_record_host_ok(const char *host)
{
	size_t n = strlen(host);
	return n > 0 && n < 64 &&
	       strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* A Slurm step id: decimal, 1 to 19 digits. */
static bool step_id_ok(const char *id)
{
	size_t n = strlen(id);
	return n > 0 && n < 20 && strspn(id, "0123456789") == n;
}

llmp_status job_record_write(const char *root, const llmp_run_record *rec, const struct job_record_run *run,
			     uint32_t rank, char *msg, size_t msglen)
{
	char tmp[64], text[LLMP_MSG_MAX + 512], at_start[24], step[24], reason[LLMP_MSG_MAX];
	char blamed[80] = "", slurm_step[40] = "";

	/* One line each: a newline in a reason would end it early. */
	snprintf(reason, sizeof reason, "%s", rec->reason);
	for (char *c = reason; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	format_step(rec->ckpt_at_start, at_start, sizeof at_start);
	format_step(rec->step, step, sizeof step);
	if (run && job_record_host_ok(run->suspect))
		snprintf(blamed, sizeof blamed, "suspect %s\n", run->suspect);
	if (run && step_id_ok(run->slurm_step))
		snprintf(slurm_step, sizeof slurm_step, "slurm-step %s\n", run->slurm_step);
	snprintf(text, sizeof text,
		 "llmp-run %d\njob %s\nrestart %" PRIu64 "\noutcome %s\nfailures %u\n"
		 "ckpt-at-start %s\nstep %s\nreason %s\n%s%send\n",
		 RECORD_VERSION, rec->job_id[0] ? rec->job_id : "-", rec->restart,
		 llmp_run_outcome_name(rec->outcome), rec->failures, at_start, step, reason, slurm_step,
		 blamed);
	/* Ranks that all record a failure each use a temporary name of their own. */
	snprintf(tmp, sizeof tmp, "%s.tmp.%u", RECORD_NAME, rank);
	char why[LLMP_MSG_MAX];
	llmp_status st = ck_replace_file(root, RECORD_NAME, tmp, text, why, sizeof why);
	if (st != LLMP_OK)
		snprintf(msg, msglen, "cannot write the run record: %s", why);
	return st;
}

static bool parse_u64(const char *text, uint64_t *out)
{
	if (strcmp(text, "none") == 0) {
		*out = LLMP_NO_STEP;
		return true;
	}
	if (*text < '0' || *text > '9')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool parse_outcome(const char *text, llmp_run_outcome *out)
{
	for (size_t i = 0; i < sizeof outcome_names / sizeof outcome_names[0]; i++)
		if (strcmp(text, outcome_names[i]) == 0) {
			*out = (llmp_run_outcome)i;
			return true;
		}
	return false;
}

/* One "key value" line into rec (or run); false when the key or value is wrong. */
static bool parse_line(char *line, llmp_run_record *rec, struct job_record_run *run, unsigned *seen)
{
	char *value = strchr(line, ' ');
	uint64_t n;
	if (!value)
		return false;
	*value++ = '\0';
	if (strcmp(line, "llmp-run") == 0) {
		*seen |= 1;
		return parse_u64(value, &n) && n >= 1 && n <= RECORD_VERSION;
	}
	if (strcmp(line, "suspect") == 0) {
		if (!job_record_host_ok(value))
			return false;
		snprintf(run->suspect, sizeof run->suspect, "%s", value);
		return true;
	}
	if (strcmp(line, "slurm-step") == 0) {
		if (!step_id_ok(value))
			return false;
		snprintf(run->slurm_step, sizeof run->slurm_step, "%s", value);
		return true;
	}
	if (strcmp(line, "job") == 0) {
		snprintf(rec->job_id, sizeof rec->job_id, "%s", strcmp(value, "-") ? value : "");
		return true;
	}
	if (strcmp(line, "restart") == 0)
		return parse_u64(value, &rec->restart) && rec->restart != LLMP_NO_STEP;
	if (strcmp(line, "outcome") == 0)
		return parse_outcome(value, &rec->outcome);
	if (strcmp(line, "failures") == 0) {
		*seen |= 2;
		return parse_u64(value, &n) && n <= UINT32_MAX && (rec->failures = (uint32_t)n, true);
	}
	if (strcmp(line, "ckpt-at-start") == 0)
		return parse_u64(value, &rec->ckpt_at_start);
	if (strcmp(line, "step") == 0)
		return parse_u64(value, &rec->step);
	if (strcmp(line, "reason") == 0) {
		snprintf(rec->reason, sizeof rec->reason, "%s", value);
		return true;
	}
	return false;
}

llmp_status job_record_read(const char *root, llmp_run_record *rec, struct job_record_run *run, char *msg,
			    size_t msglen)
{
	char path[LLMP_CKPT_DIR_MAX + 32], line[LLMP_MSG_MAX + 64];
	unsigned seen = 0, lineno = 0;
	bool ended = false;

	memset(rec, 0, sizeof *rec);
	memset(run, 0, sizeof *run);
	rec->ckpt_at_start = rec->step = LLMP_NO_STEP;
	snprintf(path, sizeof path, "%s/%s", root, RECORD_NAME);
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(msg, msglen, "%s: %s", path, strerror(errno));
		return LLMP_ERR_IO;
	}
	while (!ended && fgets(line, sizeof line, f)) {
		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "end") == 0)
			ended = true;
		else if (!parse_line(line, rec, run, &seen)) {
			snprintf(msg, msglen, "%s:%u: not a run record line", path, lineno);
			fclose(f);
			return LLMP_ERR_IO;
		}
	}
	fclose(f);
	if (!ended || seen != 3) {
		snprintf(msg, msglen, "%s: incomplete run record", path);
		return LLMP_ERR_IO;
	}
	return LLMP_OK;
}

llmp_status llmp_run_record_read(const char *root, llmp_run_record *rec, char *msg, size_t msglen)
{
	struct job_record_run run;
	if (!root || !rec || !msg)
		return LLMP_ERR_ARG;
	return job_record_read(root, rec, &run, msg, msglen);
}

llmp_status llmp_run_record_get(const char *root, const char *key, char *value, size_t len, char *msg,
				size_t msglen)
{
	llmp_run_record rec;
	struct job_record_run run;
	if (!root || !key || !value || !len || !msg)
		return LLMP_ERR_ARG;
	value[0] = '\0';
	if (strcmp(key, "suspect") != 0 && strcmp(key, "slurm-step") != 0) {
		snprintf(msg, msglen, "'%.40s' is not an optional line of a run record (suspect, slurm-step)",
			 key);
		return LLMP_ERR_ARG;
	}
	llmp_status st = job_record_read(root, &rec, &run, msg, msglen);
	if (st == LLMP_OK)
		snprintf(value, len, "%s", strcmp(key, "suspect") == 0 ? run.suspect : run.slurm_step);
	return st;
}

const char *job_record_blame(const char *mine, bool same_failed_run, const char *recorded)
{
	return same_failed_run && recorded && recorded[0] ? recorded : mine;
}

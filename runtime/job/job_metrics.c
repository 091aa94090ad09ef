/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_metrics.c - each rank's metrics as JSON lines (LLMP_METRICS, format
 * doc/metrics-json.md): every communicator's counters (metrics.h), the
 * step times and the checkpoint stalls, a line every `every` seconds at a
 * step's end and a last one when the job finishes.
 *
 * Counters are totals since the job opened, so a reader gets rates from
 * two lines and loses nothing when a line is lost. Writing the metrics
 * never fails the training: the first error is logged and the file left.
 */
#include "job_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <llmp/llmp_env.h>
#include "common/json_writer.h"
#include "runtime/comm/node_gdr.h"
#include "metrics_file.h"

/* Members named per communicator in a line: those waited for longest. */
#define TOP_LAST 4

struct job_metrics {
	struct job_metrics_spec spec;
	int fd;
	double next_write;
	double last_step_end; /* rt_now() at the end of the last step, or of open/resume */
	uint64_t step;        /* the last step ended; LLMP_NO_STEP: none */
	uint64_t steps;
	double step_s, step_max_s, step_last_s;
	double stall_s; /* checkpoints: time the steps were held */
	uint64_t stalls;
	uint64_t peak_bytes; /* the largest llmp_job_note_memory gave; 0: none */
	uint64_t nvml_peak;  /* without it: the largest of NVML's samples (job_gpu_mem.c); 0: none */
	bool nvml_off;       /* NVML could not be read: not asked again */
	char host[64];
	/* LLMP_MODEL and LLMP_GPU as the job had them ("" when unset or too long): what the
	 * run was planned with, for llmp calibrate (doc/step-model.md) */
	char model[512], gpu[128];
	/* Local rank 0's record: this node's GPUDirect RDMA line, judged once, and NCCL's own
	 * word on it, looked for in the user's NCCL log until it is there (node_gdr.h). */
	char gdr_predicted[2 * LLMP_MSG_MAX], gdr_nccl[512];
	bool gdr_predicted_done, gdr_nccl_done;
};

llmp_status job_metrics_start(llmp_job *job)
{
	const char *text = getenv(JOB_METRICS_ENV);
	if (!text || !*text)
		return LLMP_OK;
	struct job_metrics *m = calloc(1, sizeof *m);
	if (!m)
		return rt_fail(job->ctx, LLMP_ERR_NOMEM, "llmp_job_open: metrics");
	m->fd = -1;
	m->step = LLMP_NO_STEP;
	job->metrics = m;
	char msg[LLMP_MSG_MAX];
	if (job_metrics_spec_parse(text, &m->spec, msg, sizeof msg) != LLMP_OK)
		return rt_fail(job->ctx, LLMP_ERR_SPEC, "%s", msg);
	if (job_metrics_open(m->spec.dir, job->ctx->rank, &m->fd, msg, sizeof msg) != LLMP_OK)
		return rt_fail(job->ctx, LLMP_ERR_IO, "%s", msg);
	if (gethostname(m->host, sizeof m->host) != 0)
		snprintf(m->host, sizeof m->host, "?");
	m->host[sizeof m->host - 1] = '\0';
	const char *model = getenv(LLMP_ENV_MODEL), *gpu = getenv(LLMP_ENV_GPU);
	if (model && strlen(model) < sizeof m->model)
		strcpy(m->model, model);
	if (gpu && strlen(gpu) < sizeof m->gpu)
		strcpy(m->gpu, gpu);
	m->last_step_end = rt_now();
	m->next_write = m->last_step_end + m->spec.every_s;
	return LLMP_OK;
}

void job_metrics_training_starts(llmp_job *job)
{
	if (job->metrics)
		job->metrics->last_step_end = rt_now();
}

/* The members of comm waited for longest (at most TOP_LAST), by world rank. */
static void write_last(FILE *f, const llmp_comm *comm)
{
	const struct rt_metrics *m = &comm->metrics;
	bool taken[TOP_LAST] = { false };
	uint32_t top[TOP_LAST];
	size_t n = 0;
	for (uint32_t r = 0; r < comm->size && m->last_times; r++) {
		if (!m->last_times[r])
			continue;
		size_t at = n < TOP_LAST ? n++ : TOP_LAST - 1;
		if (at == TOP_LAST - 1 && taken[at] && m->last_seconds[top[at]] >= m->last_seconds[r])
			continue;
		top[at] = r;
		taken[at] = true;
		for (; at > 0 && m->last_seconds[top[at - 1]] < m->last_seconds[top[at]]; at--) {
			uint32_t t = top[at - 1];
			top[at - 1] = top[at];
			top[at] = t;
		}
	}
	fputs(",\"last\":[", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s{\"rank\":%u,\"times\":%" PRIu64 ",\"wait_s\":%.6f}", i ? "," : "",
			rt_world_rank(comm, top[i]), m->last_times[top[i]], m->last_seconds[top[i]]);
	fputc(']', f);
}

static void write_comm(FILE *f, const llmp_comm *comm, bool first)
{
	const struct rt_metrics *m = &comm->metrics;
	fprintf(f, "%s{\"group\":", first ? "" : ",");
	json_write_escaped(f, llmp_comm_name(comm));
	fprintf(f,
		",\"size\":%u,\"rank\":%u,\"ops\":%" PRIu64 ",\"bytes_sent\":%" PRIu64
		",\"bytes_received\":%" PRIu64 ",\"seconds\":%.6f,\"wait_s\":%.6f,\"waits\":%" PRIu64,
		comm->size, comm->rank, m->ops, m->bytes_sent, m->bytes_recvd, rt_metrics_seconds(m),
		m->wait_seconds, m->waits);
	write_last(f, comm);
	fputc('}', f);
}

/* ,"gdr":{"predicted":TEXT,"nccl":TEXT|null}: judged at the first record, NCCL's lines once logged. */
static void write_gdr(FILE *f, struct job_metrics *m)
{
	if (!m->gdr_predicted_done) {
		rt_gdr_node_line(m->gdr_predicted, sizeof m->gdr_predicted);
		m->gdr_predicted_done = true;
	}
	if (!m->gdr_nccl_done)
		m->gdr_nccl_done = rt_gdr_nccl_line(m->gdr_nccl, sizeof m->gdr_nccl);
	fputs(",\"gdr\":{\"predicted\":", f);
	json_write_escaped(f, m->gdr_predicted);
	fputs(",\"nccl\":", f);
	if (m->gdr_nccl_done)
		json_write_escaped(f, m->gdr_nccl);
	else
		fputs("null", f);
	fputc('}', f);
}

/* One record, newline included, in a buffer the caller frees. */
static char *format_line(const llmp_job *job, bool final, size_t *len)
{
	const struct job_metrics *m = job->metrics;
	const llmp_ctx *ctx = job->ctx;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	fprintf(f, "{\"v\":1,\"time\":%.3f,\"rank\":%u,\"world\":%u,\"host\":",
		(double)now.tv_sec + now.tv_nsec * 1e-9, ctx->rank, ctx->world);
	json_write_escaped(f, m->host);
	fputs(",\"layout\":", f);
	json_write_escaped(f, ctx->layout);
	if (m->model[0]) {
		fputs(",\"model\":", f);
		json_write_escaped(f, m->model);
	}
	if (m->gpu[0]) {
		fputs(",\"gpu\":", f);
		json_write_escaped(f, m->gpu);
	}
	fputs(",\"coords\":{", f);
	uint32_t coords[LLMP_NAXES] = { 0 };
	llmp_plan_coords(ctx->plan, ctx->rank, coords);
	for (int a = 0; a < LLMP_NAXES; a++)
		fprintf(f, "%s\"%s\":%u", a ? "," : "", llmp_axis_name((enum llmp_axis)a), coords[a]);
	fputs("},\"step\":", f);
	if (m->step == LLMP_NO_STEP)
		fputs("null", f);
	else
		fprintf(f, "%" PRIu64, m->step);
	fprintf(f,
		",\"steps\":%" PRIu64 ",\"step_s\":%.6f,\"step_last_s\":%.6f,\"step_max_s\":%.6f"
		",\"ckpt_stall_s\":%.6f,\"ckpt_stalls\":%" PRIu64,
		m->steps, m->step_s, m->step_last_s, m->step_max_s, m->stall_s, m->stalls);
	if (m->peak_bytes || m->nvml_peak)
		fprintf(f, ",\"peak_gib\":%.4f,\"peak_by\":\"%s\"",
			(double)(m->peak_bytes ? m->peak_bytes : m->nvml_peak) / (1024.0 * 1024.0 * 1024.0),
			m->peak_bytes ? "program" : "nvml");
	fprintf(f, ",\"final\":%s,\"comms\":[", final ? "true" : "false");
	bool first = true;
	for (int k = 0; k < RT_NCOMMS; k++) {
		const llmp_comm *comm = ctx->comms[k];
		if (comm && comm->size > 1) {
			write_comm(f, comm, first);
			first = false;
		}
	}
	fputc(']', f);
	if (ctx->local_rank == 0)
		write_gdr(f, job->metrics);
	fputs("}\n", f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The Prometheus textfile: the same totals as gauges and counters. */
static void write_prom(llmp_job *job, char *msg, size_t msglen)
{
	const struct job_metrics *m = job->metrics;
	const llmp_ctx *ctx = job->ctx;
	char *buf = NULL, path[JOB_METRICS_DIR_MAX + 32];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return;
	fprintf(f, "# TYPE llmp_steps_total counter\nllmp_steps_total{rank=\"%u\"} %" PRIu64 "\n", ctx->rank,
		m->steps);
	fprintf(f, "# TYPE llmp_step_seconds_total counter\nllmp_step_seconds_total{rank=\"%u\"} %.6f\n",
		ctx->rank, m->step_s);
	fprintf(f,
		"# TYPE llmp_ckpt_stall_seconds_total counter\nllmp_ckpt_stall_seconds_total{rank=\"%u\"} %.6f\n",
		ctx->rank, m->stall_s);
	static const char *const names[] = { "ops", "bytes_sent", "bytes_received", "seconds",
					     "wait_seconds" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		fprintf(f, "# TYPE llmp_comm_%s_total counter\n", names[i]);
		for (int k = 0; k < RT_NCOMMS; k++) {
			const llmp_comm *c = ctx->comms[k];
			if (!c || c->size < 2)
				continue;
			const struct rt_metrics *cm = &c->metrics;
			double v = i == 0   ? (double)cm->ops
				   : i == 1 ? (double)cm->bytes_sent
				   : i == 2 ? (double)cm->bytes_recvd
				   : i == 3 ? rt_metrics_seconds(cm)
					    : cm->wait_seconds;
			fprintf(f, "llmp_comm_%s_total{rank=\"%u\",group=\"%s\"} %.17g\n", names[i],
				ctx->rank, llmp_comm_name(c), v);
		}
	}
	if (fclose(f) == 0) {
		job_metrics_path(m->spec.dir, ctx->rank, "prom", path, sizeof path);
		if (job_metrics_replace(path, buf, len, msg, msglen) != LLMP_OK)
			rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN, "metrics: %s", msg);
	}
	free(buf);
}

/* Without a peak from the program, NVML's view of this process now, kept when the largest. */
static void sample_gpu_memory(llmp_job *job)
{
	struct job_metrics *m = job->metrics;
	char why[LLMP_MSG_MAX];
	uint64_t bytes;
	if (m->peak_bytes || m->nvml_off)
		return;
	if (!job_gpu_mem_self(&bytes, why, sizeof why)) {
		m->nvml_off = true;
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_DEBUG, "metrics: no GPU memory from NVML (%s)", why);
	} else if (bytes > m->nvml_peak) {
		m->nvml_peak = bytes;
	}
}

static void write_record(llmp_job *job, bool final)
{
	struct job_metrics *m = job->metrics;
	char msg[LLMP_MSG_MAX];
	size_t len = 0;
	sample_gpu_memory(job);
	char *line = format_line(job, final, &len);
	llmp_status st = line ? job_metrics_append(m->fd, line, len, msg, sizeof msg) : LLMP_ERR_NOMEM;
	free(line);
	if (st != LLMP_OK) {
		rt_log(job->ctx, RT_LOG_JOB, RT_LOG_WARN, "metrics: %s; no more metrics from this rank",
		       line ? msg : "out of memory formatting a line");
		close(m->fd);
		m->fd = -1;
		return;
	}
	if (m->spec.prom)
		write_prom(job, msg, sizeof msg);
}

void job_metrics_step(llmp_job *job, uint64_t step, double step_end_at, double stall_s)
{
	struct job_metrics *m = job->metrics;
	if (!m)
		return;
	double t = step_end_at - m->last_step_end;
	m->last_step_end = step_end_at;
	m->step = step;
	m->steps++;
	m->step_s += t;
	m->step_last_s = t;
	if (t > m->step_max_s)
		m->step_max_s = t;
	if (stall_s > 0) {
		m->stall_s += stall_s;
		m->stalls++;
	}
	double now = rt_now();
	if (m->fd >= 0 && now >= m->next_write) {
		m->next_write = now + m->spec.every_s;
		write_record(job, false);
	}
}

void job_metrics_stop(llmp_job *job)
{
	struct job_metrics *m = job->metrics;
	if (!m)
		return;
	if (m->fd >= 0) {
		write_record(job, true);
		if (m->fd >= 0)
			close(m->fd);
	}
	free(m);
	job->metrics = NULL;
}

void job_metrics_note_memory(llmp_job *job, uint64_t peak_bytes)
{
	if (job->metrics && peak_bytes > job->metrics->peak_bytes)
		job->metrics->peak_bytes = peak_bytes;
}

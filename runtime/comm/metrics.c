/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.c - a communicator's counters (metrics.h) kept and handed out through llmp_comm_get_stats. */
#include "rt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool rt_metrics_init(struct rt_metrics *m, uint32_t size)
{
	memset(m, 0, sizeof *m);
	m->last_times = calloc(size ? size : 1, sizeof *m->last_times);
	m->last_seconds = calloc(size ? size : 1, sizeof *m->last_seconds);
	if (!m->last_times || !m->last_seconds) {
		rt_metrics_free(m);
		return false;
	}
	/* Communicators and processes sample different calls. */
	rt_metrics_seed(m, (uint64_t)(rt_now() * 1e9) ^ (uint64_t)(uintptr_t)m ^ ((uint64_t)size << 48));
	return true;
}

void rt_metrics_free(struct rt_metrics *m)
{
	free(m->last_times);
	free(m->last_seconds);
	m->last_times = NULL;
	m->last_seconds = NULL;
}

llmp_status llmp_comm_get_stats(const llmp_comm *comm, llmp_comm_stats *stats)
{
	if (!comm || !stats)
		return LLMP_ERR_ARG;
	const struct rt_metrics *m = &comm->metrics;
	memset(stats, 0, sizeof *stats);
	stats->ops = m->ops;
	stats->bytes_sent = m->bytes_sent;
	stats->bytes_received = m->bytes_recvd;
	stats->seconds = rt_metrics_seconds(m);
	stats->wait_seconds = m->wait_seconds;
	stats->waits = m->waits;
	stats->last_member = UINT32_MAX;
	for (uint32_t r = 0; m->last_times && r < comm->size; r++)
		if (m->last_times[r] && (stats->last_member == UINT32_MAX ||
					 m->last_seconds[r] > stats->last_member_wait_seconds)) {
			stats->last_member = r;
			stats->last_member_times = m->last_times[r];
			stats->last_member_wait_seconds = m->last_seconds[r];
		}
	return LLMP_OK;
}

llmp_status llmp_comm_member_waits(const llmp_comm *comm, uint32_t member, uint64_t *times, double *seconds)
{
	if (!comm || !times || !seconds)
		return LLMP_ERR_ARG;
	if (member >= comm->size)
		return rt_fail(comm->ctx, LLMP_ERR_RANGE,
			       "llmp_comm_member_waits on %s: member %u, but it has %u", llmp_comm_name(comm),
			       member, comm->size);
	*times = comm->metrics.last_times ? comm->metrics.last_times[member] : 0;
	*seconds = comm->metrics.last_seconds ? comm->metrics.last_seconds[member] : 0;
	return LLMP_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_driver.h - ROOT/llmp-driver, the heartbeat of `llmp job run`.
 *
 * A job submitted with --no-kill is not ended by Slurm when one of its
 * nodes is lost, whatever that node's role: slurmctld removes the node and
 * lets the job run on the others (kill_running_job_by_node_name in
 * SchedMD/slurm src/slurmctld/job_mgr.c). When the lost node is the batch
 * host, the batch script and `llmp job run` die with it, nothing is left
 * to relaunch or requeue, and the job holds the rest of its nodes until
 * its time limit. So the driver says it is alive: it rewrites this file
 * every JOB_DRIVER_PERIOD_S while it runs, and a rank whose run failed
 * blaming the driver's host reads it (job_orphan.c): a beat that does not
 * move for JOB_DRIVER_STALE_S means no driver, and the rank requeues the
 * job itself.
 *
 * The file is one line, "llmp-driver 1 JOB HOST HOW MS": Slurm's job id,
 * the driver's host, how the job is requeued (llmp job-end's --requeue:
 * auto, exit, scontrol or none) and the driver's wall clock in ms. It needs
 * no context: `llmp job run` links it with the run record (libjob_record).
 */
#ifndef LLMP_JOB_DRIVER_H
#define LLMP_JOB_DRIVER_H

#include <stddef.h>

#include <llmp/llmp_status.h>

#define JOB_DRIVER_FILE "llmp-driver"
#define JOB_DRIVER_PERIOD_S 0.25
#define JOB_DRIVER_STALE_S 5.0

struct job_driver_beat {
	char job_id[32]; /* SLURM_JOB_ID: digits and '_' */
	char host[64];   /* the batch host: a host name */
	char how[16];    /* auto, exit, scontrol or none */
	long long ms;    /* CLOCK_REALTIME of the beat, in ms */
};

/* Write b as ROOT/llmp-driver, atomically (a temporary file renamed; no fsync: a beat is not data). */
llmp_status job_driver_write(const char *root, const struct job_driver_beat *b, char *msg, size_t msglen);

/* Read ROOT/llmp-driver; LLMP_ERR_IO with msg when it is absent or not a beat. */
llmp_status job_driver_read(const char *root, struct job_driver_beat *b, char *msg, size_t msglen);

/* Remove ROOT/llmp-driver if it is job_id's (a driver that ends leaves no beat behind). */
void job_driver_remove(const char *root, const char *job_id);

#endif /* LLMP_JOB_DRIVER_H */

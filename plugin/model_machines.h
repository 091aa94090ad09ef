/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model_machines.h - the step's own nodes as the step model's machines
 * (planner/auto_layout.h), for srun: the topology file the job or the
 * site names, the step's hosts and tasks per node as Slurm wrote them in
 * srun's environment, so --llm-parallel=auto and the memory guard score a
 * layout with the network of its real placement and each pipeline stage
 * on its own GPU, as `llmp plan --topology FILE --hosts LIST` does.
 *
 * Runs in srun, the user's own process: the file is read here with a
 * size cap, never through a FIFO or a device. Pure (no Slurm), so
 * unit-tested in tests/unit/test_plugin_model.c.
 */
#ifndef LLMP_PLUGIN_MODEL_MACHINES_H
#define LLMP_PLUGIN_MODEL_MACHINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "planner/auto_layout.h"
#include "planner/model_desc.h"

#define PLUGIN_TOPOLOGY_FILE_MAX (16u << 20) /* bytes srun reads of a topology file */

struct plugin_machines_request {
	const char *file;                /* LLMP_TOPOLOGY_FILE or the site's topology= */
	const char *nodelist;            /* the step's hosts, a Slurm hostlist */
	const char *tasks_per_node;      /* "4(x2),3": the step's tasks on each host */
	uint32_t nnodes, world;          /* Slurm's counts, which the two strings must agree with */
	bool renumber;                   /* --llm-placement=topology */
	const struct gpu_desc *fallback; /* for node types without "gpu"; NULL: none */
};

struct plugin_machines; /* opaque */

/*
 * The machines of rq for model m, and in *weakest the weakest GPU of the
 * step's hosts (what bounds the search). Returns NULL with msg saying why
 * (an unreadable file, a host it does not describe, counts that disagree,
 * a type without "gpu" and no fallback).
 */
struct plugin_machines *plugin_machines_open(const struct plugin_machines_request *rq,
					     const struct model_desc *m, struct gpu_desc *weakest, char *msg,
					     size_t len);

/* The machines as chooser_run_on's callback; valid until closed. */
const struct chooser_machines *plugin_machines_of(const struct plugin_machines *pm);

void plugin_machines_close(struct plugin_machines *pm);

#endif /* LLMP_PLUGIN_MODEL_MACHINES_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_ckpt.h - sharded HDF5 checkpoints of a job's tensors.
 *
 * A program registers its tensors once: name, dtype, global shape, and the
 * slice this rank holds (offset and shape in every dimension). A save
 * writes, under ROOT/step-N/, one HDF5 shard per rank holding the slices it
 * owns (a slice registered identically by several ranks, a replica, is
 * written once, by the lowest of them), an HDF5 index whose virtual
 * datasets show every tensor whole (h5py and h5dump read it with no llmp
 * code), and a MANIFEST with the layout, the step and a CRC-32C of every
 * slice. Everything is written under step-N.tmp, flushed and fsynced, then
 * renamed: a checkpoint is either complete or invisible. A load reads each
 * registered slice from whichever shards hold it, so the saving layout
 * (tp, dp, world size) need not be the loading one, and checks every byte
 * it reads against the manifest's checksums. The format is doc/checkpoint.md.
 *
 * Save and load are collective over the world communicator; every rank
 * gets the same status, and llmp_errmsg() names the tensor, the file and
 * the rank that failed. A handle is used by one thread at a time, like
 * its context; an async save's writer thread touches only files.
 */
#ifndef LLMP_CKPT_H
#define LLMP_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "llmp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct llmp_ckpt llmp_ckpt;

#define LLMP_CKPT_MAX_DIMS 8
#define LLMP_CKPT_MAX_NAME 127      /* bytes of a tensor name */
#define LLMP_CKPT_NEWEST UINT64_MAX /* llmp_ckpt_load: the newest complete checkpoint */

typedef struct llmp_ckpt_opts {
	size_t size; /* sizeof(llmp_ckpt_opts) as the program was built; 0: this first version's (doc/abi.md) */
	const char *root;   /* directory of the checkpoints; created if missing */
	unsigned keep;      /* complete checkpoints kept; 0: 2. Never fewer than 1 */
	size_t alignment;   /* file offset alignment of large datasets; 0: the root's preferred I/O size */
	size_t staging_max; /* bytes an async save may copy on this rank; 0: no limit */
	unsigned files;     /* LLMP_CKPT_FILES_RANK (0) or LLMP_CKPT_FILES_NODE */
	/*
	 * On Lustre, the layout each step directory gives the shards created in
	 * it (--llm-checkpoint's stripe=; llmp_ckpt_stripe_check says what is
	 * valid). Elsewhere, or without liblustreapi, rank 0 warns once and the
	 * save goes on (doc/checkpoint.md, "Filesystem hints").
	 */
	int stripe_count;        /* 0: leave the layout alone; -1: all OSTs; else OSTs per file */
	size_t stripe_size;      /* bytes per stripe, a multiple of 64 KiB; 0: the filesystem's */
	const char *stripe_pool; /* OST pool; NULL or "": the filesystem's */
} llmp_ckpt_opts;

/*
 * llmp_ckpt_opts.files: a shard file per rank, or one per node, written by
 * all of the node's ranks at places its first rank laid out: tasks-per-node
 * times fewer files to create, open and fsync on a parallel filesystem.
 * Loads, `llmp ckpt` and the global view read both (doc/checkpoint.md).
 */
#define LLMP_CKPT_FILES_RANK 0u
#define LLMP_CKPT_FILES_NODE 1u

/* Not collective. The handle belongs to ctx; close it before llmp_finalize. */
llmp_status llmp_ckpt_open(llmp_ctx *ctx, const llmp_ckpt_opts *opts, llmp_ckpt **ckpt);
/* Collective while an async save is pending (it is completed first); else local. */
void llmp_ckpt_close(llmp_ckpt *ckpt);

/*
 * Register this rank's slice of a tensor: data holds shape[0] x ... x
 * shape[ndim-1] elements, row-major, and must stay valid while registered;
 * a save reads it, a load writes it. Every rank that holds part of the
 * tensor registers it, with the same dtype and global shape.
 *
 * data may be device memory (CUDA; the driver the program loaded says so):
 * it is then moved through pinned host memory on a copy stream of the
 * handle's, in the program's current CUDA context or the device's primary
 * one. A save first waits for the work queued in that context; a load
 * returns once the device holds the values. Without a usable CUDA driver
 * a device pointer is refused here, naming the tensor and the cause.
 */
llmp_status llmp_ckpt_register(llmp_ckpt *ckpt, const char *name, llmp_dtype dtype, unsigned ndim,
			       const uint64_t *global_shape, const uint64_t *offset, const uint64_t *shape,
			       void *data);

/* Collective: write checkpoint `step` with metalen bytes of user metadata. */
llmp_status llmp_ckpt_save(llmp_ckpt *ckpt, uint64_t step, const void *meta, size_t metalen);

/*
 * Collective, like llmp_ckpt_save, but it returns once this rank's slices
 * are copied to staging memory: the program may change its tensors at
 * once, while a thread writes the shard. The save is committed, and its
 * errors reported, by llmp_ckpt_wait, or by the next save, load or close,
 * which wait first. When this rank's slices exceed staging_max they are
 * written before the call returns (stats.staged_bytes is then 0).
 */
llmp_status llmp_ckpt_save_async(llmp_ckpt *ckpt, uint64_t step, const void *meta, size_t metalen);

/*
 * Collective, optional, after the state is registered: agree on which rank
 * writes which slice and allocate (and fault in) this rank's staging memory
 * now, so that the first llmp_ckpt_save_async stalls no longer than later
 * ones. Without it the first async save does this work inside its stall.
 * A pending save is committed first. llmp_job_resume calls it.
 */
llmp_status llmp_ckpt_prepare_async(llmp_ckpt *ckpt);

/* Collective when a save is pending: finish and commit it. Otherwise returns at once. */
llmp_status llmp_ckpt_wait(llmp_ckpt *ckpt);

/* What the last save cost this rank. */
typedef struct llmp_ckpt_stats {
	size_t size;   /* set by the caller: sizeof(llmp_ckpt_stats) as built; 0: this first version's */
	uint64_t step; /* the last save started */
	size_t staged_bytes;  /* staging memory it used (0: written during the call) */
	size_t staging_max;   /* the bound, from llmp_ckpt_opts (0: none) */
	double stall_seconds; /* how long the save call blocked */
	double total_seconds; /* from the save call to the commit */
	size_t alignment;     /* the alignment in use: llmp_ckpt_opts', or the root's preferred I/O size */
	/* Slices in device memory (registered with a device pointer; doc/checkpoint.md): */
	size_t device_bytes;        /* of the bytes this rank wrote, those copied from device memory */
	double device_copy_seconds; /* how long the save waited for their device-to-host copies */
	size_t device_staging_bytes; /* pinned host memory the handle holds for them (kept for the next save) */
} llmp_ckpt_stats;
llmp_status llmp_ckpt_get_stats(const llmp_ckpt *ckpt, llmp_ckpt_stats *stats);

/*
 * Collective: fill every registered slice from checkpoint `step`, or from
 * the newest complete one (LLMP_CKPT_NEWEST; one with any damaged file,
 * found by the files' sizes and CRC-32Cs in its MANIFEST, is reported by
 * file on rank 0's stderr and the one before it used). *loaded_step and the
 * metadata (up to metacap bytes; *metalen gets its full size) say what was
 * loaded. On failure the registered slices may hold part of a checkpoint.
 * LLMP_ERR_UNSUPPORTED: a checkpoint of another format version (1, saved
 * by an older llmp), which this one does not read (doc/checkpoint.md).
 */
llmp_status llmp_ckpt_load(llmp_ckpt *ckpt, uint64_t step, uint64_t *loaded_step, void *meta, size_t metacap,
			   size_t *metalen);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_CKPT_H */

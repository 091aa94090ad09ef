/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_hdf5.c - the HDF5 files of a checkpoint: one shard per writing
 * rank, and the index whose virtual datasets show every tensor whole.
 *
 * Large datasets start on `alignment` boundaries (a Lustre stripe, say) and
 * are contiguous. File locking is turned off per file: it fails on Lustre,
 * GPFS and NFS, and a checkpoint is never written by two processes at once
 * (each shard has one writer; the index is written by rank 0 alone).
 * HDF5's own error printing is kept quiet: failures come back as statuses
 * with the file and dataset named.
 *
 * Writing a shard records where each slice's bytes went and the file's
 * CRC-32C, for the MANIFEST. Checking these files without a context, for
 * `llmp ckpt verify`, is format/h5check.c; a load does not open HDF5 at
 * all (ckpt_read.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_device.h"
#include "ckpt_internal.h"
#include "runtime/ckpt/format/ckpt_h5.h"
#include "kernels/crc32c.h"

/*
 * One slice as a contiguous dataset; *at is where its bytes start in the
 * file. data NULL: room allocated now and never filled, for bytes written
 * there later (a device slice streamed by ckpt_device.c).
 */
static herr_t write_dataset(hid_t file, hid_t lcpl, const struct ck_slice *s, const void *data, uint64_t *at)
{
	hsize_t dims[LLMP_CKPT_MAX_DIMS];
	for (unsigned d = 0; d < s->ndim; d++)
		dims[d] = s->shape[d];
	hid_t type = ck_h5_file_type((llmp_dtype)s->dtype),
	      space = H5Screate_simple((int)s->ndim, dims, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	if (!data) {
		H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
		H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
	}
	hid_t dset = H5Dcreate2(file, s->name, type, space, lcpl, dcpl, H5P_DEFAULT);
	H5Pclose(dcpl);
	herr_t rc = dset < 0 ? -1 : data ? H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : 0;
	/* Contiguous storage is allocated by the write and does not move afterwards. */
	haddr_t where = rc < 0 ? HADDR_UNDEF : H5Dget_offset(dset);
	if (where == HADDR_UNDEF)
		rc = -1;
	else
		*at = (uint64_t)where;
	if (dset >= 0 && H5Dclose(dset) < 0)
		rc = -1;
	H5Sclose(space);
	H5Tclose(type);
	return rc;
}

/*
 * The size and CRC-32C of the shard just written, for its MANIFEST line:
 * the bytes around its slices read back (they are few, and in the page
 * cache), the slices' own CRCs, taken from memory, joined in (format/filesum.c).
 */
static llmp_status shard_crc(struct ck_shard_job *job, char *msg, size_t msglen)
{
	struct stat sb;
	size_t n = 0;
	int fd = open(job->path, O_RDONLY | O_CLOEXEC);
	struct ck_extent *e = malloc((job->n ? job->n : 1) * sizeof *e);
	llmp_status st = LLMP_OK;
	if (!e)
		st = llmp_fail(LLMP_ERR_NOMEM, msg, msglen, "checksumming %s: out of memory", job->path);
	else if (fd < 0 || fstat(fd, &sb) != 0)
		st = llmp_fail(LLMP_ERR_IO, msg, msglen, "%s: %s", job->path, strerror(errno));
	for (size_t i = 0; st == LLMP_OK && i < job->n; i++)
		if (job->data[i])
			e[n++] = (struct ck_extent){ .at = job->all[i].at,
						     .bytes = ck_bytes(&job->all[i]),
						     .crc = job->all[i].crc };
	if (st == LLMP_OK)
		st = ck_extents_check(e, n, (uint64_t)sb.st_size, job->path, msg, msglen);
	if (st == LLMP_OK)
		st = ck_crc_around(fd, (uint64_t)sb.st_size, e, n, job->path, &job->file_crc, msg, msglen);
	if (st == LLMP_OK)
		job->bytes_written = (uint64_t)sb.st_size;
	if (fd >= 0)
		close(fd);
	free(e);
	return st;
}

llmp_status ck_write_shard(struct ck_shard_job *job, char *msg, size_t msglen)
{
	if (job->laid_out)
		return ck_write_node_slices(job, msg, msglen); /* no HDF5: the file is laid out */
	llmp_status st = LLMP_OK;
	H5E_BEGIN_TRY
	{
		hid_t fapl = ck_h5_file_access(job->alignment), lcpl = H5Pcreate(H5P_LINK_CREATE);
		H5Pset_create_intermediate_group(lcpl, 1);
		hid_t file = H5Fcreate(job->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
		if (file < 0) {
			snprintf(msg, msglen, "cannot create %s", job->path);
			st = LLMP_ERR_IO;
		}
		for (size_t i = 0; st == LLMP_OK && i < job->n; i++) {
			struct ck_slice *s = &job->all[i];
			if (!job->data[i])
				continue;
			bool device = ck_dev_streams(job, i); /* its bytes go in after its room is made */
			if (!device)
				s->crc = kern_crc32c(0, job->data[i], ck_bytes(s));
			if (write_dataset(file, lcpl, s, device ? NULL : job->data[i], &s->at) < 0) {
				snprintf(msg, msglen, "writing tensor %s to %s failed", s->name, job->path);
				st = LLMP_ERR_IO;
			} else if (device) {
				st = ck_dev_write_slice(job, i, msg, msglen);
			}
		}
		if (file >= 0 && (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 || H5Fclose(file) < 0) &&
		    st == LLMP_OK) {
			snprintf(msg, msglen, "closing %s failed (disk full?)", job->path);
			st = LLMP_ERR_IO;
		}
		H5Pclose(lcpl);
		H5Pclose(fapl);
	}
	H5E_END_TRY;
	if (st == LLMP_OK)
		st = shard_crc(job, msg, msglen);
	if (st == LLMP_OK)
		st = ck_fsync_msg(job->path, msg, msglen);
	return st;
}

/*
 * One slice's dataset in a node's file, allocated now and never filled by
 * HDF5: its rank writes every byte of it (ck_write_node_slices), so a fill
 * would write the slice twice. *at is where its bytes go.
 */
static herr_t allocate_dataset(hid_t file, hid_t lcpl, hid_t dcpl, const struct ck_slice *s, uint64_t *at)
{
	hsize_t dims[LLMP_CKPT_MAX_DIMS];
	char dname[CK_DATASET_MAX];
	for (unsigned d = 0; d < s->ndim; d++)
		dims[d] = s->shape[d];
	ck_dataset_name(s, dname, sizeof dname);
	hid_t type = ck_h5_file_type((llmp_dtype)s->dtype),
	      space = H5Screate_simple((int)s->ndim, dims, NULL);
	hid_t dset = H5Dcreate2(file, dname, type, space, lcpl, dcpl, H5P_DEFAULT);
	haddr_t where = dset < 0 ? HADDR_UNDEF : H5Dget_offset(dset);
	herr_t rc = where == HADDR_UNDEF ? -1 : 0;
	if (rc == 0)
		*at = (uint64_t)where;
	if (dset >= 0 && H5Dclose(dset) < 0)
		rc = -1;
	H5Sclose(space);
	H5Tclose(type);
	return rc;
}

/* The node file's datasets, in plan order: contiguous, allocated at creation, never filled. */
static llmp_status layout_datasets(hid_t file, uint32_t owner_file, struct ck_slice *all, size_t n,
				   const char *path, uint64_t *end, char *msg, size_t msglen)
{
	hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_create_intermediate_group(lcpl, 1);
	H5Pset_layout(dcpl, H5D_CONTIGUOUS);
	H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
	H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
	llmp_status st = LLMP_OK;
	for (size_t i = 0; st == LLMP_OK && i < n; i++) {
		struct ck_slice *s = &all[i];
		if (s->owner != s->rank || s->file != owner_file)
			continue; /* a replica, or another node's */
		if (allocate_dataset(file, lcpl, dcpl, s, &s->at) < 0)
			st = llmp_fail(LLMP_ERR_IO, msg, msglen,
				       "laying out tensor %s (rank %u) in %s failed", s->name, s->owner,
				       path);
		else if (s->at + ck_bytes(s) > *end)
			*end = s->at + ck_bytes(s);
	}
	H5Pclose(dcpl);
	H5Pclose(lcpl);
	return st;
}

llmp_status ck_layout_node_file(const char *path, size_t alignment, uint32_t owner_file, struct ck_slice *all,
				size_t n, uint64_t *bytes, char *msg, size_t msglen)
{
	llmp_status st = LLMP_OK;
	struct stat sb;
	uint64_t end = 0;
	H5E_BEGIN_TRY
	{
		hid_t fapl = ck_h5_file_access(alignment);
		hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
		if (file < 0)
			st = llmp_fail(LLMP_ERR_IO, msg, msglen, "cannot create %s", path);
		if (st == LLMP_OK)
			st = layout_datasets(file, owner_file, all, n, path, &end, msg, msglen);
		if (file >= 0 && (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 || H5Fclose(file) < 0) &&
		    st == LLMP_OK)
			st = llmp_fail(LLMP_ERR_IO, msg, msglen, "closing %s failed (disk full?)", path);
		H5Pclose(fapl);
	}
	H5E_END_TRY;
	/*
	 * The file's size is settled now, before any slice is written: at least
	 * the end of the last slice, whichever rank writes last, so that the
	 * MANIFEST's size and the bytes around the slices are known here.
	 */
	if (st == LLMP_OK && stat(path, &sb) != 0)
		st = llmp_fail(LLMP_ERR_IO, msg, msglen, "%s: %s", path, strerror(errno));
	if (st == LLMP_OK && (uint64_t)sb.st_size < end && truncate(path, (off_t)end) != 0)
		st = llmp_fail(LLMP_ERR_IO, msg, msglen, "extending %s: %s", path, strerror(errno));
	if (st == LLMP_OK)
		*bytes = (uint64_t)sb.st_size < end ? end : (uint64_t)sb.st_size;
	return st; /* fsynced by this rank once every slice is in (ck_node_file_crc), not in the stall */
}

/* One tensor's virtual dataset: each distinct slice mapped from the shard holding it. */
static herr_t write_virtual(hid_t file, hid_t lcpl, const struct ck_slice *all, size_t first, size_t end)
{
	const struct ck_slice *t = &all[first];
	hsize_t dims[LLMP_CKPT_MAX_DIMS];
	for (unsigned d = 0; d < t->ndim; d++)
		dims[d] = t->global[d];
	hid_t type = ck_h5_file_type((llmp_dtype)t->dtype),
	      vspace = H5Screate_simple((int)t->ndim, dims, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	herr_t rc = 0;
	for (size_t i = first; rc >= 0 && i < end; i++) {
		const struct ck_slice *s = &all[i];
		if (s->owner != s->rank)
			continue; /* a replica: its owner's copy is the one mapped */
		hsize_t start[LLMP_CKPT_MAX_DIMS], count[LLMP_CKPT_MAX_DIMS];
		for (unsigned d = 0; d < s->ndim; d++) {
			start[d] = s->offset[d];
			count[d] = s->shape[d];
		}
		char source[32], dname[CK_DATASET_MAX];
		ck_shard_path(NULL, s->file, source, sizeof source); /* relative: beside the index */
		ck_dataset_name(s, dname, sizeof dname);
		hid_t sspace = H5Screate_simple((int)s->ndim, count, NULL);
		rc = H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start, NULL, count, NULL);
		if (rc >= 0)
			rc = H5Pset_virtual(dcpl, vspace, source, dname, sspace);
		H5Sclose(sspace);
	}
	H5Sselect_all(vspace);
	hid_t dset = rc < 0 ? -1 : H5Dcreate2(file, t->name, type, vspace, lcpl, dcpl, H5P_DEFAULT);
	if (dset < 0 || H5Dclose(dset) < 0)
		rc = -1;
	H5Pclose(dcpl);
	H5Sclose(vspace);
	H5Tclose(type);
	return rc;
}

llmp_status ck_write_index(llmp_ckpt *ck, const char *path, const struct ck_slice *all, size_t n)
{
	llmp_ctx *ctx = ck->ctx;
	llmp_status st = LLMP_OK;
	H5E_BEGIN_TRY
	{
		hid_t fapl = ck_h5_file_access(0), lcpl = H5Pcreate(H5P_LINK_CREATE);
		H5Pset_create_intermediate_group(lcpl, 1);
		hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
		if (file < 0)
			st = rt_fail(ctx, LLMP_ERR_IO, "cannot create %s", path);
		for (size_t first = 0, end; st == LLMP_OK && first < n; first = end) {
			for (end = first; end < n && strcmp(all[end].name, all[first].name) == 0; end++)
				;
			if (write_virtual(file, lcpl, all, first, end) < 0)
				st = rt_fail(ctx, LLMP_ERR_IO,
					     "writing the virtual dataset of %s to %s failed",
					     all[first].name, path);
		}
		if (file >= 0 && (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 || H5Fclose(file) < 0) &&
		    st == LLMP_OK)
			st = rt_fail(ctx, LLMP_ERR_IO, "closing %s failed", path);
		H5Pclose(lcpl);
		H5Pclose(fapl);
	}
	H5E_END_TRY;
	return st == LLMP_OK ? ck_fsync_path(ctx, path) : st;
}

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
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <hdf5.h>

#include "ckpt_internal.h"
#include "crc32c.h"

/* The file type of each dtype; 16-bit floats as HDF5 custom floats. */
static hid_t file_type(llmp_dtype dtype)
{
	hid_t t;
	switch (dtype) {
	case LLMP_FLOAT32: return H5Tcopy(H5T_IEEE_F32LE);
	case LLMP_FLOAT64: return H5Tcopy(H5T_IEEE_F64LE);
	case LLMP_INT32: return H5Tcopy(H5T_STD_I32LE);
	case LLMP_INT64: return H5Tcopy(H5T_STD_I64LE);
	case LLMP_UINT8: return H5Tcopy(H5T_STD_U8LE);
	case LLMP_FLOAT16:
		t = H5Tcopy(H5T_IEEE_F32LE);
		H5Tset_fields(t, 15, 10, 5, 0, 10);
		H5Tset_size(t, 2);
		H5Tset_ebias(t, 15);
		return t;
	default: /* bfloat16: float32's exponent, 7 mantissa bits */
		t = H5Tcopy(H5T_IEEE_F32LE);
		H5Tset_fields(t, 15, 7, 8, 0, 7);
		H5Tset_size(t, 2);
		H5Tset_ebias(t, 127);
		return t;
	}
}

/* alignment 0: none. */
static hid_t file_access(size_t alignment)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (fapl >= 0) {
		H5Pset_file_locking(fapl, 0, 1);
		if (alignment)
			H5Pset_alignment(fapl, alignment / 2 ? alignment / 2 : 1, alignment);
	}
	return fapl;
}

static herr_t write_dataset(hid_t file, hid_t lcpl, const struct ck_slice *s, const void *data)
{
	hsize_t dims[LLMP_CKPT_MAX_DIMS];
	for (unsigned d = 0; d < s->ndim; d++)
		dims[d] = s->shape[d];
	hid_t type = file_type((llmp_dtype)s->dtype), space = H5Screate_simple((int)s->ndim, dims, NULL);
	hid_t dset = H5Dcreate2(file, s->name, type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	herr_t rc = dset < 0 ? -1 : H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
	if (dset >= 0 && H5Dclose(dset) < 0)
		rc = -1;
	H5Sclose(space);
	H5Tclose(type);
	return rc;
}

llmp_status ck_write_shard(struct ck_shard_job *job, char *msg, size_t msglen)
{
	llmp_status st = LLMP_OK;
	H5E_BEGIN_TRY {
		hid_t fapl = file_access(job->alignment), lcpl = H5Pcreate(H5P_LINK_CREATE);
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
			s->crc = llmp_crc32c(0, job->data[i], ck_bytes(s));
			if (write_dataset(file, lcpl, s, job->data[i]) < 0) {
				snprintf(msg, msglen, "writing tensor %s to %s failed", s->name, job->path);
				st = LLMP_ERR_IO;
			}
		}
		if (file >= 0 && (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 || H5Fclose(file) < 0) && st == LLMP_OK) {
			snprintf(msg, msglen, "closing %s failed (disk full?)", job->path);
			st = LLMP_ERR_IO;
		}
		H5Pclose(lcpl);
		H5Pclose(fapl);
	} H5E_END_TRY;
	if (st == LLMP_OK)
		st = ck_fsync_msg(job->path, msg, msglen);
	struct stat sb;
	job->bytes_written = st == LLMP_OK && stat(job->path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	return st;
}

/* One tensor's virtual dataset: each distinct slice mapped from its owner's shard. */
static herr_t write_virtual(hid_t file, hid_t lcpl, const struct ck_slice *all, size_t first, size_t end)
{
	const struct ck_slice *t = &all[first];
	hsize_t dims[LLMP_CKPT_MAX_DIMS];
	for (unsigned d = 0; d < t->ndim; d++)
		dims[d] = t->global[d];
	hid_t type = file_type((llmp_dtype)t->dtype), vspace = H5Screate_simple((int)t->ndim, dims, NULL);
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
		char source[32];
		ck_shard_path(NULL, s->owner, source, sizeof source); /* relative: beside the index */
		hid_t sspace = H5Screate_simple((int)s->ndim, count, NULL);
		rc = H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start, NULL, count, NULL);
		if (rc >= 0)
			rc = H5Pset_virtual(dcpl, vspace, source, s->name, sspace);
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
	H5E_BEGIN_TRY {
		hid_t fapl = file_access(0), lcpl = H5Pcreate(H5P_LINK_CREATE);
		H5Pset_create_intermediate_group(lcpl, 1);
		hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
		if (file < 0)
			st = rt_fail(ctx, LLMP_ERR_IO, "cannot create %s", path);
		for (size_t first = 0, end; st == LLMP_OK && first < n; first = end) {
			for (end = first; end < n && strcmp(all[end].name, all[first].name) == 0; end++)
				;
			if (write_virtual(file, lcpl, all, first, end) < 0)
				st = rt_fail(ctx, LLMP_ERR_IO, "writing the virtual dataset of %s to %s failed",
					     all[first].name, path);
		}
		if (file >= 0 && (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 || H5Fclose(file) < 0) && st == LLMP_OK)
			st = rt_fail(ctx, LLMP_ERR_IO, "closing %s failed", path);
		H5Pclose(lcpl);
		H5Pclose(fapl);
	} H5E_END_TRY;
	return st == LLMP_OK ? ck_fsync_path(ctx, path) : st;
}

llmp_status ck_read_slice(llmp_ctx *ctx, const char *shard_path, const struct ck_slice *s, void *buf)
{
	llmp_status st = LLMP_OK;
	H5E_BEGIN_TRY {
		hid_t fapl = file_access(0);
		hid_t file = H5Fopen(shard_path, H5F_ACC_RDONLY, fapl);
		hid_t dset = file < 0 ? -1 : H5Dopen2(file, s->name, H5P_DEFAULT);
		hid_t space = dset < 0 ? -1 : H5Dget_space(dset);
		hsize_t dims[LLMP_CKPT_MAX_DIMS];
		int nd = space < 0 ? -1 : H5Sget_simple_extent_dims(space, dims, NULL);
		bool same = nd == (int)s->ndim;
		for (unsigned d = 0; same && d < s->ndim; d++)
			same = dims[d] == s->shape[d];
		hid_t type = file_type((llmp_dtype)s->dtype);
		if (file < 0)
			st = rt_fail(ctx, LLMP_ERR_IO, "cannot open %s as HDF5", shard_path);
		else if (dset < 0)
			st = rt_fail(ctx, LLMP_ERR_IO, "%s has no dataset for tensor %s", shard_path, s->name);
		else if (!same)
			st = rt_fail(ctx, LLMP_ERR_IO, "%s: tensor %s has another shape than its manifest says",
				     shard_path, s->name);
		else if (H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
			st = rt_fail(ctx, LLMP_ERR_IO, "reading tensor %s from %s failed", s->name, shard_path);
		H5Tclose(type);
		if (space >= 0)
			H5Sclose(space);
		if (dset >= 0)
			H5Dclose(dset);
		if (file >= 0)
			H5Fclose(file);
		H5Pclose(fapl);
	} H5E_END_TRY;
	return st;
}

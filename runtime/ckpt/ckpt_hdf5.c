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
 * Reading and checking (ckpt_format.h) touch no context: `llmp ckpt
 * verify` uses them, and only on files whose bytes passed their checksums
 * (ckpt_filesum.c), since HDF5 1.10 may crash or hang on damaged metadata.
 * A load does not open HDF5 at all (ckpt_read.c). Writing a shard records
 * where each slice's bytes went and the file's CRC-32C, for the MANIFEST.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "ckpt_internal.h"
#include "kernels/crc32c.h"

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

/* Whether a dataspace is simple with exactly these dimensions. */
static bool same_extent(hid_t space, unsigned ndim, const uint64_t *dims)
{
	hsize_t got[LLMP_CKPT_MAX_DIMS];
	if (space < 0 || H5Sget_simple_extent_ndims(space) != (int)ndim)
		return false;
	H5Sget_simple_extent_dims(space, got, NULL);
	for (unsigned d = 0; d < ndim; d++)
		if (got[d] != dims[d])
			return false;
	return true;
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

/* One slice as a contiguous dataset; *at is where its bytes start in the file. */
static herr_t write_dataset(hid_t file, hid_t lcpl, const struct ck_slice *s, const void *data, uint64_t *at)
{
	hsize_t dims[LLMP_CKPT_MAX_DIMS];
	for (unsigned d = 0; d < s->ndim; d++)
		dims[d] = s->shape[d];
	hid_t type = file_type((llmp_dtype)s->dtype), space = H5Screate_simple((int)s->ndim, dims, NULL);
	hid_t dset = H5Dcreate2(file, s->name, type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
	herr_t rc = dset < 0 ? -1 : H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
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
 * cache), the slices' own CRCs, taken from memory, joined in (ckpt_filesum.c).
 */
static llmp_status shard_crc(struct ck_shard_job *job, char *msg, size_t msglen)
{
	struct stat sb;
	size_t n = 0;
	int fd = open(job->path, O_RDONLY | O_CLOEXEC);
	struct ck_extent *e = malloc((job->n ? job->n : 1) * sizeof *e);
	llmp_status st = LLMP_OK;
	if (!e)
		st = ck_fail(msg, msglen, LLMP_ERR_NOMEM, "checksumming %s: out of memory", job->path);
	else if (fd < 0 || fstat(fd, &sb) != 0)
		st = ck_fail(msg, msglen, LLMP_ERR_IO, "%s: %s", job->path, strerror(errno));
	for (size_t i = 0; st == LLMP_OK && i < job->n; i++)
		if (job->data[i])
			e[n++] = (struct ck_extent){.at = job->all[i].at, .bytes = ck_bytes(&job->all[i]),
						    .crc = job->all[i].crc};
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
			if (write_dataset(file, lcpl, s, job->data[i], &s->at) < 0) {
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
		st = shard_crc(job, msg, msglen);
	if (st == LLMP_OK)
		st = ck_fsync_msg(job->path, msg, msglen);
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

/* ------------------------------------- reading and checking (no context) */

struct ck_h5 {
	hid_t file;
	char path[4200];
};

llmp_status ck_h5_open(const char *path, struct ck_h5 **out, char *msg, size_t len)
{
	struct ck_h5 *h5 = calloc(1, sizeof *h5);
	*out = NULL;
	if (!h5)
		return ck_fail(msg, len, LLMP_ERR_NOMEM, "opening %s: out of memory", path);
	snprintf(h5->path, sizeof h5->path, "%s", path);
	H5E_BEGIN_TRY {
		hid_t fapl = file_access(0);
		h5->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
		H5Pclose(fapl);
	} H5E_END_TRY;
	if (h5->file < 0) {
		free(h5);
		return ck_fail(msg, len, LLMP_ERR_IO, "%s: cannot open it as HDF5", path);
	}
	*out = h5;
	return LLMP_OK;
}

void ck_h5_close(struct ck_h5 *h5)
{
	if (!h5)
		return;
	H5E_BEGIN_TRY {
		H5Fclose(h5->file);
	} H5E_END_TRY;
	free(h5);
}

/* Whether a dataset's type is the file type llmp writes for dtype (no conversion hides a change). */
static bool same_type(hid_t dset, llmp_dtype dtype)
{
	hid_t stored = H5Dget_type(dset), want = file_type(dtype);
	bool same = stored >= 0 && H5Tequal(stored, want) > 0;
	if (stored >= 0)
		H5Tclose(stored);
	H5Tclose(want);
	return same;
}

static llmp_status locate(struct ck_h5 *h5, hid_t dset, const struct ck_slice *s, uint64_t *offset,
			  char *msg, size_t len)
{
	const char *path = h5->path, *name = s->name;
	hid_t space = H5Dget_space(dset), dcpl = H5Dget_create_plist(dset);
	bool contiguous = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CONTIGUOUS;
	haddr_t where = H5Dget_offset(dset);
	llmp_status st = LLMP_OK;
	if (!same_extent(space, s->ndim, s->shape))
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: another shape than its MANIFEST says", path,
			     name);
	else if (!same_type(dset, (llmp_dtype)s->dtype))
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: stored with another type than its MANIFEST's %s",
			     path, name, llmp_dtype_name((llmp_dtype)s->dtype));
	else if (!contiguous || where == HADDR_UNDEF || H5Dget_storage_size(dset) != ck_bytes(s))
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: not stored as one contiguous block of %llu bytes",
			     path, name, (unsigned long long)ck_bytes(s));
	else
		*offset = (uint64_t)where;
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (space >= 0)
		H5Sclose(space);
	return st;
}

llmp_status ck_h5_locate(struct ck_h5 *h5, const struct ck_slice *s, uint64_t *file_offset, char *msg, size_t len)
{
	llmp_status st;
	H5E_BEGIN_TRY {
		hid_t dset = H5Dopen2(h5->file, s->name, H5P_DEFAULT);
		if (dset < 0) {
			st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: no such dataset", h5->path, s->name);
		} else {
			st = locate(h5, dset, s, file_offset, msg, len);
			H5Dclose(dset);
		}
	} H5E_END_TRY;
	return st;
}

static herr_t count_dataset(hid_t obj, const char *name, const H5O_info_t *info, void *arg)
{
	(void)obj;
	(void)name;
	if (info->type == H5O_TYPE_DATASET)
		++*(size_t *)arg;
	return 0;
}

llmp_status ck_h5_count_datasets(struct ck_h5 *h5, size_t *n, char *msg, size_t len)
{
	herr_t rc;
	*n = 0;
	H5E_BEGIN_TRY {
		rc = H5Ovisit(h5->file, H5_INDEX_NAME, H5_ITER_NATIVE, count_dataset, n);
	} H5E_END_TRY;
	return rc < 0 ? ck_fail(msg, len, LLMP_ERR_IO, "%s: cannot list its datasets", h5->path) : LLMP_OK;
}

/* The slice of s[0..n) whose region a virtual mapping's selection is; n if none. */
static size_t mapped_slice(hid_t vspace, const struct ck_slice *s, size_t n)
{
	hsize_t start[LLMP_CKPT_MAX_DIMS], end[LLMP_CKPT_MAX_DIMS];
	hssize_t points = H5Sget_select_npoints(vspace);
	if (points < 0 || H5Sget_select_bounds(vspace, start, end) < 0)
		return n;
	for (size_t k = 0; k < n; k++) {
		bool same = (uint64_t)points == ck_volume(&s[k]);
		for (unsigned d = 0; same && d < s[k].ndim; d++)
			same = start[d] == s[k].offset[d] && end[d] + 1 == s[k].offset[d] + s[k].shape[d];
		if (same)
			return k;
	}
	return n;
}

/*
 * Whether a mapping reads its source dataset whole: HDF5 1.10 gives back
 * the source space of a mapping it read from a file as "all" of an extent
 * not known until the source is opened (the shard's own check covers its
 * shape); a space built in memory has the slice's extent, all selected.
 */
static bool whole_source(hid_t sspace, const struct ck_slice *s)
{
	if (sspace < 0)
		return false;
	if (H5Sget_select_type(sspace) == H5S_SEL_ALL)
		return H5Sget_simple_extent_ndims(sspace) == 0 || same_extent(sspace, s->ndim, s->shape);
	hssize_t points = H5Sget_select_npoints(sspace);
	return points >= 0 && (uint64_t)points == ck_volume(s) && same_extent(sspace, s->ndim, s->shape);
}

/* Mapping i of a virtual dataset: the region it fills, and the file and dataset it reads whole. */
static llmp_status check_mapping(const struct ck_h5 *h5, hid_t dcpl, size_t i, const struct ck_slice *s,
				 size_t n, bool *mapped, char *msg, size_t len)
{
	const char *path = h5->path, *name = s->name;
	hid_t vspace = H5Pget_virtual_vspace(dcpl, i), sspace = H5Pget_virtual_srcspace(dcpl, i);
	char file[64] = "", dset[LLMP_CKPT_MAX_NAME + 2] = "", want[32] = "";
	H5Pget_virtual_filename(dcpl, i, file, sizeof file);
	H5Pget_virtual_dsetname(dcpl, i, dset, sizeof dset);
	size_t k = vspace < 0 ? n : mapped_slice(vspace, s, n);
	if (k < n)
		ck_shard_path(NULL, s[k].owner, want, sizeof want);
	llmp_status st = LLMP_OK;
	if (k == n)
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: virtual mapping %zu fills a region that is no "
			     "slice of its MANIFEST", path, name, i);
	else if (mapped[k])
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: mapping %zu fills a slice another mapping "
			     "fills too", path, name, i);
	else if (strcmp(file, want) != 0 || strcmp(dset, name) != 0)
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: mapping %zu reads %s:%s, its MANIFEST says %s:%s",
			     path, name, i, file, dset, want, name);
	else if (!whole_source(sspace, &s[k]))
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: mapping %zu reads a part of its source, or "
			     "one of another shape than its slice", path, name, i);
	else
		mapped[k] = true;
	if (vspace >= 0)
		H5Sclose(vspace);
	if (sspace >= 0)
		H5Sclose(sspace);
	return st;
}

static llmp_status check_virtual(struct ck_h5 *h5, hid_t dset, const struct ck_slice *s, size_t n, char *msg,
				 size_t len)
{
	const char *path = h5->path, *name = s->name;
	hid_t dcpl = H5Dget_create_plist(dset), space = H5Dget_space(dset);
	size_t count = 0;
	bool *mapped = calloc(n, sizeof *mapped);
	llmp_status st = LLMP_OK;
	if (!mapped)
		st = ck_fail(msg, len, LLMP_ERR_NOMEM, "checking %s: out of memory", path);
	else if (dcpl < 0 || H5Pget_layout(dcpl) != H5D_VIRTUAL || H5Pget_virtual_count(dcpl, &count) < 0)
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: not a virtual dataset", path, name);
	else if (!same_extent(space, s->ndim, s->global))
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: another global shape than its MANIFEST says",
			     path, name);
	else if (!same_type(dset, (llmp_dtype)s->dtype))
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: another type than its MANIFEST's %s", path, name,
			     llmp_dtype_name((llmp_dtype)s->dtype));
	else if (count != n)
		st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: %zu virtual mappings for the %zu slices of its "
			     "MANIFEST", path, name, count, n);
	/* As many mappings as slices, each filling another slice: every slice is mapped. */
	for (size_t i = 0; st == LLMP_OK && i < count; i++)
		st = check_mapping(h5, dcpl, i, s, n, mapped, msg, len);
	free(mapped);
	if (space >= 0)
		H5Sclose(space);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	return st;
}

llmp_status ck_h5_check_virtual(struct ck_h5 *h5, const struct ck_slice *s, size_t n, char *msg, size_t len)
{
	llmp_status st;
	H5E_BEGIN_TRY {
		hid_t dset = H5Dopen2(h5->file, s->name, H5P_DEFAULT);
		if (dset < 0) {
			st = ck_fail(msg, len, LLMP_ERR_IO, "%s: tensor %s: no such dataset", h5->path, s->name);
		} else {
			st = check_virtual(h5, dset, s, n, msg, len);
			H5Dclose(dset);
		}
	} H5E_END_TRY;
	return st;
}

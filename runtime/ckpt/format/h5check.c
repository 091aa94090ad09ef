/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * h5check.c - a checkpoint's HDF5 files opened for checking, without a
 * context: where a slice's bytes are in its shard, the datasets a file
 * holds, and the index's virtual datasets against the MANIFEST.
 *
 * `llmp ckpt verify` uses them only on files whose bytes passed their
 * checksums (filesum.c), since HDF5 1.10 may crash or hang on damaged
 * metadata; a load does not open HDF5 at all (ckpt_read.c). The file types
 * and access properties are shared with the writer (ckpt_hdf5.c), so what
 * is checked is what was written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_h5.h"

hid_t ck_h5_file_type(llmp_dtype dtype)
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

hid_t ck_h5_file_access(size_t alignment)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (fapl >= 0) {
		H5Pset_file_locking(fapl, 0, 1);
		if (alignment)
			H5Pset_alignment(fapl, alignment / 2 ? alignment / 2 : 1, alignment);
	}
	return fapl;
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

struct ck_h5 {
	hid_t file;
	char path[4200];
};

llmp_status ck_h5_open(const char *path, struct ck_h5 **out, char *msg, size_t len)
{
	struct ck_h5 *h5 = calloc(1, sizeof *h5);
	*out = NULL;
	if (!h5)
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "opening %s: out of memory", path);
	snprintf(h5->path, sizeof h5->path, "%s", path);
	H5E_BEGIN_TRY
	{
		hid_t fapl = ck_h5_file_access(0);
		h5->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
		H5Pclose(fapl);
	}
	H5E_END_TRY;
	if (h5->file < 0) {
		free(h5);
		return llmp_fail(LLMP_ERR_IO, msg, len, "%s: cannot open it as HDF5", path);
	}
	*out = h5;
	return LLMP_OK;
}

void ck_h5_close(struct ck_h5 *h5)
{
	if (!h5)
		return;
	H5E_BEGIN_TRY
	{
		H5Fclose(h5->file);
	}
	H5E_END_TRY;
	free(h5);
}

/* Whether a dataset's type is the file type llmp writes for dtype (no conversion hides a change). */
static bool same_type(hid_t dset, llmp_dtype dtype)
{
	hid_t stored = H5Dget_type(dset), want = ck_h5_file_type(dtype);
	bool same = stored >= 0 && H5Tequal(stored, want) > 0;
	if (stored >= 0)
		H5Tclose(stored);
	H5Tclose(want);
	return same;
}

static llmp_status locate(struct ck_h5 *h5, hid_t dset, const struct ck_slice *s, uint64_t *offset, char *msg,
			  size_t len)
{
	const char *path = h5->path, *name = s->name;
	hid_t space = H5Dget_space(dset), dcpl = H5Dget_create_plist(dset);
	bool contiguous = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CONTIGUOUS;
	haddr_t where = H5Dget_offset(dset);
	llmp_status st = LLMP_OK;
	if (!same_extent(space, s->ndim, s->shape))
		st = llmp_fail(LLMP_ERR_IO, msg, len, "%s: tensor %s: another shape than its MANIFEST says",
			       path, name);
	else if (!same_type(dset, (llmp_dtype)s->dtype))
		st = llmp_fail(LLMP_ERR_IO, msg, len,
			       "%s: tensor %s: stored with another type than its MANIFEST's %s", path, name,
			       llmp_dtype_name((llmp_dtype)s->dtype));
	else if (!contiguous || where == HADDR_UNDEF || H5Dget_storage_size(dset) != ck_bytes(s))
		st = llmp_fail(LLMP_ERR_IO, msg, len,
			       "%s: tensor %s: not stored as one contiguous block of %llu bytes", path, name,
			       (unsigned long long)ck_bytes(s));
	else
		*offset = (uint64_t)where;
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (space >= 0)
		H5Sclose(space);
	return st;
}

llmp_status ck_h5_locate(struct ck_h5 *h5, const struct ck_slice *s, uint64_t *file_offset, char *msg,
			 size_t len)
{
	llmp_status st;
	char dname[CK_DATASET_MAX];
	ck_dataset_name(s, dname, sizeof dname);
	H5E_BEGIN_TRY
	{
		hid_t dset = H5Dopen2(h5->file, dname, H5P_DEFAULT);
		if (dset < 0) {
			st = llmp_fail(LLMP_ERR_IO, msg, len, "%s: tensor %s: no dataset %s", h5->path,
				       s->name, dname);
		} else {
			st = locate(h5, dset, s, file_offset, msg, len);
			H5Dclose(dset);
		}
	}
	H5E_END_TRY;
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
	H5E_BEGIN_TRY
	{
#if H5_VERSION_GE(1, 12, 0)
		/* 1.12 added the fields argument (H5Ovisit is H5Ovisit3 there): only the type is read */
		rc = H5Ovisit(h5->file, H5_INDEX_NAME, H5_ITER_NATIVE, count_dataset, n, H5O_INFO_BASIC);
#else
		rc = H5Ovisit(h5->file, H5_INDEX_NAME, H5_ITER_NATIVE, count_dataset, n);
#endif
	}
	H5E_END_TRY;
	return rc < 0 ? llmp_fail(LLMP_ERR_IO, msg, len, "%s: cannot list its datasets", h5->path) : LLMP_OK;
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
	char file[64] = "", dset[CK_DATASET_MAX + 1] = "", want[32] = "", want_dset[CK_DATASET_MAX] = "";
	H5Pget_virtual_filename(dcpl, i, file, sizeof file);
	H5Pget_virtual_dsetname(dcpl, i, dset, sizeof dset);
	size_t k = vspace < 0 ? n : mapped_slice(vspace, s, n);
	if (k < n) {
		ck_shard_path(NULL, s[k].file, want, sizeof want);
		ck_dataset_name(&s[k], want_dset, sizeof want_dset);
	}
	llmp_status st = LLMP_OK;
	if (k == n)
		st = llmp_fail(LLMP_ERR_IO, msg, len,
			       "%s: tensor %s: virtual mapping %zu fills a region that is no "
			       "slice of its MANIFEST",
			       path, name, i);
	else if (mapped[k])
		st = llmp_fail(LLMP_ERR_IO, msg, len,
			       "%s: tensor %s: mapping %zu fills a slice another mapping fills too", path,
			       name, i);
	else if (strcmp(file, want) != 0 || strcmp(dset, want_dset) != 0)
		st = llmp_fail(LLMP_ERR_IO, msg, len,
			       "%s: tensor %s: mapping %zu reads %s:%s, its MANIFEST says %s:%s", path, name,
			       i, file, dset, want, want_dset);
	else if (!whole_source(sspace, &s[k]))
		st = llmp_fail(LLMP_ERR_IO, msg, len,
			       "%s: tensor %s: mapping %zu reads a part of its source, or "
			       "one of another shape than its slice",
			       path, name, i);
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
		st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "checking %s: out of memory", path);
	else if (dcpl < 0 || H5Pget_layout(dcpl) != H5D_VIRTUAL || H5Pget_virtual_count(dcpl, &count) < 0)
		st = llmp_fail(LLMP_ERR_IO, msg, len, "%s: tensor %s: not a virtual dataset", path, name);
	else if (!same_extent(space, s->ndim, s->global))
		st = llmp_fail(LLMP_ERR_IO, msg, len,
			       "%s: tensor %s: another global shape than its MANIFEST says", path, name);
	else if (!same_type(dset, (llmp_dtype)s->dtype))
		st = llmp_fail(LLMP_ERR_IO, msg, len, "%s: tensor %s: another type than its MANIFEST's %s",
			       path, name, llmp_dtype_name((llmp_dtype)s->dtype));
	else if (count != n)
		st = llmp_fail(LLMP_ERR_IO, msg, len,
			       "%s: tensor %s: %zu virtual mappings for the %zu slices of its MANIFEST", path,
			       name, count, n);
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
	H5E_BEGIN_TRY
	{
		hid_t dset = H5Dopen2(h5->file, s->name, H5P_DEFAULT);
		if (dset < 0) {
			st = llmp_fail(LLMP_ERR_IO, msg, len, "%s: tensor %s: no such dataset", h5->path,
				       s->name);
		} else {
			st = check_virtual(h5, dset, s, n, msg, len);
			H5Dclose(dset);
		}
	}
	H5E_END_TRY;
	return st;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_h5.h - what the writer of a checkpoint's HDF5 files (ckpt_hdf5.c)
 * and their checker (h5check.c) must agree on. Needs hdf5.h: included only
 * by those two files, so nothing else sees HDF5.
 */
#ifndef LLMP_CKPT_H5_H
#define LLMP_CKPT_H5_H

#include <hdf5.h>

#include "ckpt_format.h"

/* The file type of each dtype; 16-bit floats as HDF5 custom floats. */
hid_t ck_h5_file_type(llmp_dtype dtype);
/*
 * File access properties: no file locking (it fails on Lustre, GPFS and
 * NFS, and a checkpoint file has one writer), and datasets of `alignment`
 * bytes or more starting on its multiples (0: none).
 */
hid_t ck_h5_file_access(size_t alignment);

#endif /* LLMP_CKPT_H5_H */

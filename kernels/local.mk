# SPDX-License-Identifier: BSD-3-Clause
# kernels/local.mk - host compute kernels (included by Makefile.am).
#
# Portable C that needs nothing but libc (and libm, for the attention
# merge's expf and log1pf). Built position-independent into a
# convenience library that libllmp links statically. The loops are written
# for the auto-vectoriser; configure's KERNEL_VEC_CFLAGS asks for it
# explicitly (-ftree-vectorize, and gcc's dynamic cost model where accepted)
# because that survives whatever -O level CFLAGS carries.
kernels_sources = \
	kernels/dtype.c \
	kernels/half.h kernels/hd.h \
	kernels/reduce.h kernels/reduce.c \
	kernels/crc32c.h kernels/crc32c.c kernels/crc32c_combine.c \
	kernels/copy.h kernels/copy.c \
	kernels/attn_merge.h kernels/attn_merge.c

noinst_LTLIBRARIES += kernels/libkernels.la
kernels_libkernels_la_SOURCES = $(kernels_sources)
kernels_libkernels_la_CFLAGS = $(LLMP_CFLAGS) $(KERNEL_VEC_CFLAGS)
kernels_libkernels_la_LIBADD = -lm

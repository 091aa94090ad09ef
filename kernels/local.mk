# kernels/local.mk - host compute kernels (included by Makefile.am).
#
# Portable C that needs nothing but libc. Built position-independent into a
# convenience library that libllmp links statically. The loops are written
# for the auto-vectoriser; -ftree-vectorize with the dynamic cost model is
# given explicitly because it survives whatever -O level CFLAGS carries.
kernels_sources = \
	kernels/llmp_dtype.h kernels/dtype.c \
	kernels/half.h \
	kernels/reduce.h kernels/reduce.c

noinst_LTLIBRARIES += kernels/libkernels.la
kernels_libkernels_la_SOURCES = $(kernels_sources)
kernels_libkernels_la_CFLAGS = $(LLMP_CFLAGS) -ftree-vectorize -fvect-cost-model=dynamic

pkginclude_HEADERS += kernels/llmp_dtype.h

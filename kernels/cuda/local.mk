# SPDX-License-Identifier: BSD-3-Clause
# kernels/cuda/local.mk - the CUDA kernels (included by Makefile.am).
#
# Built only when configure finds nvcc (HAVE_CUDA), into a plain static
# archive of position-independent objects, kernels/cuda/libkernels_cuda.a.
# Nothing links it yet but its tests: libllmp gets it with the device path.
# Automake knows no .cu, so one suffix rule compiles them with the flags
# configure chose (NVCC_BASEFLAGS, NVCC_WFLAGS, NVCC_GENCODE: sm_80, sm_90,
# sm_100 and compute_90 PTX, every warning an error) and the user's
# NVCCFLAGS last. nvcc's dependency output is not used: every object
# depends on every header of the kernels, which are few.
kernels_cuda_headers = \
	kernels/hd.h kernels/half.h kernels/cuda/reduce_elem.h \
	kernels/cuda/crc32c_elem.h kernels/cuda/attn_merge_elem.h \
	kernels/cuda/kern_cuda.h kernels/cuda/launch.cuh kernels/attn_merge.h
kernels_cuda_sources = \
	kernels/cuda/reduce.cu kernels/cuda/cast.cu \
	kernels/cuda/attn_merge.cu kernels/cuda/crc32c.cu
EXTRA_DIST += $(kernels_cuda_headers) $(kernels_cuda_sources) kernels/cuda/local.mk kernels/cuda/README.md

NVCC_COMPILE = $(NVCC) $(NVCC_BASEFLAGS) $(NVCC_WFLAGS) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS)
AM_V_NVCC = $(am__v_NVCC_@AM_V@)
am__v_NVCC_ = $(am__v_NVCC_@AM_DEFAULT_V@)
am__v_NVCC_0 = @echo "  NVCC    " $@;
am__v_NVCC_1 =

if HAVE_CUDA
noinst_LIBRARIES = kernels/cuda/libkernels_cuda.a
kernels_cuda_libkernels_cuda_a_SOURCES = $(kernels_cuda_sources)
$(kernels_cuda_libkernels_cuda_a_OBJECTS): $(kernels_cuda_headers)
endif

SUFFIXES = .cu
.cu.o:
	$(AM_V_NVCC)$(NVCC_COMPILE) $(NVCC_GENCODE) $(NVCCFLAGS) -c -o $@ $<

# make gpu-check (scripts/gpu-check.sh): the kernels run on a GPU against
# the C ones, and the device benchmark; it says so and passes without a GPU.
EXTRA_DIST += tests/gpu/gpu_kernels.c
if HAVE_CUDA
EXTRA_PROGRAMS += tests/gpu/gpu_kernels
tests_gpu_gpu_kernels_SOURCES = tests/gpu/gpu_kernels.c
tests_gpu_gpu_kernels_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_gpu_gpu_kernels_LDADD = kernels/cuda/libkernels_cuda.a kernels/libkernels.la $(CUDART_LIBS) -lm
gpu-check: tests/gpu/gpu_kernels cli/llmp
	$(srcdir)/scripts/gpu-check.sh $(abs_builddir)
else
gpu-check:
	@echo "gpu-check: skipped: configure found no CUDA toolkit (see its summary)"
endif
.PHONY: gpu-check

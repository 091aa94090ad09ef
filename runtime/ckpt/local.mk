# runtime/ckpt/local.mk - checkpoints (included by runtime/local.mk).
runtime_sources += \
	runtime/ckpt/ckpt_format.h runtime/ckpt/ckpt_internal.h runtime/ckpt/ckpt.c \
	runtime/ckpt/ckpt_fs.c runtime/ckpt/ckpt_manifest.c runtime/ckpt/ckpt_filesum.c \
	runtime/ckpt/ckpt_hdf5.c runtime/ckpt/ckpt_save.c runtime/ckpt/ckpt_load.c \
	runtime/ckpt/ckpt_read.c runtime/ckpt/ckpt_verify.c

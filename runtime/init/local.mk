# SPDX-License-Identifier: BSD-3-Clause
# runtime/init/local.mk - llmp_init and llmp_finalize, which bring up every
# other folder's layer (included by runtime/local.mk).
runtime_sources += runtime/init/init.c runtime/init/version.c
EXTRA_DIST += runtime/init/README.md

# SPDX-License-Identifier: BSD-3-Clause
# tests/surface/local.mk - the library's surface, one source of truth
# (included by Makefile.am inside `if BUILD_RUNTIME`; doc/abi.md).
#
# tests/surface.bats runs check_exports.sh (each library exports exactly the
# functions its headers declare) and check_python.py (python/llmp/_libllmp.py
# against surface_dump, the headers' sizes, offsets and values as the
# compiler sees them, and against gcc's reading of the prototypes), and
# check_private.py (the package's modules use one another's public names only).
check_PROGRAMS += tests/surface/surface_dump
tests_surface_surface_dump_SOURCES = tests/surface/surface_dump.c

if HAVE_BATS
TESTS += tests/surface.bats
endif
EXTRA_DIST += tests/surface.bats tests/surface/check_exports.sh tests/surface/check_python.py \
	tests/surface/check_private.py

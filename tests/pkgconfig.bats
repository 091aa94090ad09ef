#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# llmp.pc (runtime/llmp.pc.in) under a prefix other than /usr: its Cflags
# must let a program `#include <llmp/llmp.h>`, as doc/llmp.3 writes it, with
# the headers where `make install` puts them, PREFIX/include/llmp/. (Under
# /usr the compiler's own /usr/include hides a wrong Cflags.)

@test "llmp.pc: #include <llmp/llmp.h> compiles with the headers under another prefix" {
	prefix=$BATS_TEST_TMPDIR/opt/llmp
	mkdir -p "$prefix/include/llmp"
	cp "$LLMP_SRCDIR"/include/llmp/*.h "$prefix/include/llmp/"
	printf '#include <llmp/llmp.h>\nint main(void) { return llmp_strerror(LLMP_OK) == 0; }\n' >"$BATS_TEST_TMPDIR/use.c"
	# llmp.pc as `make install prefix=PREFIX` writes it (--define-variable
	# would move pmix's and ucx's prefix too)
	mkdir -p "$prefix/lib/pkgconfig"
	sed "s|^prefix=.*|prefix=$prefix|" "$LLMP_BUILDDIR/runtime/llmp.pc" >"$prefix/lib/pkgconfig/llmp.pc"
	PKG_CONFIG_PATH=$prefix/lib/pkgconfig run pkg-config --cflags llmp
	[ "$status" -eq 0 ]
	cflags=$output
	grep -q -- "-I$prefix/include\( \|$\)" <<<"$cflags"
	# shellcheck disable=SC2086 # pkg-config's words
	cc -fsyntax-only -Werror $cflags "$BATS_TEST_TMPDIR/use.c"
}

#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The library's surface has one source of truth, the installed headers
# (include/llmp/*.h; doc/abi.md): each library exports exactly what they
# declare, and python/llmp/_libllmp.py mirrors their structs, values and
# prototypes. Each check is also shown failing on a copy with one thing
# changed by hand.

load lib/helpers

setup() {
	need_python
	INC="$LLMP_SRCDIR/include"
	DUMP="$LLMP_BUILDDIR/tests/surface/surface_dump"
	EXPORTS="$LLMP_SRCDIR/tests/surface/check_exports.sh"
	MIRROR="$LLMP_SRCDIR/tests/surface/check_python.py"
	PRIVATE="$LLMP_SRCDIR/tests/surface/check_private.py"
	LIBLLMP="$LLMP_BUILDDIR/runtime/.libs/libllmp.so"
	LIBTOPO="$LLMP_BUILDDIR/planner/.libs/libllmp_topology.so"
	# What libllmp_topology is: the public headers of the parts it holds (the planner, the
	# machine model, the base), as scripts/check-layers.sh's table publics says whose each is.
	PLANNER=$(planner_headers "$INC")
}

planner_headers() { # INCLUDE_DIR
	"$LLMP_SRCDIR/scripts/check-layers.sh" --publics |
		awk -v inc="$1" '$2 == "planner" || $2 == "topology" || $2 == "common" { print inc "/llmp/" $1 }'
}

@test "surface: libllmp_topology's headers come from check-layers.sh's table" {
	[[ " $(echo $PLANNER) " == *"/llmp/llmp_status.h "* ]]
	[[ " $(echo $PLANNER) " == *"/llmp/llmp_plan.h "* ]]
	[[ " $(echo $PLANNER) " != *"/llmp/llmp.h "* ]]
	[[ " $(echo $PLANNER) " != *"/llmp/llmp_dtype.h "* ]]
	for h in $PLANNER; do [ -f "$h" ]; done
}

@test "surface: libllmp exports exactly the functions of every installed header" {
	run "$EXPORTS" "$LIBLLMP" "$INC"/llmp/*.h
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"libllmp.so: "*" functions exported, each declared"* ]]
}

@test "surface: libllmp_topology exports exactly the functions of the planner's headers" {
	run "$EXPORTS" "$LIBTOPO" $PLANNER
	echo "$output"
	[ "$status" -eq 0 ]
	# llmp_ckpt_stripe_check was declared in llmp_ckpt_spec.h and exported by neither library.
	nm -D --defined-only "$LIBTOPO" | grep -q ' T llmp_ckpt_stripe_check$'
	nm -D --defined-only "$LIBLLMP" | grep -q ' T llmp_ckpt_stripe_check$'
}

@test "surface: a function declared but not exported, or exported but not declared, fails" {
	cp -r "$INC/llmp" "$BATS_TEST_TMPDIR/llmp"
	printf '#include "llmp_status.h"\nllmp_status llmp_not_built(int x);\n' >"$BATS_TEST_TMPDIR/llmp/llmp_extra.h"
	run "$EXPORTS" "$LIBLLMP" "$BATS_TEST_TMPDIR"/llmp/*.h
	[ "$status" -eq 1 ]
	[ "$output" = "declared but not exported by libllmp.so: llmp_not_built" ]
	# llmp_status.h alone declares llmp_strerror; the planner's other functions are then extra.
	run "$EXPORTS" "$LIBTOPO" "$INC/llmp/llmp_status.h"
	[ "$status" -eq 1 ]
	[[ "$output" == *"exported by libllmp_topology.so but declared in none of the headers: llmp_spec_parse"* ]]
	[[ "$output" != *"llmp_strerror"* ]]
}

@test "surface: the Python mirrors agree with the C headers" {
	run python3 "$MIRROR" "$DUMP" "$INC"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"_libllmp.py agrees with the headers: 3 structs, 15 statuses"* ]]
}

@test "surface: a status, constant, struct or field added to a header alone fails" {
	cp -r "$INC/llmp" "$BATS_TEST_TMPDIR/llmp"
	sed -i 's/^\tLLMP_ERR_DEVICE /\tLLMP_ERR_DEVICE,\n\tLLMP_ERR_NEW /' "$BATS_TEST_TMPDIR/llmp/llmp_status.h"
	sed -i 's/^#define LLMP_CKPT_FILES_NODE 1u$/&\n#define LLMP_CKPT_FILES_STRIPED 2u/' "$BATS_TEST_TMPDIR/llmp/llmp_ckpt.h"
	sed -i 's/^\tunsigned keep; /\tunsigned keep;\n\tunsigned spare; /' "$BATS_TEST_TMPDIR/llmp/llmp_ckpt.h"
	printf '#ifndef X_H\n#define X_H\ntypedef struct llmp_new_opts { int a; } llmp_new_opts;\n#endif\n' \
		>"$BATS_TEST_TMPDIR/llmp/llmp_new.h"
	grep -q LLMP_ERR_NEW "$BATS_TEST_TMPDIR/llmp/llmp_status.h"
	grep -q LLMP_CKPT_FILES_STRIPED "$BATS_TEST_TMPDIR/llmp/llmp_ckpt.h"
	grep -q 'unsigned spare;' "$BATS_TEST_TMPDIR/llmp/llmp_ckpt.h"
	# the dump as kept by hand, built on the changed headers: the new status is not in it
	gcc -std=c11 -I"$BATS_TEST_TMPDIR" "$LLMP_SRCDIR/tests/surface/surface_dump.c" -o "$BATS_TEST_TMPDIR/dump"
	run python3 "$MIRROR" "$BATS_TEST_TMPDIR/dump" "$BATS_TEST_TMPDIR"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"surface: LLMP_ERR_NEW: in llmp_status.h, not in surface_dump.c"* ]]
	[[ "$output" == *"surface: LLMP_CKPT_FILES_STRIPED: in llmp_ckpt.h, not in surface_dump.c"* ]]
	[[ "$output" == *"surface: llmp_ckpt_opts.spare: in llmp_ckpt.h, not in surface_dump.c"* ]]
	[[ "$output" == *"surface: llmp_new_opts: a struct of llmp_new.h, not in surface_dump.c"* ]]
	# the field sits in the padding after keep: no size or offset the dump has moved
	[[ "$output" != *"sizeof"* ]]
}

@test "surface: a header that changes without the Python module fails, naming both sides" {
	# llmp_ckpt_opts.keep becomes 64 bits wide in a copy of the headers.
	cp -r "$INC/llmp" "$BATS_TEST_TMPDIR/llmp"
	sed -i 's/^\tunsigned keep; /\tuint64_t keep; /' "$BATS_TEST_TMPDIR/llmp/llmp_ckpt.h"
	grep -q 'uint64_t keep;' "$BATS_TEST_TMPDIR/llmp/llmp_ckpt.h"
	gcc -std=c11 -I"$BATS_TEST_TMPDIR" "$LLMP_SRCDIR/tests/surface/surface_dump.c" -o "$BATS_TEST_TMPDIR/dump"
	run python3 "$MIRROR" "$BATS_TEST_TMPDIR/dump" "$BATS_TEST_TMPDIR"
	echo "$output"
	[ "$status" -eq 1 ]
	# keep at offset 16 (after size and root), 4 bytes in Python, 8 in C; the fields after it move by 8.
	[[ "$output" == *"surface: llmp_ckpt_opts.keep: offset 16 size 8 in C, offset 16 size 4 in Python"* ]]
}

@test "surface: a Python module that changes without the headers fails, naming both sides" {
	sed -e 's/"LLMP_INT64": 5/"LLMP_INT64": 6/' \
		-e 's/"llmp_ckpt_save": (_i, \[_p, _u64, _p, _sz\])/"llmp_ckpt_save": (_i, [_p, _u64, _p])/' \
		-e 's/"LLMP_ERR_STATE", "LLMP_ERR_DEVICE")/"LLMP_ERR_STATE")/' \
		-e 's/("timeout_s", ctypes.c_double)/("timeout_s", ctypes.c_float)/' \
		"$LLMP_SRCDIR/python/llmp/_libllmp.py" >"$BATS_TEST_TMPDIR/mirror.py"
	run python3 "$MIRROR" "$DUMP" "$INC" "$BATS_TEST_TMPDIR/mirror.py"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"surface: LLMP_INT64: 5 in C, 6 in Python"* ]]
	[[ "$output" == *"surface: llmp_ckpt_save: 4 arguments in C, 3 in Python"* ]]
	[[ "$output" == *"surface: llmp_status: C has ("*"'LLMP_ERR_DEVICE'), Python's STATUS_NAMES ("*"'LLMP_ERR_STATE')"* ]]
	[[ "$output" == *"surface: llmp_init_opts.timeout_s: offset 16 size 8 in C, offset 16 size 4 in Python"* ]]
}

@test "surface: llmp_version() of the built library is LLMP_VERSION and configure's version" {
	pkg=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$LLMP_BUILDDIR/config.h")
	IFS=. read -r major minor patch <<<"$pkg"
	want=$((major * 10000 + minor * 100 + patch))
	"$DUMP" | grep -qx "value LLMP_VERSION $want"
	run python3 -c 'import ctypes, sys
lib = ctypes.CDLL(sys.argv[1]); lib.llmp_version.restype = ctypes.c_uint
print(lib.llmp_version())' "$LIBLLMP"
	[ "$status" -eq 0 ]
	[ "$output" = "$want" ]
}

# Every LLMP_* variable a C source reads or sets is named once, in
# include/llmp/llmp_env.h: a quoted "LLMP_..." anywhere else in C is a
# second spelling (comments that show a name are not code).
env_names_outside() { # ROOT
	grep -rnE --include='*.c' --include='*.h' '"LLMP_[A-Z0-9_]+"' \
		"$1/runtime" "$1/cli" "$1/plugin" "$1/topology" "$1/kernels" "$1/include" |
		grep -v '/include/llmp/llmp_env.h:' | grep -vE ':[0-9]+:[[:space:]]*(/?\*|//)' || true
}

@test "surface: every LLMP_* environment name is spelled only in llmp_env.h" {
	run env_names_outside "$LLMP_SRCDIR"
	echo "$output"
	[ -z "$output" ]
	# and a second spelling is found
	local copy="$BATS_TEST_TMPDIR/tree"
	mkdir -p "$copy/runtime" "$copy/cli" "$copy/plugin" "$copy/topology" "$copy/kernels" "$copy/include"
	printf 'const char *v = getenv("LLMP_TIMEOUT");\n' >"$copy/runtime/x.c"
	run env_names_outside "$copy"
	[[ "$output" == *'runtime/x.c:1:const char *v = getenv("LLMP_TIMEOUT");'* ]]
}

@test "surface: the package's modules use one another's public names only" {
	run python3 "$PRIVATE" "$LLMP_SRCDIR/python/llmp"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"modules of llmp use one another's public names only"* ]]
	# and each kind of private use is found, in a copy
	cp -r "$LLMP_SRCDIR/python/llmp" "$BATS_TEST_TMPDIR/llmp"
	printf '\nCAP = _ck._status_name\n' >>"$BATS_TEST_TMPDIR/llmp/job.py"
	printf '\nfrom .checkpoint import _MAX_DIMS\n' >>"$BATS_TEST_TMPDIR/llmp/dcp.py"
	printf '\n\ndef _lib_of(ctx):\n    return ctx._lib\n' >>"$BATS_TEST_TMPDIR/llmp/layout.py"
	run python3 "$PRIVATE" "$BATS_TEST_TMPDIR/llmp"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"/llmp/job.py:"*": uses _ck._status_name, a private name of checkpoint.py"* ]]
	[[ "$output" == *"/llmp/dcp.py:"*": imports _MAX_DIMS from checkpoint, a private name of that module"* ]]
	[[ "$output" == *"/llmp/layout.py:"*": uses ctx._lib, private to "*"checkpoint.py"* ]]
	[ "${#lines[@]}" -eq 3 ]
}

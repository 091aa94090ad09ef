#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The SPANK plugin against the headers of every Slurm release from 21.08 to
# 26.05 (tests/slurm/headers/, README.md there): `configure --with-slurm=DIR`
# with Slurm outside /usr, as /opt/slurm/VER, Spack or EasyBuild install it,
# and the plugin compiled and linked against each release. What Slurm's
# loader compares (the plugin's plugin_version) is read from the built .so
# and checked against the release's number, computed here from its name.

HEADERS="$LLMP_SRCDIR/tests/slurm/headers"
PLUGIN_VERSION="$LLMP_BUILDDIR/tests/slurm/plugin_version"

# 26.05.3 -> 0x1a0503, as SLURM_VERSION_NUM(26, 5, 3)
version_number() {
	local IFS=.
	# shellcheck disable=SC2086 # split on the dots
	set -- $1
	printf '0x%02x%02x%02x' $((10#$1)) $((10#$2)) $((10#$3))
}

# A make variable of the configured build tree.
build_var() {
	sed -n "s/^$1 = //p" "$LLMP_BUILDDIR/Makefile"
}

@test "configure --with-slurm=DIR: Slurm 26.05.3 headers under /opt-like prefix, plugin built for it" {
	prefix=$BATS_TEST_TMPDIR/opt/slurm/26.05.3
	mkdir -p "$prefix/include"
	cp -r "$HEADERS/26.05.3/slurm" "$prefix/include/"
	mkdir "$BATS_TEST_TMPDIR/build"
	cd "$BATS_TEST_TMPDIR/build"
	run "$LLMP_SRCDIR/configure" --with-slurm="$prefix" --disable-runtime --without-cuda \
		--without-nccl --disable-cluster-tests CFLAGS=-O0
	[ "$status" -eq 0 ] || { echo "$output" | tail -20; false; }
	grep -q 'which Slurm release the SPANK plugin is built for... 26.05.3' <<<"$output"
	grep -q 'SPANK plugin (llm_parallel.so) *: yes  (for Slurm 26.05.3' <<<"$output"
	# Slurm's headers as system headers: its slurm.h has unprototyped
	# declarations that -Wstrict-prototypes -Werror refuses under -I
	[ "$(sed -n 's/^SLURM_CPPFLAGS = //p' Makefile)" = "-isystem $prefix/include" ]
	# what `llmp --version` prints
	grep -qx '#define LLMP_SLURM_VERSION "26.05.3"' config.h
	run make -j2 plugin/llm_parallel.la
	[ "$status" -eq 0 ] || { echo "$output" | tail -20; false; }
	run "$PLUGIN_VERSION" plugin/.libs/llm_parallel.so
	[ "$status" -eq 0 ]
	[ "$output" = "spank $(version_number 26.05.3) 26.05.3" ]
}

@test "configure --with-slurm=DIR: the cluster tests run DIR's daemons and clients, not the ones on PATH" {
	prefix=$BATS_TEST_TMPDIR/opt/slurm/26.05.3
	mkdir -p "$prefix/include" "$prefix/sbin" "$prefix/bin"
	cp -r "$HEADERS/26.05.3/slurm" "$prefix/include/"
	for prog in sbin/slurmctld sbin/slurmd bin/srun bin/sbatch bin/salloc bin/scontrol bin/squeue bin/sinfo; do
		printf '#!/bin/sh\necho %s\n' "$prog" >"$prefix/$prog"
		chmod 755 "$prefix/$prog"
	done
	# Programs of the same names earlier on PATH stand for another release's.
	mkdir "$BATS_TEST_TMPDIR/other"
	for prog in slurmctld slurmd srun sbatch; do
		printf '#!/bin/sh\necho other\n' >"$BATS_TEST_TMPDIR/other/$prog"
		chmod 755 "$BATS_TEST_TMPDIR/other/$prog"
	done
	mkdir "$BATS_TEST_TMPDIR/build"
	cd "$BATS_TEST_TMPDIR/build"
	PATH=$BATS_TEST_TMPDIR/other:$PATH run "$LLMP_SRCDIR/configure" --with-slurm="$prefix" \
		--disable-runtime --without-cuda --without-nccl
	[ "$status" -eq 0 ] || { echo "$output" | tail -20; false; }
	[ "$(sed -n 's/^SLURMCTLD = //p' Makefile)" = "$prefix/sbin/slurmctld" ]
	[ "$(sed -n 's/^SBATCH = //p' Makefile)" = "$prefix/bin/sbatch" ]
	[ "$(sed -n 's/^LLMP_SLURM_BINDIRS = //p' Makefile)" = "$prefix/sbin:$prefix/bin" ]
	grep -q "local Slurm cluster tests *: yes .*daemons: $prefix/sbin/slurmctld" <<<"$output"
	# What a cluster test file sees after loading cluster/common, both by
	# hand (bats with LLMP_BUILDDIR) and from make check's environment.
	for how in by-hand make-check; do
		given=()
		[ "$how" = by-hand ] || given=(LLMP_SLURM_BINDIRS="$prefix/sbin:$prefix/bin")
		# shellcheck disable=SC2016 # expanded by the inner bash
		run env -u LLMP_SLURM_BINDIRS PATH="$BATS_TEST_TMPDIR/other:$PATH" "${given[@]}" \
			LLMP_SRCDIR="$LLMP_SRCDIR" LLMP_BUILDDIR="$PWD" BATS_TEST_DIRNAME="$LLMP_SRCDIR/tests" \
			bash -c '. "$LLMP_SRCDIR/tests/cluster/common.bash"
				for p in slurmctld slurmd srun sbatch; do "$p"; done'
		[ "$status" -eq 0 ] || { echo "$how: $output"; false; }
		[ "$output" = "$(printf '%s\n' sbin/slurmctld sbin/slurmd bin/srun bin/sbatch)" ] ||
			{ echo "$how: $output"; false; }
	done
	# Without daemons in DIR (headers only), the cluster tests say so rather
	# than start another release's.
	rm "$prefix/sbin/slurmctld"
	run "$LLMP_SRCDIR/configure" --with-slurm="$prefix" --disable-runtime --without-cuda --without-nccl
	[ "$status" -eq 0 ]
	grep -q "local Slurm cluster tests *: no   (no slurmctld in $prefix/sbin" <<<"$output"
}

@test "llmp --version names the Slurm release the build's plugin carries" {
	run "$LLMP_BUILDDIR/cli/llmp" --version
	[ "$status" -eq 0 ]
	if [ ! -f "$LLMP_BUILDDIR/plugin/.libs/llm_parallel.so" ]; then
		grep -qx 'SPANK plugin llm_parallel.so not built .*' <<<"$output"
		return
	fi
	version_line=$output
	run "$PLUGIN_VERSION" "$LLMP_BUILDDIR/plugin/.libs/llm_parallel.so"
	[ "$status" -eq 0 ]
	release=${output##* }
	grep -qx "SPANK plugin llm_parallel.so built for Slurm $release (.*rebuild llmp for every other)" <<<"$version_line"
}

@test "configure --with-slurm=DIR without DIR/include/slurm/spank.h names the path" {
	mkdir "$BATS_TEST_TMPDIR/build"
	cd "$BATS_TEST_TMPDIR/build"
	run "$LLMP_SRCDIR/configure" --with-slurm="$BATS_TEST_TMPDIR/no-slurm" --disable-runtime
	[ "$status" -ne 0 ]
	grep -q "error: --with-slurm=$BATS_TEST_TMPDIR/no-slurm: no $BATS_TEST_TMPDIR/no-slurm/include/slurm/spank.h" <<<"$output"
}

@test "the plugin compiles, links and carries the release's version for every Slurm from 21.08 to 26.05" {
	cc=$(build_var CC)
	cflags="$(build_var LLMP_CFLAGS) -O0 -fPIC -D_GNU_SOURCE"
	# the plugin's own files, as plugin/local.mk lists them
	sources=$(sed -n '/^plugin_llm_parallel_la_SOURCES =/,/^$/p' "$LLMP_SRCDIR/plugin/local.mk" |
		tr ' \\\t' '\n\n\n' | grep '^plugin/.*\.c$')
	[ "$(wc -w <<<"$sources")" -ge 5 ]
	libs="$LLMP_BUILDDIR/plugin/.libs/libplugin_core.a $LLMP_BUILDDIR/topology/discover/.libs/libdiscover.a"
	libs="$libs $LLMP_BUILDDIR/planner/.libs/libplanner.a $LLMP_BUILDDIR/topology/.libs/libtopology.a"
	libs="$libs $LLMP_BUILDDIR/common/.libs/libcommon.a"
	releases=0
	for dir in "$HEADERS"/*/; do
		release=$(basename "$dir")
		out=$BATS_TEST_TMPDIR/$release
		mkdir "$out"
		for src in $sources; do
			# shellcheck disable=SC2086 # flags are words
			"$cc" $cflags -I"$LLMP_BUILDDIR" -I"$LLMP_SRCDIR" -I"$LLMP_SRCDIR/include" \
				-isystem "$dir" -c "$LLMP_SRCDIR/$src" -o "$out/$(basename "$src" .c).o" ||
				{ echo "Slurm $release: $src does not compile" >&2; false; }
		done
		# shellcheck disable=SC2086
		"$cc" -shared -o "$out/llm_parallel.so" "$out"/*.o $libs -ldl \
			-Wl,--version-script="$LLMP_SRCDIR/plugin/llm_parallel.map"
		run "$PLUGIN_VERSION" "$out/llm_parallel.so"
		[ "$status" -eq 0 ]
		[ "$output" = "spank $(version_number "$release") $release" ] ||
			{ echo "Slurm $release: the plugin says '$output'" >&2; false; }
		releases=$((releases + 1))
	done
	[ "$releases" -eq 9 ]
}

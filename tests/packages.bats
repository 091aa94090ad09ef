#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# The .deb packages of `make deb`, installed on this machine, serving the
# local Slurm cluster: the plugin and its plugstack snippet, the llmp tool,
# libllmp through llmp.pc and the Python package, each from its installed
# path, none from the build tree. Run by scripts/test.sh's packages stage
# after `make deb` (packaging/README.md), with LLMP_DEB_DIR naming the
# folder of the .deb files (default: $LLMP_BUILDDIR/packages/deb). Needs
# root; the packages are purged again at the end.

load cluster/common

: "${LLMP_DEB_DIR:=$LLMP_BUILDDIR/packages/deb}"
# Not the dbgsym packages: nothing here needs them.
DEB_PACKAGES="llmp-slurm-plugin llmp libllmp0 libllmp-topology0 libllmp-dev python3-llmp"
SNIPPET=/usr/share/llmp/plugstack.conf.d/llm_parallel.conf

# The Slurm of this machine: Debian's libslurm-dev, whose headers the
# packages were built with. 22.05.8-4+deb12u3 -> 22.05.8
slurm_version() {
	dpkg-query -W -f '${Version}' libslurm-dev | sed 's/-.*//; s/^[0-9]*://'
}

deb_file() { # PACKAGE
	local f
	f=$(ls "$LLMP_DEB_DIR/$1"_*.deb 2>/dev/null | head -n1)
	[ -n "$f" ] || { echo "no $1 package in $LLMP_DEB_DIR (make deb)" >&2; return 1; }
	echo "$f"
}

purge_packages() {
	# shellcheck disable=SC2086 # one word per package
	dpkg --purge $DEB_PACKAGES >/dev/null 2>&1 || true
}

setup_file() {
	CLUSTER_SKIP=
	if [ "$(id -u)" -ne 0 ]; then
		CLUSTER_SKIP="the local Slurm cluster needs root"
		export CLUSTER_SKIP
		return 0
	fi
	export CLUSTER_SKIP
	take_cluster_suite_lock "$CLUSTER_SUITE_WAIT_S" packages.bats || return 1
	local files=() p
	for p in $DEB_PACKAGES; do
		files+=("$(deb_file "$p")") || return 1
	done
	# apt-get waits for dpkg's lock (another apt-get on the machine) where dpkg -i would fail
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o DPkg::Lock::Timeout=600 "${files[@]}" >"$BATS_FILE_TMPDIR/apt.log" 2>&1; then
		cat "$BATS_FILE_TMPDIR/apt.log" >&3
		return 1
	fi
	CLUSTER_STATE=$(mktemp -d /tmp/llmp-cluster-test.XXXXXX)
	export CLUSTER_STATE
	chmod 755 "$CLUSTER_STATE"
	# the packaged snippet as it was installed: it names the installed plugin
	if ! "$CLUSTER" start "$CLUSTER_STATE" "$SNIPPET" >&3 2>&1; then
		"$CLUSTER" stop "$CLUSTER_STATE" >/dev/null 2>&1 || true
		return 1
	fi
}

teardown_file() {
	if [ -n "${CLUSTER_STATE:-}" ]; then
		"$CLUSTER" stop "$CLUSTER_STATE" >&3 2>&1 || true
		rm -rf "$CLUSTER_STATE"
	fi
	[ "$(id -u)" -ne 0 ] || purge_packages
	if [ -n "${CLUSTER_LOCK_FD:-}" ]; then
		exec {CLUSTER_LOCK_FD}>&-
	fi
}

setup() {
	[ -z "$CLUSTER_SKIP" ] || skip "$CLUSTER_SKIP"
	# shellcheck disable=SC1091
	. "$CLUSTER_STATE/env"
	WORK=$(mktemp -d "$CLUSTER_STATE/test.XXXXXX")
	chmod 755 "$WORK"
	# nothing of the source or build tree on the paths a job searches
	unset PYTHONPATH LD_LIBRARY_PATH
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
}

teardown() { cluster_teardown; }

@test "packages: version and dependency pinned to this Slurm release; snippet and epilog installed, not enabled" {
	release=$(slurm_version | cut -d. -f1-2)
	end=$(awk -F. '{ printf "%s.%02d", $1, $2 + 1 }' <<<"$release")
	for p in $DEB_PACKAGES; do
		[ "$(dpkg-query -W -f '${Version}' "$p")" = "0.1.0+slurm$release-1" ] ||
			{ echo "$p: version $(dpkg-query -W -f '${Version}' "$p")" >&2; false; }
	done
	depends=$(dpkg-query -W -f '${Depends}' llmp-slurm-plugin)
	grep -q "slurm-wlm-basic-plugins (>= $release), slurm-wlm-basic-plugins (<< $end~)" <<<"$depends"
	# apt would refuse another Slurm release while the plugin is installed
	dpkg --compare-versions "$(dpkg-query -W -f '${Version}' slurm-wlm-basic-plugins)" lt "$end~"
	# the snippet names the installed plugin, and the package enables nothing
	[ "$(grep -v '^#' "$SNIPPET")" = "required /usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/llmp/llm_parallel.so" ]
	! dpkg -L llmp-slurm-plugin | grep -q '^/etc/'
	# the Epilog its header and llm_parallel(8) name, where they name it
	[ -x /usr/share/llmp/llmp-epilog.sh ] && dpkg -S /usr/share/llmp/llmp-epilog.sh | grep -q '^llmp-slurm-plugin:'
	man -w llm_parallel >/dev/null
	man -w llmp >/dev/null
}

@test "the installed plugin and tool say which Slurm they are for; slurmd logged it" {
	version=$(slurm_version)
	run /usr/bin/llmp --version
	[ "$status" -eq 0 ]
	grep -qx "SPANK plugin llm_parallel.so built for Slurm $version .*" <<<"$output"
	grep -q "llm_parallel: llmp 0.1.0 built for Slurm $version (rebuild it for every other Slurm release)" \
		"$CLUSTER_STATE/log/slurmd-node1.log"
}

@test "srun with the installed plugin: every task's layout" {
	run srun -N2 --ntasks-per-node=2 --llm-parallel=tp=2 "$TASK_ENV"
	[ "$status" -eq 0 ]
	check_tasks tp=2 4
}

@test "sbatch with the installed plugin, tool and Python package" {
	cat >"$WORK/job.sh" <<'JOB'
#!/bin/sh
srun sh -c 'echo "task $SLURM_PROCID $(command -v llmp) $(python3 -c "import llmp; print(llmp.__file__, llmp.layout().coords()[\"tp\"])")"'
llmp plan --world 4 --parallel tp=2 --rank 3
JOB
	run sbatch --wait -N2 --ntasks-per-node=2 --llm-parallel=tp=2 -o "$WORK/out" "$WORK/job.sh"
	[ "$status" -eq 0 ] || { cat "$WORK/out" >&2; false; }
	# rank r: tp coordinate r % 2 (tp varies fastest)
	for r in 0 1 2 3; do
		grep -qx "task $r /usr/bin/llmp /usr/lib/python3/dist-packages/llmp/__init__.py $((r % 2))" "$WORK/out" ||
			{ cat "$WORK/out" >&2; false; }
	done
	# rank 3 of tp=2 over 4: tp coordinate 1, data-parallel coordinate 1
	grep -qx 'coords: *tp=1 cp=0 ep=0 dp=1 pp=0 .*' "$WORK/out"
}

@test "libllmp-dev: a program built with pkg-config llmp runs under srun --mpi=pmix" {
	cat >"$WORK/sum.c" <<'C'
#include <stdint.h>
#include <stdio.h>
#include <llmp/llmp.h>
int main(void)
{
	llmp_ctx *ctx;
	llmp_comm *world;
	int32_t mine, sum = 0;
	llmp_status rc = llmp_init(NULL, &ctx);
	if (rc != LLMP_OK) {
		fprintf(stderr, "llmp_init: %s\n", llmp_strerror(rc));
		return 1;
	}
	mine = (int32_t)llmp_rank(ctx) + 1;
	if (llmp_comm_world(ctx, &world) != LLMP_OK ||
	    llmp_allreduce(world, &mine, &sum, 1, LLMP_INT32, LLMP_SUM) != LLMP_OK)
		return 1;
	printf("rank %u of %u: sum %d\n", llmp_rank(ctx), llmp_world_size(ctx), (int)sum);
	return llmp_finalize(ctx) == LLMP_OK ? 0 : 1;
}
C
	# shellcheck disable=SC2046 # pkg-config's words
	cc -o "$WORK/sum" "$WORK/sum.c" $(pkg-config --cflags --libs llmp)
	# the installed library (/lib is /usr/lib on Debian 12, and ld.so.cache may say either)
	ldd "$WORK/sum" | grep -Eq "libllmp\.so\.0 => (/usr)?/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libllmp\.so\.0 " ||
		{ ldd "$WORK/sum" >&2; false; }
	run srun --mpi=pmix -N2 --ntasks-per-node=2 --llm-parallel=tp=2 "$WORK/sum"
	[ "$status" -eq 0 ]
	# 1 + 2 + 3 + 4
	for r in 0 1 2 3; do
		grep -qx "rank $r of 4: sum 10" <<<"$output"
	done
}

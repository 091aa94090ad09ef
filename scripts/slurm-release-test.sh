#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The cluster suites against another Slurm release, run in a root file system
# of the Debian release that carries it (scripts/slurm-rootfs.sh):
#
#   scripts/slurm-release-test.sh RELEASE            the smoke set (below)
#   scripts/slurm-release-test.sh RELEASE --full     every cluster suite
#   scripts/slurm-release-test.sh RELEASE FILE.bats [bats -f FILTER]
#   scripts/slurm-release-test.sh RELEASE --build    only the root file system and the build
#
# scripts/test.sh --slurm RELEASE runs the first. RELEASE is 24.11 (Debian 13)
# or 26.05 (sid). The tree is built once and reused; llmp is built inside it
# against that release's libslurm-dev (out of tree, in the root file system's
# /var/tmp/llmp-build, kept between runs), and tests/cluster/cluster.sh
# starts the 3-node cluster from that release's slurmctld, slurmd and munged.
# The source tree is bind-mounted read-only; the machine's /run is shared, so
# the lock that lets one local cluster run at a time (tests/cluster/session.bash)
# is the same for clusters of every release. Mounts live in a mount namespace
# of their own and go with it.
#
# The smoke set: cluster.bats' core (srun, sbatch, salloc, refusals, the
# example job), one preemption and the completion requeue (preempt.bats), one
# crash requeue (ft.bats), the arbitrary layouts (slurm_layouts.bats).
# Output: bats' TAP, then "slurm-release-test: RELEASE (VERSION): N passed, N
# failed, N skipped in M min" and the exit status 1 if anything failed.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

# bats -f filters of the smoke set, per file.
declare -A smoke=(
	[cluster.bats]='^srun: tp=2,pp=2 on one node|^srun: tp=2,pp=3 over three nodes|^sbatch: the option reaches srun steps|^salloc: the option reaches srun|^bad specs are refused|^srun refuses a layout that does not divide|^the example job runs|^a job without the option is untouched'
	[preempt.bats]='^preemption: GraceTime=20|^a job requeued after it completed'
	[ft.bats]='^crash loop: a rank crashes every run|^crash requeue: a step whose slurmstepd lingers'
	[slurm_layouts.bats]='^-m arbitrary -w with --mpi=pmix|^-m arbitrary inside an allocation|never starts'
)
cluster_files=(cluster.bats slurm_layouts.bats slurm_export.bats slurm_tmpfs.bats security.bats
	runtime.bats metrics.bats ckpt.bats ft.bats preempt.bats)

die() {
	echo "slurm-release-test: $*" >&2
	exit 1
}

[ $# -ge 1 ] || die "usage: slurm-release-test.sh RELEASE [--full | FILE.bats [FILTER]]"
release=$1
shift
[ "$(id -u)" -eq 0 ] || die "must run as root (a chroot, and the cluster's namespaces)"

# --inside: run in the chroot by the outer half below.
if [ "$release" = --inside ]; then
	release=$1
	shift
	cd /llmp/src
	build=/var/tmp/llmp-build
	mkdir -p "$build"
	SECONDS=0
	# The source tree is read-only here: configure runs from a copy of it when
	# it has no configure script of its own (autoreconf writes into the tree).
	if [ ! -x /llmp/src/configure ]; then
		die "run autoreconf -fi in the source tree first (scripts/build.sh does)"
	fi
	# The build is kept for the next run, which may be of another checkout
	# (a clone for CI, the working tree): configured afresh, in an empty
	# folder, whenever configure or a Makefile.in of the tree differ from
	# those it was configured from.
	stamp=$(cd /llmp/src && find . -name Makefile.in -not -path './build*' | sort | xargs cat configure | md5sum)
	if [ ! -f "$build/Makefile" ] || [ "$(cat "$build/.llmp-configured" 2>/dev/null)" != "$stamp" ]; then
		rm -rf "$build"
		mkdir -p "$build"
		cd "$build"
		/llmp/src/configure --without-cuda --without-nccl >configure.log 2>&1 ||
			{ tail -30 configure.log; die "configure failed ($build/configure.log)"; }
		echo "$stamp" >.llmp-configured
	fi
	cd "$build"
	# Beyond the smoke set, the suites run the test programs and libraries of
	# `make check` (rt_check, ck_check, the NVML double): built, not run. The
	# smoke set needs none of them, and CI's time is kept for the rest.
	targets=(all)
	[ "${1:-smoke}" = smoke ] || targets=(check TESTS=)
	make -j"$(nproc)" "${targets[@]}" >make.log 2>&1 || { tail -30 make.log; die "build failed ($build/make.log)"; }
	version=$(sed -n 's/^#define LLMP_SLURM_VERSION "\(.*\)"/\1/p' config.h)
	echo "slurm-release-test: llmp built against Slurm $version in ${SECONDS} s"
	[ "${1:-}" != --build ] || exit 0
	export LLMP_SRCDIR=/llmp/src LLMP_BUILDDIR=$build
	# The whole suites need more than the smoke set: strace (ckpt.bats),
	# chromium (the report's page, metrics.bats), and PyTorch (torch and
	# numpy at the versions python/requirements-test.txt pins, from PyPI, in
	# a venv kept in the root file system: its Python is not this machine's).
	# Installed once, when first missing; the root file system's stamp, and
	# so the smoke set's, is left as it was.
	if [ "${1:-}" = --full ]; then
		extra=()
		for p in python3-venv strace chromium; do dpkg -s "$p" >/dev/null 2>&1 || extra+=("$p"); done
		if [ "${#extra[@]}" -gt 0 ]; then
			echo "slurm-release-test: installing ${extra[*]} (once) ..."
			{ apt-get update -qq && apt-get install -y -qq "${extra[@]}"; } >/var/tmp/llmp-extra.log 2>&1 ||
				echo "slurm-release-test: could not install ${extra[*]} (see /var/tmp/llmp-extra.log in the root file system)"
		fi
		venv=/var/tmp/llmp-venv
		if ! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
			echo "slurm-release-test: PyTorch into $venv (once) ..."
			{ python3 -m venv "$venv" &&
				"$venv/bin/python" -m pip install -q --disable-pip-version-check \
					$(grep -E '^(torch|numpy)==' /llmp/src/python/requirements-test.txt); } \
				>/var/tmp/llmp-venv.log 2>&1 ||
				echo "slurm-release-test: no PyTorch in $venv (see /var/tmp/llmp-venv.log in the root file system)"
		fi
		export LLMP_PYTHON=$venv/bin/python
	fi
	# The daemons' logs of each file, kept in the root file system's
	# /var/tmp/llmp-logs (ROOTFS/var/tmp/llmp-logs outside it).
	export LLMP_TEST_KEEP_LOGS=/var/tmp/llmp-logs
	rm -rf "$LLMP_TEST_KEEP_LOGS"
	cd /llmp/src
	total_pass=0 total_fail=0 total_skip=0 rc=0
	# One lock for the whole set (tests/cluster/session.bash), not one per
	# file: the files run back to back on the same release.
	exec {lock_fd}>/run/llmp-cluster-suite.lock
	if ! flock -n "$lock_fd"; then
		echo "slurm-release-test: waiting for /run/llmp-cluster-suite.lock (another local cluster runs)"
		flock -w 7200 "$lock_fd" || die "no cluster lock after 2 hours"
	fi
	export LLMP_CLUSTER_SUITE_LOCK_HELD=yes
	SECONDS=0
	run_file() { # FILE [FILTER]
		local out
		out=$(mktemp)
		if [ -n "${2:-}" ]; then
			bats -f "$2" "tests/$1" | tee "$out" || rc=1
		else
			bats "tests/$1" | tee "$out" || rc=1
		fi
		local ok skip fail
		ok=$(grep -Ec '^ok [0-9]+ ' "$out" || true)
		skip=$(grep -Ec '^ok [0-9]+ .*# skip' "$out" || true)
		fail=$(grep -Ec '^not ok ' "$out" || true)
		total_pass=$((total_pass + ok - skip)) total_skip=$((total_skip + skip)) total_fail=$((total_fail + fail))
		rm -f "$out"
	}
	case ${1:-smoke} in
	smoke) for f in cluster.bats preempt.bats ft.bats slurm_layouts.bats; do run_file "$f" "${smoke[$f]}"; done ;;
	--full) for f in "${cluster_files[@]}"; do run_file "$f"; done ;;
	*) run_file "$1" "${2:-}" ;;
	esac
	echo "slurm-release-test: $release ($version): $total_pass passed, $total_fail failed," \
		"$total_skip skipped in $((SECONDS / 60)) min $((SECONDS % 60)) s"
	[ "$rc" -eq 0 ] && [ "$total_fail" -eq 0 ]
	exit
fi

root=$("$src/scripts/slurm-rootfs.sh" "$release")
[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi >/dev/null)
mkdir -p "$root/llmp/src"
# A mount namespace of our own: the binds below vanish with it, whatever happens.
# It is made on the first CPU this process may use, and the nodes' slurmd run
# pinned there under job_container/tmpfs (tests/cluster/cluster.sh): Linux 6.18
# numbers namespaces from per-CPU batches, so a namespace made on one CPU can
# get a lower id than an older one made on another, and the kernel then refuses
# slurmstepd's bind of a job's new mount namespace into slurmd's (EINVAL, taken
# for a loop: fs/namespace.c mnt_ns_loop). Made on one CPU, ids only grow.
# On the host slurmd runs in the initial namespace, whose id is the lowest.
cpus=$(taskset -p -c $$ | sed 's/.*: //')
exec taskset -c "${cpus%%[-,]*}" unshare --mount --propagation private -- bash -euc '
	root=$1 src=$2 cpus=$3
	shift 3
	taskset -a -p -c "$cpus" $$ >/dev/null # every CPU again for what runs inside
	# The root a mount point of its own: ip netns exec and ip -n make "/" a
	# slave mount, which fails on a directory that is not one.
	mount --bind "$root" "$root"
	mount --bind "$src" "$root/llmp/src"
	mount -o remount,bind,ro "$root/llmp/src"
	mount -t proc proc "$root/proc"
	mount --rbind /sys "$root/sys"
	mount --rbind /dev "$root/dev"
	mount --rbind /run "$root/run"
	mount -t tmpfs tmpfs "$root/tmp"
	# The host names of the machine: the name of the host srun runs on must
	# resolve inside too, or every reply of slurmctld to srun waits out DNS
	# retries (about 10 s with no network) and the completion of a job can
	# outlast the test that ran it.
	mount --bind /etc/hosts "$root/etc/hosts"
	# And its trust store, for pip (--full): a proxy this machine trusts is
	# then trusted inside too.
	ca=/etc/ssl/certs/ca-certificates.crt
	if [ -f "$ca" ] && [ -f "$root$ca" ]; then mount --bind "$ca" "$root$ca"; fi
	exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		TERM=dumb bash /llmp/src/scripts/slurm-release-test.sh --inside "$@"
' bash "$root" "$src" "$cpus" "$release" "$@"

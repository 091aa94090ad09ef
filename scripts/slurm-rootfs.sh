#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A root file system holding another Slurm release, from Debian's archive, for
# running the cluster tests against it (scripts/test.sh --slurm RELEASE):
#
#   scripts/slurm-rootfs.sh RELEASE      build it unless it is there; prints its path
#   scripts/slurm-rootfs.sh --list       the releases known here and their suites
#
#   24.11  Debian 13 "trixie" (Slurm 24.11.x)
#   26.05  Debian "sid"       (Slurm 26.05.x)
#
# The tree is built once with mmdebstrap (debootstrap's successor; nothing is
# downloaded from outside deb.debian.org) and reused while its stamp file
# names the same package list. It holds Slurm's daemons and clients,
# libslurm-dev (the SPANK headers the plugin is built against), munge, PMIx,
# UCX, HDF5 and what llmp's build and tests need. LLMP_ROOTFS_DIR (default
# /var/tmp) is where the trees go: /var/tmp/llmp-rootfs-SUITE.
set -euo pipefail

declare -A suite_of=([24.11]=trixie [26.05]=sid)
mirror=${LLMP_ROOTFS_MIRROR:-http://deb.debian.org/debian}
packages=(
	build-essential autoconf automake libtool pkg-config ca-certificates
	libcmocka-dev bats python3 python3-h5py hdf5-tools
	slurmctld slurmd slurm-client libslurm-dev munge
	libpmix-dev libucx-dev libhdf5-dev libhwloc-dev
	iproute2 procps util-linux
)

die() {
	echo "slurm-rootfs.sh: $*" >&2
	exit 1
}

case ${1:-} in
--list)
	for r in "${!suite_of[@]}"; do echo "$r ${suite_of[$r]}"; done | sort
	exit 0
	;;
"" | -h | --help)
	awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"
	exit 2
	;;
esac
release=$1
suite=${suite_of[$release]:-}
[ -n "$suite" ] || die "no Debian suite known for Slurm $release (scripts/slurm-rootfs.sh --list)"
[ "$(id -u)" -eq 0 ] || die "must run as root (mmdebstrap --mode=root, then chroot)"
command -v mmdebstrap >/dev/null || die "mmdebstrap not found (apt-get install mmdebstrap)"

root=${LLMP_ROOTFS_DIR:-/var/tmp}/llmp-rootfs-$suite
stamp="$suite ${packages[*]}"
if [ -f "$root/.llmp-rootfs" ] && [ "$(cat "$root/.llmp-rootfs")" = "$stamp" ]; then
	echo "$root"
	exit 0
fi
rm -rf "$root" "$root.part"
SECONDS=0
echo "slurm-rootfs.sh: building $root (Debian $suite from $mirror) ..." >&2
# sid's Release file is valid for a week only: a mirror that lags, or a
# machine whose clock does, would refuse it. The archive's signatures are
# still checked.
mmdebstrap --mode=root --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' --include="$(
	IFS=,
	echo "${packages[*]}"
)" "$suite" "$root.part" "$mirror" >&2
echo "$stamp" >"$root.part/.llmp-rootfs"
mv "$root.part" "$root"
echo "slurm-rootfs.sh: $root built in ${SECONDS} s ($(du -sh "$root" | cut -f1))" >&2
echo "$root"

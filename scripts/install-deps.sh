#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install, from Debian's archive, everything llmp needs to build, test and run its
# local Slurm cluster. Idempotent: safe to run again; apt-get skips what is present.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: must run as root (it calls apt-get)" >&2
	exit 1
fi

packages=(
	# build
	build-essential autoconf automake libtool pkg-config
	# test framework and tools
	libcmocka-dev bats valgrind clang libclang-rt-dev clang-format python3
	# which files a checkpoint load opens, rank by rank (tests/ckpt.bats)
	strace
	# the virtual environment of the Python package's tests (scripts/python-env.sh)
	python3-venv
	# Open MPI's mpirun: a second PMIx launcher the example's tests start ranks with
	openmpi-bin
	# Slurm 22.05 with the SPANK header, munge for its authentication
	slurmctld slurmd slurm-client libslurm-dev munge
	# communication, checkpoint and topology libraries of the runtime
	libpmix-dev libucx-dev libhdf5-dev libhwloc-dev
	# reading checkpoints without llmp, as the tests do: h5py, h5dump
	python3-h5py hdf5-tools
	# a real browser for llmp report's page (tests/metrics.bats: headless, as root with --no-sandbox)
	chromium
	# the local cluster's network namespaces
	iproute2 procps util-linux
	# root file systems of other Debian releases, for their Slurm (scripts/slurm-rootfs.sh)
	mmdebstrap
	# the cluster's distributed volume (tests/distfs.bats): a brick and a FUSE client per node
	glusterfs-server glusterfs-client
	# make deb, make rpm and their checks (packaging/README.md)
	debhelper lintian rpm rpmlint
)

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"

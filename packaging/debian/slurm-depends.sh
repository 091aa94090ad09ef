#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The dependency that pins the plugin package to the Slurm release it was
# built for: RELEASE (22.05) up to, not including, END (22.06), on the
# package every Slurm node has from the same source as the headers used:
#   Debian's libslurm-dev -> slurm-wlm-basic-plugins (slurmd and slurm-client need it)
#   SchedMD's slurm-smd-dev -> slurm-smd
# Headers that no Debian package owns (a Slurm in /opt) give no dependency:
# then the version's +slurmRELEASE suffix is the only record, and a warning says so.
#   slurm-depends.sh RELEASE END [HEADER]
set -eu
release=$1 end=$2 header=${3:-/usr/include/slurm/spank.h}
owner=$(dpkg-query -S "$header" 2>/dev/null | cut -d: -f1) || owner=
case $owner in
libslurm-dev) node_package=slurm-wlm-basic-plugins ;;
slurm-smd-dev) node_package=slurm-smd ;;
*)
	echo "slurm-depends.sh: warning: $header belongs to no known Slurm package (${owner:-none}):" \
		"the plugin package will not depend on Slurm $release" >&2
	exit 0
	;;
esac
echo "$node_package (>= $release), $node_package (<< $end~)"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copy a Slurm release's SPANK headers into tests/slurm/headers/X.Y.Z/slurm/
# from a git clone of SchedMD/slurm (README.md here says what and why):
#   tests/slurm/add-release.sh SLURM_GIT_DIR slurm-26-05-3-1
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 SLURM_GIT_DIR TAG (e.g. slurm-26-05-3-1)" >&2
	exit 2
fi
git_dir=$1 tag=$2
if ! [[ $tag =~ ^slurm-([0-9]+)-([0-9]+)-([0-9]+)-[0-9]+$ ]]; then
	echo "add-release: $tag is not a release tag such as slurm-26-05-3-1" >&2
	exit 2
fi
major=$((10#${BASH_REMATCH[1]})) minor=$((10#${BASH_REMATCH[2]})) micro=$((10#${BASH_REMATCH[3]}))
version=$(printf '%d.%02d.%d' "$major" "$minor" "$micro")
number=$(printf '0x%02x%02x%02x' "$major" "$minor" "$micro")
out=$(cd "$(dirname "$0")" && pwd)/headers/$version/slurm
mkdir -p "$out"
for f in spank.h slurm_errno.h slurm.h; do
	git -C "$git_dir" show "$tag:slurm/$f" >"$out/$f"
done
# as Slurm's configure makes it from the template
git -C "$git_dir" show "$tag:slurm/slurm_version.h.in" |
	sed "s/^#undef SLURM_VERSION_NUMBER\$/#define SLURM_VERSION_NUMBER $number/" >"$out/slurm_version.h"
grep -q "^#define SLURM_VERSION_NUMBER $number\$" "$out/slurm_version.h" || {
	echo "add-release: $tag's slurm_version.h.in has no '#undef SLURM_VERSION_NUMBER' line" >&2
	exit 1
}
echo "add-release: $tag -> $out ($number)"

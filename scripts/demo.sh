#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job for a new user, on a fresh Debian 12 machine, as root:
# install the packages, build llmp, start a local three-node Slurm cluster
# (network namespaces, fake GPUs) with the freshly built plugin, and run
# scripts/demo/story.sh on it: a training job with a spare node,
#   LLMP_SPARES=1 sbatch -N3 --no-kill --llm-parallel=tp=2,dp=auto \
#          --llm-checkpoint=DIR,every=5 etc/examples/mlp-train.sbatch
# loses a node mid-run; `llmp job run` takes it out and relaunches on the
# spare within seconds, in the same job, from the newest checkpoint; the
# report times each phase of the recovery, and the job must end with the
# losses and checksum of an uninterrupted run, bit for bit; the demo exits 1
# if it does not. `scripts/demo.sh --requeue` tells the older story: no
# spare, Slurm requeues the job after SlurmdTimeout and it resumes.
# Outputs and checkpoints stay in build/demo/.
#
# Only one local cluster can run on a machine: the demo holds the lock of
# tests/cluster/session.bash while its cluster runs, so it waits for a test
# suite's cluster to go. The cluster is stopped at the end, whatever happens.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
build=$src/build

story=()
case ${1:-} in
"") ;;
--requeue) story=(--requeue) ;;
*)
	echo "usage: scripts/demo.sh [--requeue]" >&2
	exit 2
	;;
esac
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: run as root: it installs packages and starts Slurm daemons" >&2
	exit 1
fi
SECONDS=0
scripts/install-deps.sh >/dev/null
echo "demo: building llmp in build/"
LLMP_BUILD_DIR=$build scripts/build.sh >/dev/null
built=$SECONDS

# shellcheck disable=SC1091
. tests/cluster/session.bash
echo "demo: starting a local Slurm cluster (3 nodes, 4 fake GPUs each)"
start_script_cluster "$src" "$build" demo
sinfo
echo

LLMP_BUILD_DIR=$build scripts/demo/story.sh "${story[@]}" "$build/demo"
waited=$CLUSTER_LOCK_WAITED_S note=""
[ "$waited" -eq 0 ] || note=", and $waited s waiting for another cluster"
echo "demo: passed in $((SECONDS - waited)) s: packages and build $built s," \
	"cluster and story $((SECONDS - waited - built)) s$note"
echo "demo: the outputs and checkpoints are in build/demo/"

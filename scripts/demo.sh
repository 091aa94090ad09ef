#!/usr/bin/env bash
# The main job for a new user, on a fresh Debian 12 machine, as root:
# install the packages, build llmp, start a local three-node Slurm cluster
# (network namespaces, fake GPUs) with the freshly built plugin, and run the
# example job etc/examples/llm-parallel-demo.sbatch with
#   sbatch --llm-parallel=tp=2,pp=3
# The cluster is stopped again at the end, whatever happens.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: run as root: it installs packages and starts Slurm daemons" >&2
	exit 1
fi
scripts/install-deps.sh >/dev/null
echo "demo: building llmp in build/"
LLMP_BUILD_DIR=$src/build scripts/build.sh >/dev/null

state=$(mktemp -d /tmp/llmp-demo.XXXXXX)
chmod 755 "$state"
trap 'tests/cluster/cluster.sh stop "$state" >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
echo "required $src/build/plugin/.libs/llm_parallel.so" >"$state/plugstack.conf"
echo "demo: starting a local Slurm cluster (3 nodes, 4 fake GPUs each)"
tests/cluster/cluster.sh start "$state" "$state/plugstack.conf" >/dev/null
# shellcheck disable=SC1091
. "$state/env"
sinfo

echo
echo "\$ sbatch --wait --llm-parallel=tp=2,pp=3 etc/examples/llm-parallel-demo.sbatch"
export LLMP_EXAMPLES=$src/etc/examples
sbatch --wait -o "$state/demo.out" --llm-parallel=tp=2,pp=3 etc/examples/llm-parallel-demo.sbatch >/dev/null
cat "$state/demo.out"

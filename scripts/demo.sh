#!/usr/bin/env bash
# The main job for a new user: install, build, and plan an example layout.
# (The SPANK plugin and its local-cluster job replace this in a later change.)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
if [ "$(id -u)" -eq 0 ]; then
	scripts/install-deps.sh
fi
LLMP_BUILD_DIR=$src/build scripts/build.sh >/dev/null
echo "\$ llmp plan --nodes 2 --tasks-per-node 8 --parallel tp=4,pp=2,cp=2"
build/cli/llmp plan --nodes 2 --tasks-per-node 8 --parallel tp=4,pp=2,cp=2

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Create (or reuse) the virtual environment the tests of the Python package
# run in: python/requirements-test.txt (PyTorch from PyPI, pytest), then
# python/requirements-deepspeed.txt (built against that torch), in VENV, by
# default $LLMP_BUILD_DIR/venv or build/venv. Idempotent: a venv whose
# recorded requirements equal the files' is kept as it is. Prints the path
# of its python on the last line.
#   scripts/python-env.sh [VENV]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${LLMP_BUILD_DIR:-$src/build}/venv}
reqs=$src/python/requirements-test.txt
ds_reqs=$src/python/requirements-deepspeed.txt
stamp=$venv/.llmp-requirements
python=${PYTHON3:-python3}

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cat "$reqs" "$ds_reqs" | cmp -s - "$stamp" &&
	"$venv/bin/python" -c 'import torch, pytest, deepspeed' 2>/dev/null; then
	echo "python-env: reusing $venv" >&2
	echo "$venv/bin/python"
	exit 0
fi

command -v "$python" >/dev/null || {
	echo "python-env: $python not found (install python3 and python3-venv)" >&2
	exit 1
}
start=$SECONDS
rm -f "$stamp"
"$python" -m venv "$venv" || {
	echo "python-env: '$python -m venv $venv' failed (Debian: apt-get install python3-venv)" >&2
	exit 1
}
# The wheels are large (torch brings CUDA libraries); pip's cache keeps them
# for the next fresh build tree on this machine.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$reqs" || {
	echo "python-env: installing $reqs into $venv failed" >&2
	exit 1
}
"$venv/bin/python" -c 'import torch, torch.distributed as d; assert d.is_gloo_available(), "torch has no gloo"' || {
	echo "python-env: torch in $venv cannot be imported or has no gloo" >&2
	exit 1
}
# DeepSpeed's setup.py imports torch: built with the torch just installed, not in an isolated
# environment of its own (which would download torch a second time).
DS_BUILD_OPS=0 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
	--no-build-isolation -r "$ds_reqs" || {
	echo "python-env: installing $ds_reqs into $venv failed" >&2
	exit 1
}
cat "$reqs" "$ds_reqs" >"$stamp"
echo "python-env: $venv ready in $((SECONDS - start)) s" >&2
echo "$venv/bin/python"

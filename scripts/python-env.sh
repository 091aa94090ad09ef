#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Create (or reuse) the virtual environment the tests of the Python package
# run in: python/requirements-test.txt (PyTorch from PyPI, pytest) in VENV,
# by default $LLMP_BUILD_DIR/venv or build/venv. Idempotent: a venv whose
# recorded requirements equal the file's is kept as it is. Prints the path
# of its python on the last line.
#   scripts/python-env.sh [VENV]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${LLMP_BUILD_DIR:-$src/build}/venv}
reqs=$src/python/requirements-test.txt
stamp=$venv/.llmp-requirements
python=${PYTHON3:-python3}

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$reqs" "$stamp" &&
	"$venv/bin/python" -c 'import torch, pytest' 2>/dev/null; then
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
cp "$reqs" "$stamp"
echo "python-env: $venv ready in $((SECONDS - start)) s" >&2
echo "$venv/bin/python"

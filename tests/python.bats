#!/usr/bin/env bats
# SPDX-License-Identifier: BSD-3-Clause
# python.bats - the Python package llmp (python/): its pytest suites, run with
# the Python of the virtual environment scripts/python-env.sh makes (PyTorch
# from PyPI, CPU and gloo), and `pip install python/` giving a working package.
#
# The Python is $LLMP_PYTHON, else $LLMP_BUILDDIR/venv/bin/python. Without
# one the tests skip, naming the script; scripts/test.sh runs that script
# first and counts such a skip as a failure.

load lib/helpers

setup() {
	llmp_setup
	PY=${LLMP_PYTHON:-$LLMP_BUILDDIR/venv/bin/python}
	[ -x "$PY" ] || skip "no Python environment with torch at $PY: run scripts/python-env.sh (or set LLMP_PYTHON)"
	# The source tree is read-only under make distcheck: no caches in it.
	export PYTHONDONTWRITEBYTECODE=1
	export LLMP_BUILDDIR PYTHONPATH="$LLMP_SRCDIR/python${PYTHONPATH:+:$PYTHONPATH}"
}

pytest() {
	run "$PY" -m pytest -p no:cacheprovider -q -rs --basetemp="$BATS_TEST_TMPDIR/pytest" \
		--rootdir="$LLMP_SRCDIR/python" "$@"
	echo "$output"
	[ "$status" -eq 0 ] || fail "pytest $* failed"
	# A skip inside pytest would pass here unseen: there must be none.
	! grep -q -E '^SKIPPED|[0-9]+ skipped' <<<"$output" || fail "pytest skipped a test"
}

@test "python: llmp.layout() reads llmp plan's files, groups as Megatron-Core's" {
	cd "$LLMP_SRCDIR/python"
	pytest tests/test_layout.py
}

@test "python: llmp.torch groups, all-reduce and DeviceMesh on gloo, no deadlock" {
	cd "$LLMP_SRCDIR/python"
	pytest tests/test_torch.py
}

@test "python: llmp's groups equal Megatron-Core's own parallel_state (8 ranks, gloo, four layouts)" {
	cd "$LLMP_SRCDIR/python"
	pytest tests/test_megatron.py
}

@test "python: llmp.checkpoint round trip as a PMIx singleton, read back with h5py" {
	local lib=$LLMP_BUILDDIR/runtime/.libs/libllmp.so.0
	[ -f "$lib" ] || skip "libllmp not built ($lib): llmp.checkpoint needs it"
	cd "$LLMP_SRCDIR/python"
	LLMP_LIBRARY=$lib pytest tests/test_checkpoint.py
}

@test "python: llmp.fr names gloo's flight recorder dumps with llmp's groups by their ranks; a pickled class is refused" {
	cd "$LLMP_SRCDIR/python"
	pytest tests/test_fr.py
}

@test "python: dcp.save/dcp.load through llmp's storage layer: 2x2 mesh saved, loaded by 4, 2 and 1 ranks, verify, h5py" {
	local lib=$LLMP_BUILDDIR/runtime/.libs/libllmp.so.0
	[ -f "$lib" ] || skip "libllmp not built ($lib): llmp.dcp needs it"
	cd "$LLMP_SRCDIR/python"
	# Several ranks run under Open MPI's mpirun, a PMIx server for libllmp (test_dcp.py
	# drops Slurm's variables, with which mpirun would launch through srun).
	LLMP_LIBRARY=$lib pytest tests/test_dcp.py
}

@test "python: llmp ckpt export --format hf: a tp=2 Llama-shaped checkpoint loads in transformers with the training logits" {
	local lib=$LLMP_BUILDDIR/runtime/.libs/libllmp.so.0
	[ -f "$lib" ] || skip "libllmp not built ($lib): saving the checkpoint to export needs it"
	cd "$LLMP_SRCDIR/python"
	# tp=2 ranks save under Open MPI's mpirun (tests/llama_tp.py); transformers reads the export.
	LLMP_LIBRARY=$lib pytest tests/test_export.py
}

@test "python: llmp.Job stops on SIGUSR1, is requeued, resumes bit-identical; the crash-loop limit holds" {
	local lib=$LLMP_BUILDDIR/runtime/.libs/libllmp.so.0
	[ -f "$lib" ] || skip "libllmp not built ($lib): llmp.Job needs it"
	cd "$LLMP_SRCDIR/python"
	LLMP_LIBRARY=$lib pytest tests/test_job.py
}

@test "python: pip install python/ installs a package that reads a layout" {
	# A copy: setuptools builds inside the project folder.
	cp -R "$LLMP_SRCDIR/python" "$BATS_TEST_TMPDIR/src"
	chmod -R u+w "$BATS_TEST_TMPDIR/src"
	run "$PY" -m pip install --quiet --no-deps --no-build-isolation --no-index \
		--target "$BATS_TEST_TMPDIR/site" "$BATS_TEST_TMPDIR/src"
	[ "$status" -eq 0 ] || fail "pip install failed"
	[ -f "$BATS_TEST_TMPDIR/site/llmp/torch.py" ] || fail "llmp/torch.py not installed"
	"$LLMP" plan --world 4 --parallel tp=2 --format json >"$BATS_TEST_TMPDIR/layout.json"
	cd "$BATS_TEST_TMPDIR"
	run env PYTHONPATH="$BATS_TEST_TMPDIR/site" LLMP_LAYOUT_FILE="$BATS_TEST_TMPDIR/layout.json" RANK=3 \
		"$PY" -c 'import llmp; l = llmp.layout(); print(llmp.__file__, l.group("tp"), l.coords()["tp"])'
	[ "$status" -eq 0 ] || fail "import of the installed llmp failed"
	assert_contains "$output" "$BATS_TEST_TMPDIR/site/llmp/__init__.py (2, 3) 1"
}

# SPDX-License-Identifier: BSD-3-Clause
"""test_megatron.py - llmp's groups against Megatron-Core's own: its
parallel_state.initialize_model_parallel run on CPU with gloo in 8 local
processes, for layouts with tp, pp, cp, experts and another order; for every
group kind Megatron has a getter for, each rank's group (its global ranks,
in order) must be the one llmp's layout file lists for that rank.

The expected answer is Megatron-Core's (megatron-core from PyPI, pinned in
requirements-test.txt), not llmp's code: the two are written apart.
"""
import pytest

from conftest import launch

LAYOUTS = [
    "tp=2,pp=2",
    "tp=2,cp=2",
    "tp=2,pp=2,order=tp-cp-ep-pp-dp",
    "ep=4,etp=1,pp=2",
]


@pytest.mark.parametrize("spec", LAYOUTS)
def test_groups_equal_megatron_cores(spec, layout_file, tmp_path):
    path = layout_file(8, spec)
    results = launch(8, path, "megatron", str(tmp_path / "out"), timeout=300)
    compared = 0
    for rank, out in sorted(results.items()):
        for kind, theirs in out["megatron"].items():
            ours = out["llmp"][kind]
            if theirs is None:
                # Megatron made no such group for this rank: llmp lists none either, or
                # a group of one (Megatron leaves some groups of one unmade).
                assert ours is None or len(ours) <= 1, (spec, rank, kind, ours)
                continue
            assert ours == theirs, "%s rank %d %s: llmp %s, Megatron-Core %s" % (spec, rank, kind, ours, theirs)
            compared += 1
    assert compared >= 8 * 6, compared  # most kinds, on every rank

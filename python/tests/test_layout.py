# SPDX-License-Identifier: BSD-3-Clause
"""test_layout.py - llmp.layout() on files the built `llmp plan` writes: the
groups against Megatron-Core's rules (conftest.megatron_groups), each rank's
coordinates against the tool's own single-rank view, and a clear error naming
the file and the key for every kind of bad file. Needs no torch."""

import json
import re

import pytest

import llmp
from conftest import group_of, megatron_groups, plan_json

LAYOUTS = [
    # (world, spec, Megatron sizes)
    (8, "tp=2,pp=2", dict(tp=2, pp=2)),
    (12, "tp=2,pp=3", dict(tp=2, pp=3)),
    (8, "tp=2,cp=2", dict(tp=2, cp=2)),
    (16, "tp=2,pp=2,cp=2", dict(tp=2, pp=2, cp=2)),
    (8, "tp=2,ep=2,pp=2", dict(tp=2, ep=2, pp=2)),
    (16, "tp=4,ep=2,etp=1", dict(tp=4, ep=2, etp=1)),
    (8, "tp=2,pp=2,order=tp-cp-ep-pp-dp", dict(tp=2, pp=2, order="tp-cp-ep-pp-dp")),
    (6, "", dict()),
]


@pytest.mark.parametrize("world,spec,sizes", LAYOUTS, ids=[s or "default" for _, s, _ in LAYOUTS])
def test_groups_are_megatrons(layout_file, world, spec, sizes):
    lay = llmp.load(layout_file(world, spec), rank=0)
    assert lay.world == world
    expected = megatron_groups(world, **sizes)
    assert set(lay.groups) == set(expected)
    for kind, groups in expected.items():
        assert [list(g) for g in lay.groups[kind]] == groups, kind
    dp = world // (sizes.get("tp", 1) * sizes.get("pp", 1) * sizes.get("cp", 1))
    assert lay.sizes["dp"] == dp
    for r in range(world):
        for kind, groups in expected.items():
            g = lay.group(kind, r)
            assert (list(g) if g is not None else None) == group_of(groups, r), (kind, r)


@pytest.mark.parametrize("world,spec", [(12, "tp=2,pp=3"), (16, "tp=2,pp=2,cp=2"), (8, "tp=2,ep=2,pp=2"),
                                        (16, "tp=4,ep=2,etp=1"), (8, "tp=2,pp=2,order=tp-cp-ep-pp-dp")])
def test_coords_match_the_tools_rank_view(layout_file, world, spec):
    whole = llmp.load(layout_file(world, spec))
    for r in range(world):
        view = json.loads(plan_json(world, spec, rank=r))
        assert whole.coords(r) == view["coords"], r
        # The rank's own view reads the same, and lists the same groups.
        one = llmp.load(layout_file(world, spec, rank=r))
        assert one.rank == r and one.coords() == view["coords"]
        for kind in whole.kinds():
            assert one.group(kind) == whole.group(kind, r), (kind, r)


def test_layout_from_the_environment(layout_file, monkeypatch):
    path = layout_file(12, "tp=2,pp=3")
    monkeypatch.setenv("LLMP_LAYOUT_FILE", path)
    monkeypatch.setenv("RANK", "7")
    monkeypatch.setenv("LLMP_RANK", "7")
    monkeypatch.setenv("WORLD_SIZE", "12")
    lay = llmp.layout()
    assert lay.path == path and lay.rank == 7
    assert lay.group("tp") == (6, 7)
    assert lay.group("pp") == (3, 7, 11)
    assert lay.group("dp") == (5, 7)
    assert lay.group("embedding") is None  # a middle pipeline stage
    assert lay.coords() == {"tp": 1, "cp": 0, "ep": 0, "dp": 1, "pp": 1, "expert-tp": 1, "expert-dp": 1}
    assert lay.order == ("tp", "cp", "ep", "dp", "pp")
    assert lay.spec == "tp=2,pp=3"
    assert lay.size("tp") == 2 and lay.size("tp-pp") == 6


def test_errors_without_a_file(monkeypatch, tmp_path):
    monkeypatch.delenv("LLMP_LAYOUT_FILE", raising=False)
    with pytest.raises(llmp.LayoutError, match="LLMP_LAYOUT_FILE is not set"):
        llmp.layout()
    missing = str(tmp_path / "nope.json")
    monkeypatch.setenv("LLMP_LAYOUT_FILE", missing)
    with pytest.raises(llmp.LayoutError, match="layout file %s: cannot read it" % missing):
        llmp.layout()
    assert issubclass(llmp.LayoutError, ValueError)


def test_environment_disagreeing_with_the_file(layout_file, monkeypatch):
    path = layout_file(8, "tp=2,pp=2")
    monkeypatch.setenv("WORLD_SIZE", "16")
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("LLMP_RANK", raising=False)
    with pytest.raises(llmp.LayoutError, match=r"key 'world': 8, but WORLD_SIZE=16"):
        llmp.layout(path)
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LLMP_RANK", "4")
    with pytest.raises(llmp.LayoutError, match="LLMP_RANK=4 but RANK=3"):
        llmp.layout(path)
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(llmp.LayoutError, match="RANK='x' is not an integer"):
        llmp.layout(path)
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("LLMP_RANK")
    lay = llmp.layout(path)
    assert lay.rank is None
    with pytest.raises(llmp.LayoutError, match="this task's is unknown"):
        lay.group("tp")
    with pytest.raises(llmp.LayoutError, match="rank 9 is not in 0..7"):
        lay.group("tp", 9)
    with pytest.raises(KeyError, match="no group kind 'tensor'"):
        lay.group("tensor", 0)


def _broken(tmp_path, layout_file, edit):
    doc = json.loads(open(layout_file(8, "tp=2,pp=2")).read())
    edit(doc)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize("edit,key,why", [
    (lambda d: d.pop("world"), "world", "missing"),
    (lambda d: d.update(world="8"), "world", "expected int"),
    (lambda d: d.update(world=True), "world", "expected int"),
    (lambda d: d.update(version=2), "version", "version 2, this llmp package reads version 1"),
    (lambda d: d.pop("order"), "order", "missing"),
    (lambda d: d.update(order="tp--pp"), "order", "not a '-'-separated list"),
    (lambda d: d["sizes"].pop("tp"), "sizes.tp", "missing"),
    (lambda d: d["sizes"].update(dp=0), "sizes.dp", "0 is below 1"),
    (lambda d: d["sizes"].update(dp=4), "sizes", "tp\\*cp\\*dp\\*pp = 16, but world is 8"),
    (lambda d: d.update(warnings=[1]), "warnings", "array of strings"),
    (lambda d: d.pop("groups"), "groups", "missing"),
    (lambda d: d["groups"].pop("dp-cp"), "groups.dp-cp", "missing"),
    (lambda d: d["groups"].update(tp={}), "groups.tp", "expected an array of groups"),
    (lambda d: d["groups"]["pp"].__setitem__(2, []), r"groups.pp\[2\]", "non-empty array of ranks"),
    (lambda d: d["groups"]["pp"][1].append(8), r"groups.pp\[1\]", "rank 8 is not in 0..7"),
    (lambda d: d["groups"]["pp"][1].append("1"), r"groups.pp\[1\]", "rank \"1\" is not in 0..7"),
    (lambda d: d["groups"]["tp"][0].append(0), r"groups.tp\[0\]", "appears twice"),
    (lambda d: d.update(rank=3), "coords", "missing"),
    (lambda d: d.update(rank=8), "rank", "8 is not below world 8"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_garbled_file_names_file_and_key(tmp_path, layout_file, edit, key, why):
    path = _broken(tmp_path, layout_file, edit)
    with pytest.raises(llmp.LayoutError, match="layout file %s: key '%s': .*%s" % (re.escape(path), key, why)):
        llmp.load(path, rank=0)


@pytest.mark.parametrize("text,why", [
    ("", "not JSON"),
    ('{"version":1,"world":', "not JSON"),
    ("[1,2]", "expected a JSON object, found list"),
])
def test_file_that_is_not_a_layout(tmp_path, text, why):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(llmp.LayoutError, match="layout file %s: %s" % (path, why)):
        llmp.load(str(path))


def test_binary_file(tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(llmp.LayoutError, match="layout file %s: not UTF-8" % path):
        llmp.load(str(path))


def test_single_rank_view_cannot_answer_for_another_rank(layout_file):
    one = llmp.load(layout_file(8, "tp=2,pp=2", rank=5))
    assert one.group("tp") == (4, 5)
    with pytest.raises(llmp.LayoutError, match="view of rank 5 alone"):
        one.group("tp", 4)
    with pytest.raises(llmp.LayoutError, match="the file shows rank 5, not rank 4"):
        llmp.load(layout_file(8, "tp=2,pp=2", rank=5), rank=4)

# SPDX-License-Identifier: BSD-3-Clause
"""test_torch.py - llmp.torch in real PyTorch on CPU with gloo: local jobs of
one process per rank (dist_worker.py, env:// on a free loopback port, as the
llm_parallel plugin sets it up), each rank's groups checked against
Megatron-Core's rules and by an all-reduce over each, the DeviceMesh against
torchtitan's pp x dp x cp x tp grid, and no deadlock where creating only a
rank's own groups with torch's new_group does deadlock. Each of llmp's ways
to make the groups (local: a rank's own only; split: one split_group per
kind; all: every group on every rank) is checked, with the number of torch
group-creation calls each rank made, counted by wrapping torch's functions."""

import datetime
import os

import pytest
import torch
import torch.distributed as dist

import llmp
import llmp.torch
from conftest import group_of, launch, megatron_groups

# Megatron-Core's initialize_model_parallel creates its groups in this order:
# embedding groups, which leave out the middle pipeline stages, come before
# the expert groups, which span the stages.
MEGATRON_CREATION_ORDER = ("dp", "dp-cp", "cp", "tp-pp", "tp", "pp", "embedding", "position-embedding",
                           "tp-dp-cp", "tp-dp", "tp-cp", "ep", "tp-ep", "expert-tp", "tp-ep-pp", "expert-dp")


def check_groups(results, world, sizes, kinds=None, method="local"):
    expected = megatron_groups(world, **sizes)
    kinds = kinds or llmp.GROUP_KINDS
    for rank, out in results.items():
        assert out["world"] == world and out["backend"] == "gloo"
        assert out["created"] == list(kinds)
        check_calls(out, expected, kinds, rank, method)
        for kind in kinds:
            want = group_of(expected[kind], rank)
            got = out["groups"][kind]
            assert got["member"] == (want is not None), (rank, kind)
            if want is None:
                continue
            assert got["ranks"] == want, (rank, kind)
            assert got["llmp_ranks"] == want, (rank, kind)
            # all_reduce of (rank, 1): the members' sum and the group's size
            assert got["sum"] == [sum(want), len(want)], (rank, kind)


def check_calls(out, expected, kinds, rank, method):
    """The torch calls each method must make on this rank, from the layout
    written out independently (conftest.megatron_groups)."""
    own = [k for k in kinds if group_of(expected[k], rank) is not None]
    every = sum(len(expected[k]) for k in kinds)
    want = {"local": ({"constructor": len(own), "new_group": 0, "split_group": 0}, len(own)),
            "split": ({"constructor": 0, "new_group": 0, "split_group": len(kinds)}, len(kinds)),
            "all": ({"constructor": every, "new_group": every, "split_group": 0}, every)}[method]
    assert out["method"] == method, (rank, out["method"])
    assert (out["torch_calls"], out["calls"]) == want, (rank, out["torch_calls"], out["calls"])
    if method == "local":
        # The name is the store prefix every member must agree on: llmp's
        # kind and the group's number in Megatron-Core's enumeration.
        assert out["names"] == {k: "llmp_%s_%d" % (k, expected[k].index(group_of(expected[k], rank)))
                                for k in own}, rank
    assert out["descs"] == {k: k for k in own}, rank


def check_mesh(results, world, sizes):
    tp, pp, cp = sizes.get("tp", 1), sizes.get("pp", 1), sizes.get("cp", 1)
    dp = world // (tp * pp * cp)
    # torchtitan's world mesh for the default order tp-cp-ep-dp-pp: rank =
    # tp + TP*(cp + CP*(dp + DP*pp)), i.e. arange(world) shaped pp x dp x cp x tp
    grid = torch.arange(world).reshape(pp, dp, cp, tp).tolist()
    expected = megatron_groups(world, **sizes)
    for rank, out in results.items():
        mesh = out["mesh"]
        assert mesh["dim_names"] == ["pp", "dp", "cp", "tp"]
        assert mesh["device_type"] == "cpu"
        assert mesh["mesh"] == grid
        for dim in ("pp", "dp", "cp", "tp"):
            want = group_of(expected[dim], rank)
            got = mesh["dims"][dim]
            assert got["ranks"] == want, (rank, dim)
            assert got["local_rank"] == want.index(rank), (rank, dim)
            assert got["sum"] == [sum(want), len(want)], (rank, dim)


LAYOUTS = [
    (12, "tp=2,pp=3", dict(tp=2, pp=3)),
    (8, "tp=2,cp=2,dp=2", dict(tp=2, cp=2)),
    (8, "tp=2,ep=2,pp=2", dict(tp=2, ep=2, pp=2)),
]


@pytest.mark.parametrize("world,spec,sizes", LAYOUTS, ids=[s for _, s, _ in LAYOUTS])
def test_groups_and_mesh(layout_file, tmp_path, world, spec, sizes):
    # gloo on CPU: llmp picks "local" by itself, a rank's own groups only.
    results = launch(world, layout_file(world, spec), "groups", str(tmp_path / "run"))
    check_groups(results, world, sizes)
    check_mesh(results, world, sizes)


@pytest.mark.parametrize("method", ["split", "all"])
def test_other_methods(layout_file, tmp_path, method):
    """The other ways, asked for by LLMP_TORCH_GROUPS: the same groups, the
    same sums and mesh, their own numbers of calls (tp=2,ep=2,pp=2: the
    embedding groups leave no rank out here, the expert groups differ)."""
    sizes = dict(tp=2, ep=2, pp=2)
    results = launch(8, layout_file(8, "tp=2,ep=2,pp=2"), "groups", str(tmp_path / method),
                     env_extra={"LLMP_TORCH_GROUPS": method})
    check_groups(results, 8, sizes, method=method)
    check_mesh(results, 8, sizes)


def test_no_deadlock_where_own_groups_only_deadlock(layout_file, tmp_path):
    """tp=2,pp=3 on 12 ranks, groups in Megatron-Core's creation order: the
    middle stage skips the embedding groups, so creating only a rank's own
    groups with use_local_synchronization=True hangs at the first group that
    spans the stages (tp-ep-pp). llmp.torch.init must not, in that order too,
    and it makes only each rank's own groups there (method "local")."""
    path = layout_file(12, "tp=2,pp=3")
    naive = launch(12, path, "naive", str(tmp_path / "naive"), args=MEGATRON_CREATION_ORDER,
                   env_extra={"LLMP_TEST_GROUP_TIMEOUT": "8"}, timeout=180)
    stuck = sorted(r for r, out in naive.items() if out["error"])
    assert stuck, ("every rank created its own groups without hanging: this torch (%s) no longer "
                   "deadlocks here, so the test no longer exercises the hazard" % torch.__version__)
    assert all("tp-ep-pp" not in naive[r]["joined"] for r in stuck)

    results = launch(12, path, "groups", str(tmp_path / "llmp"), args=MEGATRON_CREATION_ORDER)
    check_groups(results, 12, dict(tp=2, pp=3), kinds=MEGATRON_CREATION_ORDER)
    # The middle stage (ranks 4..7) has no embedding groups: fewer calls than the others.
    assert {results[r]["calls"] for r in (4, 5, 6, 7)} == {len(MEGATRON_CREATION_ORDER) - 2}
    assert {results[r]["calls"] for r in (0, 1, 2, 3)} == {len(MEGATRON_CREATION_ORDER)}


# ----------------------------------------------------- in one process, no job

def test_init_names_a_missing_variable(layout_file, monkeypatch):
    path = layout_file(8, "tp=2,pp=2")
    for name, value in (("RANK", "3"), ("WORLD_SIZE", "8"), ("MASTER_ADDR", "127.0.0.1"),
                        ("MASTER_PORT", "29500")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LLMP_RANK", raising=False)
    monkeypatch.delenv("MASTER_PORT")
    with pytest.raises(RuntimeError, match="MASTER_PORT is not set"):
        llmp.torch.init(layout=path)
    monkeypatch.setenv("MASTER_PORT", "29500")
    with pytest.raises(RuntimeError, match="RANK=3, but the layout's rank is 4"):
        llmp.torch.init(layout=llmp.load(path, rank=4))
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(RuntimeError, match="WORLD_SIZE=4, but the layout %s has 8 ranks" % path):
        llmp.torch.init(layout=llmp.load(path, rank=3))
    with pytest.raises(llmp.LayoutError, match="one rank's view"):
        llmp.torch.init(layout=layout_file(8, "tp=2,pp=2", rank=3))
    assert not dist.is_initialized()


def test_backend_choice(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert llmp.torch.default_backend() == "gloo"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_nccl_available", lambda: True)
    assert llmp.torch.default_backend() == "nccl"
    monkeypatch.setattr(dist, "is_nccl_available", lambda: False)
    assert llmp.torch.default_backend() == "gloo"


def test_local_device(monkeypatch):
    # One GPU visible (--llm-gpu-bind=task): device 0, whatever LOCAL_RANK says.
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert llmp.torch.local_device() == torch.device("cuda", 0)
    # The node's GPUs visible (torchrun's contract): LOCAL_RANK indexes them.
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert llmp.torch.local_device() == torch.device("cuda", 3)
    monkeypatch.setenv("LOCAL_RANK", "5")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    with pytest.raises(RuntimeError, match="LOCAL_RANK=5, but only 4 GPUs are visible"):
        llmp.torch.local_device()
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(RuntimeError, match="CUDA sees none"):
        llmp.torch.local_device()


def test_mesh_of_another_order(layout_file):
    """With order=tp-cp-ep-pp-dp, dp varies slowest: the pp x dp x cp x tp
    mesh is no longer arange(world), but each line is still that dimension's group."""
    lay = llmp.load(layout_file(8, "tp=2,pp=2,order=tp-cp-ep-pp-dp"))
    mesh = llmp.torch.mesh_of(lay)
    expected = megatron_groups(8, tp=2, pp=2, order="tp-cp-ep-pp-dp")
    assert mesh == [[[[0, 1]], [[4, 5]]], [[[2, 3]], [[6, 7]]]]
    t = torch.tensor(mesh)
    for r in range(8):
        p, d, c, tt = (t == r).nonzero()[0].tolist()
        assert t[:, d, c, tt].tolist() == group_of(expected["pp"], r)
        assert t[p, :, c, tt].tolist() == group_of(expected["dp"], r)
        assert t[p, d, c, :].tolist() == group_of(expected["tp"], r)


def test_init_in_a_started_job(layout_file, monkeypatch, tmp_path):
    """A program that started torch.distributed itself (world 1 here) gets
    the groups, and the layout's rank is checked against torch's."""
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("LLMP_RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=30))
    try:
        groups = llmp.torch.init(layout=layout_file(1, ""))
        assert groups.layout.rank == 0
        assert set(groups) == set(llmp.GROUP_KINDS)
        t = torch.ones(1)
        dist.all_reduce(t, group=groups["dp-cp"])
        assert t.item() == 1
        with pytest.raises(KeyError, match="no group kind 'tensor'"):
            groups["tensor"]
        assert groups.method == "local" and groups.calls == len(llmp.GROUP_KINDS)
        mesh = llmp.torch.device_mesh(groups)
        assert mesh.mesh.tolist() == [[[[0]]]]
        assert mesh.mesh_dim_names == ("pp", "dp", "cp", "tp")
        for dim in mesh.mesh_dim_names:
            assert mesh[dim].get_group() is groups[dim]
    finally:
        dist.destroy_process_group()
    assert os.environ.get("RANK") is None


def test_ddp_averages_gradients_over_the_dp_group(layout_file, tmp_path):
    # tp=2 over 8 ranks: dp groups {0,2,4,6} and {1,3,5,7}. The loss is the sum of
    # Linear(4, 2) applied to a row of `rank`s, so each rank's own gradient is `rank`
    # in every entry, and DDP's is the mean of its dp group's ranks.
    results = launch(8, layout_file(8, "tp=2"), "ddp", str(tmp_path / "out"))
    for rank, out in results.items():
        dp = [r for r in range(8) if r % 2 == rank % 2]
        assert out["dp"] == dp, out
        want = sum(dp) / len(dp)
        assert out["grad"] == [[want] * 4] * 2, (rank, out["grad"], want)


def test_method_choice_and_fallback(layout_file, monkeypatch, tmp_path):
    """Where torch lacks what a method needs, the choice falls back to the
    next (split, then all) and says why; a method asked for that cannot be
    done, or a name that is no method, is refused."""
    monkeypatch.delenv("LLMP_TORCH_GROUPS", raising=False)
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=30))
    try:
        lay = llmp.load(layout_file(1, ""), rank=0)
        assert llmp.torch.choose_method()[0] == "local"
        c10d = dist.distributed_c10d
        # A torch whose group constructor takes other arguments (new_group
        # still reaches the real one through it).
        real = c10d._new_process_group_helper
        monkeypatch.setattr(c10d, "_new_process_group_helper", lambda *args, **kwargs: real(*args, **kwargs))
        method, why = llmp.torch.choose_method()
        assert method == "split", why
        with pytest.raises(RuntimeError,
                           match="'local' is not available: torch .* has no _new_process_group_helper"):
            llmp.torch.create_groups(lay, method="local")
        monkeypatch.delattr(dist, "split_group")
        method, why = llmp.torch.choose_method()
        assert method == "all" and "has no split_group" in why, why
        groups = llmp.torch.create_groups(lay, kinds=("tp", "dp"))
        assert groups.method == "all" and groups.calls == 2
        t = torch.full((1,), 3.0)
        dist.all_reduce(t, group=groups["dp"])
        assert t.item() == 3.0
        monkeypatch.setenv("LLMP_TORCH_GROUPS", "cheap")
        with pytest.raises(ValueError, match="group method 'cheap' is none of local split all"):
            llmp.torch.create_groups(lay)
    finally:
        dist.destroy_process_group()


def test_local_names_a_second_generation(layout_file, tmp_path):
    """A second create_groups in one world names its groups anew (torch
    refuses a name twice, and the store prefix must be fresh)."""
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=30))
    try:
        lay = llmp.load(layout_file(1, ""), rank=0)
        first = llmp.torch.create_groups(lay, kinds=("tp",), method="local")
        second = llmp.torch.create_groups(lay, kinds=("tp",), method="local")
        assert first["tp"].group_name == "llmp_tp_0"
        assert second["tp"].group_name == "llmp_tp_0.1"
    finally:
        dist.destroy_process_group()

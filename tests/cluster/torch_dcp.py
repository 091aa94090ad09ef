#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""torch.distributed.checkpoint (dcp.save / dcp.load) through llmp's storage layer, one rank.

    torch_dcp.py save DIR STEP        4 ranks, a 2x2 DeviceMesh (dp, tp): DTensor shards, replicas, bytes
    torch_dcp.py save-fail DIR STEP   the same, rank 2 failing inside write_data: nothing committed
    torch_dcp.py load-dp4 DIR [STEP]  4 ranks, a 1-D mesh: every tensor Shard(0) over 4 ranks
    torch_dcp.py load-world2 DIR      2 ranks: cut along another dimension than saved
    torch_dcp.py load-whole DIR       any world, no DTensor: every tensor whole on every rank
    torch_dcp.py h5py DIR STEP        one process, no llmp: h5py reads the index, bytes items too

Started by srun --mpi=pmix under the llm_parallel plugin (tests/python_cluster.bats),
or by Open MPI's mpirun (python/tests/test_dcp.py): RANK, WORLD_SIZE and the
master come from the plugin, else from OMPI_COMM_WORLD_* and the environment.
The global tensors are made here from a fixed seed, identically on every
rank; what each rank should hold is cut from them here with torch.chunk (the
rule DTensor's Shard follows), and compared as raw bits. Each rank prints
"dcp RANK ok ..." or "dcp RANK wrong: ...".
"""
import io
import os
import sys
import warnings

import torch

SPECIAL = [float("inf"), float("-inf"), -0.0, 1e-39, 3e38]


def global_state():
    """Every value whole: tensors of several dtypes and shapes, and non-tensor values."""
    g = torch.Generator().manual_seed(1616)
    proj = torch.randn(10, 8, generator=g).to(torch.bfloat16)
    proj.view(-1)[:len(SPECIAL)] = torch.tensor(SPECIAL).to(torch.bfloat16)
    tensors = {
        "model.embed": torch.randn(16, 12, generator=g),                          # float32
        "model.proj": proj,                                                       # bfloat16
        "model.fsdp": torch.randn(8, 6, generator=g, dtype=torch.float64),
        "model.uneven": torch.randn(7, 5, generator=g).to(torch.float16),         # 7 rows: 4 + 3
        "model.bias": torch.randn(10, generator=g),                               # plain, replicated
        "optim.exp_avg": torch.randint(-2**31, 2**31 - 1, (12, 3), generator=g, dtype=torch.int32),
        "optim.mask": torch.randint(0, 2, (3, 5), generator=g).bool(),            # not an llmp dtype
        "optim.step": torch.tensor(1234.0),                                       # 0-d
        "ids": torch.randint(-2**62, 2**62, (6, 4), generator=g, dtype=torch.int64),
    }
    values = {"extra.epoch": 7, "extra.sched": {"lr": 0.01, "last_epoch": 12, "milestones": [3, 9]},
              "extra.name": "run-16"}
    return tensors, values


def placements_save():
    """Mesh (dp, tp): tp shards replicated over dp, 2-D dp x tp shards, dp-only shards."""
    from torch.distributed.tensor import Replicate, Shard
    return {"model.embed": (Replicate(), Shard(0)), "model.proj": (Replicate(), Shard(1)),
            "model.fsdp": (Shard(0), Shard(1)), "model.uneven": (Shard(0), Replicate()),
            "optim.exp_avg": (Shard(0), Shard(0)), "optim.mask": (Replicate(), Shard(0))}


def nested(flat):
    """{"a.b": v} -> {"a": {"b": v}} (one level), the way a program holds model and optimizer."""
    out = {}
    for k, v in flat.items():
        if "." in k:
            a, b = k.split(".", 1)
            out.setdefault(a, {})[b] = v
        else:
            out[k] = v
    return out


def flat(tree):
    out = {}
    for k, v in tree.items():
        if isinstance(v, dict) and k in ("model", "optim", "extra"):
            out.update({k + "." + kk: vv for kk, vv in v.items()})
        else:
            out[k] = v
    return out


def bits(t):
    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return t.contiguous().view(ints[t.element_size()])


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(bits(a), bits(b))


def chunk_of(t, parts, index, dim):
    """Rank `index`'s piece along `dim` as DTensor's Shard cuts it: torch.chunk, empty past the end."""
    pieces = t.chunk(parts, dim)
    if index < len(pieces):
        return pieces[index]
    shape = list(t.shape)
    shape[dim] = 0
    return t.new_empty(shape)


def expected_save_local(t, placement, coord):
    """This rank's piece of t under placements over mesh (dp, tp) at coord (dp, tp), by hand."""
    from torch.distributed.tensor import Shard
    piece = t
    for p, c in zip(placement, coord):
        if isinstance(p, Shard):
            piece = chunk_of(piece, 2, c, p.dim)
    return piece


def init_dist():
    import torch.distributed as dist
    env = os.environ
    if "RANK" not in env and "OMPI_COMM_WORLD_RANK" in env:  # Open MPI's mpirun
        env["RANK"], env["WORLD_SIZE"] = env["OMPI_COMM_WORLD_RANK"], env["OMPI_COMM_WORLD_SIZE"]
    dist.init_process_group("gloo")
    return dist


def main(mode, root, step):
    warnings.simplefilter("ignore")  # DCP's notes on every save
    if mode == "h5py":
        return check_h5py(root, step)
    dist = init_dist()
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Shard, distribute_tensor

    import llmp.checkpoint as ckpt
    rank, world = dist.get_rank(), dist.get_world_size()
    ctx = ckpt.init()
    if (ctx.rank, ctx.world) != (rank, world):
        print("dcp %d wrong: llmp rank %d of %d, torch %d of %d" % (rank, ctx.rank, ctx.world, rank, world))
        return 1
    tensors, values = global_state()

    if mode in ("save", "save-fail"):
        assert world == 4, world
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        sd = dict(tensors)
        for k, pl in placements_save().items():
            sd[k] = distribute_tensor(tensors[k], mesh, pl)
            want = expected_save_local(tensors[k], pl, (rank // 2, rank % 2))
            assert same(sd[k].to_local(), want), k  # the layout is what this test says it is
        sd.update(values)
        planner = None
        if mode == "save-fail":
            from torch.distributed.checkpoint.default_planner import DefaultSavePlanner

            class FailOnRank2(DefaultSavePlanner):
                def resolve_data(self, item):
                    if rank == 2:
                        raise RuntimeError("injected failure in write_data on rank 2")
                    return super().resolve_data(item)
            planner = FailOnRank2()
        writer = ckpt.DcpWriter(root, step=step)
        try:
            dcp.save(nested(sd), storage_writer=writer, planner=planner)
        except CheckpointException as e:  # on every rank (a BaseException)
            if mode == "save-fail" and "injected failure" in str(e):
                print("dcp %d ok failed as it should: %s" % (rank, type(e).__name__), flush=True)
                return 0
            raise
        if mode == "save-fail":
            print("dcp %d wrong: the save did not fail" % rank, flush=True)
            return 1
        print("dcp %d ok saved step %d" % (rank, step), flush=True)
        return 0

    if mode == "load-dp4":
        assert world == 4, world
        mesh = init_device_mesh("cpu", (4,), mesh_dim_names=("dp",))
        cut = {k: 0 for k, t in tensors.items() if t.dim() > 0}
    elif mode == "load-world2":
        assert world == 2, world
        mesh = init_device_mesh("cpu", (2,), mesh_dim_names=("tp",))
        cut = {k: (1 if t.dim() == 2 else 0) for k, t in tensors.items() if t.dim() > 0}
    elif mode == "load-whole":
        mesh, cut = None, {}
    else:
        print("usage: torch_dcp.py save|save-fail|load-dp4|load-world2|load-whole|h5py DIR [STEP]",
              file=sys.stderr)
        return 2
    n = mesh.size() if mesh is not None else 1
    sd, want = {}, {}
    for k, t in tensors.items():
        if k in cut:
            sd[k] = distribute_tensor(torch.full_like(t, 3), mesh, (Shard(cut[k]),))
            want[k] = chunk_of(t, n, rank, cut[k])
        else:
            sd[k] = torch.full_like(t, 3)
            want[k] = t
    # Placeholders of the same structure: DCP loads a value where the program's state dict has one.
    sd.update({"extra.epoch": 0, "extra.sched": {"lr": 0.0, "last_epoch": 0, "milestones": []},
               "extra.name": ""})
    tree = nested(sd)
    reader = ckpt.DcpReader(root, step=step)
    dcp.load(tree, storage_reader=reader)
    got = flat(tree)
    bad = []
    for k in tensors:
        local = got[k].to_local() if isinstance(got[k], DTensor) else got[k]
        if not same(local, want[k]):
            bad.append(k)
    bad += [k for k in values if got[k] != values[k]]
    if bad:
        print("dcp %d wrong: step %s, differing: %s" % (rank, reader.loaded_step, " ".join(bad)), flush=True)
        return 1
    print("dcp %d ok loaded step %d of world %d" % (rank, reader.loaded_step, world), flush=True)
    return 0


def check_h5py(root, step):
    """The index read with h5py alone: every tensor whole, bytes items as their bytes."""
    import h5py
    import numpy as np
    tensors, values = global_state()
    bad = []
    with h5py.File(os.path.join(root, "step-%d" % step, "index.h5"), "r") as f:
        for k, t in tensors.items():
            d = f[k]
            if t.dtype == torch.bfloat16:  # h5py hands bfloat16 over as float32 (python/README.md)
                value = torch.from_numpy(d[...].astype(np.float32)).to(torch.bfloat16)
            elif t.dtype == torch.bool:     # raw bytes, one more dimension of the element's size
                value = torch.from_numpy(d[...]).view(torch.bool).reshape(d.shape[:-1])
            else:
                value = torch.from_numpy(d[...])
            if not same(value.reshape(t.shape), t):
                bad.append(k)
        # DCP flattens nested dicts: a bytes item per leaf, "extra.sched.lr".
        leaves = {k + "." + kk: vv for k, v in values.items() if isinstance(v, dict) for kk, vv in v.items()}
        leaves.update({k: v for k, v in values.items() if not isinstance(v, dict)})
        for k, v in leaves.items():
            got = torch.load(io.BytesIO(f[k][...].tobytes()), weights_only=False)
            if got != v:
                bad.append(k)
    print("h5py %s" % ("ok" if not bad else "differs: " + " ".join(bad)), flush=True)
    return 1 if bad else 0


def run(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    status = main(argv[1], argv[2], int(argv[3]) if len(argv) > 3 else None)
    if argv[1] != "h5py":
        # PMIx and mpirun expect a finalize; gloo's group goes first, then libllmp's context.
        import torch.distributed as dist
        import llmp.checkpoint as ckpt
        dist.destroy_process_group()
        ckpt.init().finalize()
    return status


if __name__ == "__main__":
    sys.exit(run(sys.argv))

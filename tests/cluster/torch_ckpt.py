#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A torch state dict checkpointed by llmp.checkpoint in one layout and read back in others.

    torch_ckpt.py save DIR         under --llm-parallel=tp=2,dp=2: tp shards, the rest replicated
    torch_ckpt.py load-whole DIR   any world: every rank loads every tensor whole
    torch_ckpt.py load-split DIR   a world of 2: each tensor cut along another dimension than saved
    torch_ckpt.py h5py DIR         no llmp, one process: h5py reads index.h5, bfloat16 included

The global tensors are made here from a fixed seed, identically on every
rank, and each rank's slice is cut from them; what a load gives is compared
with them as raw bits. Ranks print "ckpt RANK ok", or what differs.
"""
import os
import sys

import torch

STEP = 12
META = b"torch_ckpt.py step 12"


def global_state():
    """Every tensor whole: several dtypes, bfloat16 with its special values."""
    g = torch.Generator().manual_seed(1616)
    proj = torch.randn(40, 64, generator=g).to(torch.bfloat16)
    proj.view(-1)[:5] = torch.tensor([float("inf"), float("-inf"), -0.0, 1e-39, 3e38]).to(torch.bfloat16)
    return {
        "embed.weight": torch.randn(64, 48, generator=g),                  # float32, tp rows
        "proj.weight": proj,                                               # bfloat16, tp columns
        "proj.bias": torch.randn(40, generator=g).to(torch.float16),       # replicated
        "norm.scale": torch.randn(48, generator=g, dtype=torch.float64),   # replicated
        "ids": torch.randint(-2**31, 2**31 - 1, (8, 6), generator=g, dtype=torch.int32),  # tp rows
        "mask": torch.randint(0, 256, (7, 9), generator=g, dtype=torch.uint8),
        "optim/step": torch.tensor(STEP, dtype=torch.int64),               # 0-d, nested key
    }


def bits(t):
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return t.contiguous().view(ints[t.element_size()])


def nested(flat):
    out = {}
    for k, v in flat.items():
        if "/" in k:
            a, b = k.split("/")
            out.setdefault(a, {})[b] = v
        else:
            out[k] = v
    return out


def check(rank, got, want):
    """Names of tensors whose bits differ."""
    return [k for k in want if got[k].shape != want[k].shape or not torch.equal(bits(got[k]), bits(want[k]))]


def main(mode, root):
    if mode == "h5py":
        import h5py
        import numpy as np
        want = global_state()
        bad = []
        with h5py.File(os.path.join(root, "step-%d" % STEP, "index.h5"), "r") as f:
            for k, t in want.items():
                value = f[k][...]
                if t.dtype == torch.bfloat16:  # float32 in h5py (python/README.md); exact here, no NaN
                    value = torch.from_numpy(value.astype(np.float32)).to(torch.bfloat16)
                else:
                    value = torch.from_numpy(value)
                if not torch.equal(bits(value.reshape(t.shape)), bits(t)):
                    bad.append(k)
        print("h5py %s" % ("ok" if not bad else "differs: " + " ".join(bad)), flush=True)
        return 1 if bad else 0

    import llmp
    import llmp.checkpoint as ckpt

    ctx = ckpt.init()
    rank = ctx.rank
    want = global_state()
    if mode == "save":
        lay = llmp.layout()
        assert (lay.sizes["tp"], lay.sizes["dp"], ctx.world) == (2, 2, 4), (lay.sizes, ctx.world)
        tp = lay.coords()["tp"]
        sd = dict(want)
        for k, dim in (("embed.weight", 0), ("proj.weight", 1), ("ids", 0)):
            local = want[k].chunk(2, dim)[tp].clone()  # a tp rank's own memory, contiguous
            sd[k] = ckpt.Shard.split(local, dim, tp, 2)
        ckpt.save(nested(sd), root, STEP, meta=META)
        print("ckpt %d ok saved tp=%d" % (rank, tp), flush=True)
        ctx.finalize()
        return 0

    if mode == "load-whole":
        got = {k: torch.full_like(v, 3) for k, v in want.items()}
        step, meta = ckpt.load(nested(got), root)
        expect = want
    elif mode == "load-split":
        assert ctx.world == 2, ctx.world
        # Cut otherwise than saved: embed and ids by columns, proj by rows, the replicas in halves.
        cuts = {"embed.weight": 1, "proj.weight": 0, "proj.bias": 0, "norm.scale": 0, "ids": 1, "mask": 0}
        got, sd, expect = {}, {}, {}
        for k, v in want.items():
            if k in cuts:  # uneven where the size is odd (mask: rows 0..3 and 4..6)
                dim = cuts[k]
                expect[k] = v.chunk(2, dim)[rank]
                got[k] = torch.full_like(expect[k], 3)
                offset = [0] * v.dim()
                offset[dim] = rank * v.chunk(2, dim)[0].shape[dim]
                sd[k] = ckpt.Shard(got[k], v.shape, offset)
            else:
                expect[k] = v
                got[k] = sd[k] = torch.full_like(v, 3)
        step, meta = ckpt.load(nested(sd), root)
    else:
        print("usage: torch_ckpt.py save|load-whole|load-split|h5py DIR", file=sys.stderr)
        return 2
    bad = check(rank, got, expect)
    ctx.finalize()
    if (step, meta) != (STEP, META) or bad:
        print("ckpt %d wrong: step %s meta %r, tensors differing: %s" % (rank, step, meta, bad), flush=True)
        return 1
    print("ckpt %d ok of %d" % (rank, ctx.world), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

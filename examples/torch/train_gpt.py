#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""train_gpt.py - a small GPT trained with tensor and data parallelism under
`srun --llm-parallel=tp=T,dp=D --llm-checkpoint=DIR`, on CPU with gloo, no
torchrun (doc/example-torch.md).

- llmp.torch.init() starts torch.distributed from the plugin's variables and
  makes the layout's groups; the model's attention heads and MLP columns are
  split over the tp group the way Megatron splits them (column-parallel in,
  row-parallel out, one all-reduce per block half), the batch over dp, and
  gradients are averaged over dp.
- llmp.Job checkpoints the weights (tp shards as llmp.checkpoint.Shard, so a
  checkpoint reloads under another tp) and the optimizer's momentum, stops on
  Slurm's preemption signal at a step boundary, and exits 75 to be requeued;
  the next run resumes where it stopped and ends bit for bit where an
  uninterrupted run ends.

    srun -N2 --ntasks-per-node=2 --llm-parallel=tp=2 --llm-checkpoint=/scratch/gpt \\
        python examples/torch/train_gpt.py --steps 40

Prints the loss every step on rank 0 and, at the end, a checksum of the
weights every rank agrees on.
"""
import argparse
import hashlib
import os
import signal
import sys

import torch
import torch.distributed as dist

import llmp
import llmp.torch
from llmp.checkpoint import Shard

VOCAB, HIDDEN, HEADS, LAYERS, SEQ, BATCH = 64, 32, 4, 2, 16, 4


class CopyToTP(torch.autograd.Function):
    """Identity forward; the gradient all-reduced over tp (a column-parallel layer's input)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class ReduceFromTP(torch.autograd.Function):
    """All-reduce over tp forward (a row-parallel layer's output); identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.clone()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class Model:
    """The weights as plain tensors: this rank's tp shards and the replicated ones."""

    def __init__(self, tp, tp_rank, tp_group):
        self.tp, self.tp_rank, self.group = tp, tp_rank, tp_group
        g = torch.Generator().manual_seed(1234)  # the same full weights on every rank

        def full(*shape):
            return torch.randn(*shape, generator=g) * 0.1

        def cols(w):  # a column-parallel weight (out, in): this rank's rows of the output
            return w.chunk(tp, 0)[tp_rank].contiguous()

        def rows(w):  # a row-parallel weight (out, in): this rank's columns of the input
            return w.chunk(tp, 1)[tp_rank].contiguous()

        self.params = {"emb": full(VOCAB, HIDDEN), "head": full(VOCAB, HIDDEN)}
        self.split = {}  # name -> the dimension tp splits
        for i in range(LAYERS):
            p = "layer%d." % i
            # q, k and v stacked (3, out, in): tp splits each one's heads (dimension 1).
            self.params[p + "qkv"] = full(3, HIDDEN, HIDDEN).chunk(tp, 1)[tp_rank].contiguous()
            self.params[p + "proj"] = rows(full(HIDDEN, HIDDEN))
            self.params[p + "fc1"] = cols(full(4 * HIDDEN, HIDDEN))
            self.params[p + "fc2"] = rows(full(HIDDEN, 4 * HIDDEN))
            self.split.update({p + "qkv": 1, p + "proj": 1, p + "fc1": 0, p + "fc2": 1})
        for t in self.params.values():
            t.requires_grad_(True)
        self.momentum = {n: torch.zeros_like(t) for n, t in self.params.items()}

    def state(self):
        """What a checkpoint holds: tp shards as Shards of the full tensors, and the momentum alike."""
        sd = {}
        for kind, tensors in (("w", self.params), ("m", self.momentum)):
            for name, t in tensors.items():
                d = self.split.get(name)
                value = t.data if kind == "w" else t
                sd[kind + "/" + name] = Shard.split(value, d, self.tp_rank, self.tp) if d is not None else value
        return sd

    def forward(self, tokens):
        x = self.params["emb"][tokens]  # (batch, seq, hidden)
        mask = torch.full((SEQ, SEQ), float("-inf")).triu(1)
        heads = HEADS // self.tp
        for i in range(LAYERS):
            p = "layer%d." % i
            h = CopyToTP.apply(torch.nn.functional.layer_norm(x, (HIDDEN,)), self.group)
            w = self.params[p + "qkv"]
            q, k, v = (h @ w[j].t() for j in range(3))  # this rank's heads
            def split_heads(t):
                return t.view(BATCH, SEQ, heads, -1).transpose(1, 2)

            a = torch.softmax(split_heads(q) @ split_heads(k).transpose(-1, -2) / 8.0 + mask, -1)
            o = (a @ split_heads(v)).transpose(1, 2).reshape(BATCH, SEQ, -1)
            x = x + ReduceFromTP.apply(o @ self.params[p + "proj"].t(), self.group)
            h = CopyToTP.apply(torch.nn.functional.layer_norm(x, (HIDDEN,)), self.group)
            h = torch.nn.functional.gelu(h @ self.params[p + "fc1"].t())
            x = x + ReduceFromTP.apply(h @ self.params[p + "fc2"].t(), self.group)
        return torch.nn.functional.layer_norm(x, (HIDDEN,)) @ self.params["head"].t()


def batch(step, dp_rank):
    """Tokens of this dp replica at this step: counting from a random start (the next token is
    the last one plus 1, mod VOCAB), learnable in a few dozen steps and the same on every run."""
    g = torch.Generator().manual_seed(step * 1000 + dp_rank)
    start = torch.randint(0, VOCAB, (BATCH, 1), generator=g)
    return (start + torch.arange(SEQ)) % VOCAB


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--signal-at", type=int, default=-1,
                    help="rank 0 sends itself SIGUSR1 after this step (a test of preemption)")
    args = ap.parse_args()

    groups = llmp.torch.init(backend="gloo")
    lay = groups.layout
    coords = lay.coords()
    tp, tp_rank, dp_rank = lay.sizes["tp"], coords["tp"], coords["dp"]
    if HEADS % tp:
        sys.exit("train_gpt.py: tp=%d does not divide the %d heads" % (tp, HEADS))
    model = Model(tp, tp_rank, groups["tp"])
    rank = dist.get_rank()

    job = llmp.Job(model.state())
    step, _ = job.resume()
    if rank == 0:
        print("train_gpt: tp=%d dp=%d, starting at step %d" % (tp, lay.sizes["dp"], step), flush=True)
    code = None
    try:
        for step in range(step, args.steps):
            tokens = batch(step, dp_rank)
            logits = model.forward(tokens)
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB),
                                                     tokens[:, 1:].reshape(-1))
            for t in model.params.values():
                t.grad = None
            loss.backward()
            with torch.no_grad():
                for name, t in model.params.items():
                    dist.all_reduce(t.grad, group=groups["dp"])
                    t.grad /= lay.sizes["dp"]
                    model.momentum[name].mul_(0.9).add_(t.grad)
                    t.sub_(args.lr * model.momentum[name])
            if rank == 0:
                print("step %d loss %.6f" % (step, loss.item()), flush=True)
            if step == args.signal_at and rank == 0:
                os.kill(os.getpid(), signal.SIGUSR1)  # as Slurm does before a preemption
            if job.step_end(step):
                if rank == 0:
                    print("train_gpt: stopped after step %d, checkpoint committed" % step, flush=True)
                break
    except Exception as err:  # a failure: finish() decides whether to ask for a requeue
        print("train_gpt: rank %d: %s" % (rank, err), file=sys.stderr, flush=True)
        code = job.finish(err)
    if code is None:
        code = job.finish()
    digest = hashlib.sha256()
    for name in sorted(model.params):
        digest.update(model.params[name].detach().numpy().tobytes())
    print("train_gpt: rank %d weights %s" % (rank, digest.hexdigest()[:16]), flush=True)
    sys.exit(code)


if __name__ == "__main__":
    main()

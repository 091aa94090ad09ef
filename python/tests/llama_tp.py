# SPDX-License-Identifier: BSD-3-Clause
"""llama_tp.py - a small Llama-shaped model in Megatron-Core's layout, trained and
saved through llmp.checkpoint by tp=2 ranks (test_export.py runs it under mpirun).

    llama_tp.py ROOT STEP REF.npz [tied|qwen2]

Every rank builds the same full weights (seeded), trains them a few SGD steps
on the whole model (fp32, CPU), then registers its tp=2 slice of each, as
Megatron-Core shards them: linear_qkv by query groups (each group's q heads,
then its k head, then its v head: megatron/core/transformer/attention.py),
linear_fc1 as this rank's [gate; up] (megatron/core/transformer/mlp.py),
linear_proj and linear_fc2 by input columns, the embedding and output layer
by vocabulary rows (padded from 50 to 64), norms whole. The momentum is saved
too, under opt/. Rank 0 writes the training-side forward's logits for fixed
tokens to REF.npz: the answer the export, loaded by transformers, must give.
With qwen2, linear_qkv has a bias (Qwen2's q/k/v biases), cut like its rows.

The forward is written here from the papers, not from transformers: RMSNorm,
rotary embeddings rotating the two halves of each head (Su et al. 2021, as
Megatron-Core and Hugging Face's Llama do), grouped-query attention, SwiGLU.
"""
import sys

import numpy as np
import torch

import llmp.checkpoint as ckpt
from llmp.checkpoint import Shard

VOCAB, PADDED, HIDDEN, HEADS, KV, FFN, LAYERS, SEQ = 50, 64, 64, 4, 2, 96, 2, 12
HD = HIDDEN // HEADS
EPS, THETA = 1e-5, 10000.0
TP = 2


def init(tied, bias=False):
    g = torch.Generator().manual_seed(45)

    def r(*shape, s=0.08):
        return torch.randn(*shape, generator=g) * s

    w = {"embedding.word_embeddings.weight": r(PADDED, HIDDEN, s=0.5)}
    for i in range(LAYERS):
        p = "decoder.layers.%d." % i
        w[p + "self_attention.linear_qkv.layer_norm_weight"] = 1 + r(HIDDEN, s=0.1)
        w[p + "self_attention.linear_qkv.weight"] = r(KV * (HEADS // KV + 2) * HD, HIDDEN)
        if bias:
            w[p + "self_attention.linear_qkv.bias"] = r(KV * (HEADS // KV + 2) * HD, s=0.3)
        w[p + "self_attention.linear_proj.weight"] = r(HIDDEN, HEADS * HD)
        w[p + "mlp.linear_fc1.layer_norm_weight"] = 1 + r(HIDDEN, s=0.1)
        w[p + "mlp.linear_fc1.weight"] = r(2 * FFN, HIDDEN)
        w[p + "mlp.linear_fc2.weight"] = r(HIDDEN, FFN)
    w["decoder.final_layernorm.weight"] = 1 + r(HIDDEN, s=0.1)
    if not tied:
        w["output_layer.weight"] = r(PADDED, HIDDEN, s=0.5)
    return w


def rms(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * weight


def rope(x):  # x: (batch, heads, seq, hd); position p rotates pair (j, j + hd/2) by p * THETA^(-2j/hd)
    half = HD // 2
    inv = THETA ** (-torch.arange(0, half, dtype=torch.float64) * 2 / HD)
    ang = (torch.arange(x.shape[2], dtype=torch.float64)[:, None] * inv[None]).float()
    cos, sin = ang.cos(), ang.sin()
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)


def forward(w, tokens, tied):
    b, s = tokens.shape
    x = w["embedding.word_embeddings.weight"][tokens]
    mask = torch.full((s, s), float("-inf")).triu(1)
    per = HEADS // KV
    for i in range(LAYERS):
        p = "decoder.layers.%d." % i
        h = rms(x, w[p + "self_attention.linear_qkv.layer_norm_weight"])
        qkv = h @ w[p + "self_attention.linear_qkv.weight"].t()
        if p + "self_attention.linear_qkv.bias" in w:
            qkv = qkv + w[p + "self_attention.linear_qkv.bias"]
        qkv = qkv.view(b, s, KV, (per + 2) * HD)
        q, k, v = qkv.split([per * HD, HD, HD], -1)
        q = q.reshape(b, s, HEADS, HD).transpose(1, 2)  # head j of group g is query head g*per + j
        k = k.transpose(1, 2).repeat_interleave(per, 1)  # (b, heads, s, hd)
        v = v.transpose(1, 2).repeat_interleave(per, 1)
        q, k = rope(q), rope(k)
        a = torch.softmax(q @ k.transpose(-1, -2) / HD ** 0.5 + mask, -1)
        o = (a @ v).transpose(1, 2).reshape(b, s, HEADS * HD)
        x = x + o @ w[p + "self_attention.linear_proj.weight"].t()
        h = rms(x, w[p + "mlp.linear_fc1.layer_norm_weight"])
        gate, up = (h @ w[p + "mlp.linear_fc1.weight"].t()).chunk(2, -1)
        x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.linear_fc2.weight"].t()
    x = rms(x, w["decoder.final_layernorm.weight"])
    out = w["embedding.word_embeddings.weight"] if tied else w["output_layer.weight"]
    return x @ out.t()


def train(w, tied, steps=3, lr=0.1):
    mom = {n: torch.zeros_like(t) for n, t in w.items()}
    g = torch.Generator().manual_seed(7)
    for _ in range(steps):
        tokens = torch.randint(0, VOCAB, (2, SEQ), generator=g)
        for t in w.values():
            t.requires_grad_(True)
            t.grad = None
        logits = forward(w, tokens, tied)[..., :VOCAB]
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        loss.backward()
        with torch.no_grad():
            for n, t in w.items():
                mom[n].mul_(0.9).add_(t.grad)
                t.sub_(lr * mom[n])
    return {n: t.detach() for n, t in w.items()}, mom


def tp_slice(name, t, rank):
    """This rank's Megatron-Core tp slice of the full tensor, as an llmp Shard."""
    def part(dim):
        return Shard.split(t.chunk(TP, dim)[rank].contiguous(), dim, rank, TP)

    if name.endswith(("linear_qkv.weight", "linear_qkv.bias")):  # query groups split over tp: rows, contiguous per rank
        return part(0)
    if name.endswith("linear_fc1.weight"):  # this rank's gate rows then its up rows
        gate, up = t.chunk(2, 0)
        local = torch.cat([gate.chunk(TP, 0)[rank], up.chunk(TP, 0)[rank]]).contiguous()
        return Shard(local, global_shape=tuple(t.shape), offset=(rank * local.shape[0], 0))
    if name.endswith(("linear_proj.weight", "linear_fc2.weight")):
        return part(1)
    if name in ("embedding.word_embeddings.weight", "output_layer.weight"):
        return part(0)
    return t


def main():
    root, step, ref = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    tied = len(sys.argv) > 4 and sys.argv[4] == "tied"
    bias = len(sys.argv) > 4 and sys.argv[4] == "qwen2"
    ctx = ckpt.init(spec="tp=%d" % TP)
    rank = ctx.rank
    w, mom = train(init(tied, bias), tied)
    state = {"model": {n: tp_slice(n, t, rank) for n, t in w.items()},
             "opt": {"momentum": {n: tp_slice(n, t, rank) for n, t in mom.items()}}}
    ckpt.save(state, root, step)
    if rank == 0:
        tokens = torch.tensor([[3, 14, 15, 9, 26, 5, 35, 8, 49, 7, 0, 42]])
        with torch.no_grad():
            logits = forward(w, tokens, tied)[..., :VOCAB]
        np.savez(ref, tokens=tokens.numpy(), logits=logits.numpy())
    print("llama_tp %d ok" % rank, flush=True)
    ctx.finalize()  # PMIx and mpirun expect it


if __name__ == "__main__":
    main()

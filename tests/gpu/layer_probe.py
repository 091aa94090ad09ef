# SPDX-License-Identifier: BSD-3-Clause
"""A Megatron-like transformer layer in plain PyTorch, measured on a GPU: the bytes
its autograd keeps for the backward and the time of its forward and backward, the
two per-layer terms of llmp's step model (doc/step-model.md) that only a real
kernel and allocator can check.

python3 tests/gpu/layer_probe.py [--device cuda|cpu] [--iters N] CONFIG...
CONFIG  name:hidden=H,heads=A,kv=K,ffn=F,mlp=gelu|swiglu,seq=S,mbs=B,dropout=0|1,layers=L

Each config is run at L and 2L layers; one JSON line each, with the per-layer
figures as the difference of the two divided by L (what the stack's input,
output and launch costs add cancels out). The layer is Megatron's in the form
its fused kernels give it: a pre-norm (LayerNorm for gelu, RMSNorm keeping its
input and one fp32 statistic per token for swiglu), one QKV matrix, causal flash
attention (PyTorch's, forced on CUDA; dropout 0.1 inside it when dropout=1),
the output projection, a hidden dropout keeping a 1-byte mask, the residual add,
the second norm, fc1, GeLU keeping its input or SwiGLU keeping fc1's output
only (Megatron's fused bias_swiglu), fc2, dropout and the residual; bf16 weights
without biases, batch-first so that flash attention's output feeds the
projection without a copy.

Measured per config: saved_bytes, the distinct storages autograd's saved-tensor
hooks see (parameters excluded); on CUDA, the allocator's growth across the
forward and the peak over forward and backward; forward and backward times
(CUDA events, the median of --iters after 3 warm-ups); matmul FLOPs counted here
from the shapes, so the achieved TFLOP/s need no model.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F


class RMSNorm(torch.autograd.Function):
    """y = x / rms(x) * w, keeping x and one fp32 1/rms per token (as fused kernels do)."""

    @staticmethod
    def forward(ctx, x, w, eps):
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, w, rstd)
        return (xf * rstd).to(x.dtype) * w

    @staticmethod
    def backward(ctx, dy):
        x, w, rstd = ctx.saved_tensors
        xf, dyw = x.float(), (dy * w).float()
        xhat = xf * rstd
        dx = rstd * (dyw - xhat * (dyw * xhat).mean(-1, keepdim=True))
        dw = (dy.float() * xhat).sum(dim=tuple(range(dy.dim() - 1)))
        return dx.to(x.dtype), dw.to(w.dtype), None


class SwiGLU(torch.autograd.Function):
    """silu(a) * b from fc1's output [a | b], keeping only that output (Megatron's bias_swiglu)."""

    @staticmethod
    def forward(ctx, ab):
        ctx.save_for_backward(ab)
        a, b = ab.chunk(2, dim=-1)
        return F.silu(a) * b

    @staticmethod
    def backward(ctx, dy):
        (ab,) = ctx.saved_tensors
        a, b = ab.float().chunk(2, dim=-1)
        sig = torch.sigmoid(a)
        dyf = dy.float()
        da = dyf * b * sig * (1 + a * (1 - sig))
        db = dyf * a * sig
        return torch.cat([da, db], dim=-1).to(ab.dtype)


def parse_config(text):
    name, _, keys = text.partition(":")
    c = {"name": name, "kv": None, "mlp": "gelu", "dropout": 1, "mbs": 1, "layers": 2}
    for item in keys.split(","):
        key, eq, value = item.partition("=")
        if not eq or key not in ("hidden", "heads", "kv", "ffn", "mlp", "seq", "mbs", "dropout", "layers"):
            sys.exit("layer_probe: %s: '%s' is not key=value with a known key" % (name, item))
        c[key] = value if key == "mlp" else int(value)
    for key in ("hidden", "heads", "ffn", "seq"):
        if key not in c:
            sys.exit("layer_probe: %s: %s= is missing" % (name, key))
    if c["kv"] is None:
        c["kv"] = c["heads"]
    if c["mlp"] not in ("gelu", "swiglu") or c["hidden"] % c["heads"] or c["heads"] % c["kv"]:
        sys.exit("layer_probe: %s: mlp= must be gelu or swiglu, heads must divide hidden, kv heads" % name)
    return c


def make_layer(c, device, gen):
    h, d = c["hidden"], c["hidden"] // c["heads"]
    kvw = c["kv"] * d
    fc1 = c["ffn"] * (2 if c["mlp"] == "swiglu" else 1)

    def weight(rows, cols):
        w = torch.randn(rows, cols, generator=gen, dtype=torch.float32) * (cols**-0.5)
        return w.to(device=device, dtype=torch.bfloat16).requires_grad_()

    ones = lambda: torch.ones(h, device=device, dtype=torch.bfloat16, requires_grad=True)  # noqa: E731
    return {
        "norm1": ones(),
        "norm2": ones(),
        "qkv": weight(h + 2 * kvw, h),
        "proj": weight(h, h),
        "fc1": weight(fc1, h),
        "fc2": weight(h, c["ffn"]),
    }


def norm(c, x, w):
    if c["mlp"] == "swiglu":
        return RMSNorm.apply(x, w, 1e-5)
    return F.layer_norm(x, (x.shape[-1],), w, None, 1e-5)


def attention(c, q, k, v, p):
    gqa = c["kv"] != c["heads"]
    if q.is_cuda:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            if gqa and not c.get("kv_expanded"):
                try:
                    return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True, enable_gqa=True)
                except RuntimeError:
                    c["kv_expanded"] = True  # this flash kernel has no GQA: K and V repeated, and kept so
            if gqa:
                r = c["heads"] // c["kv"]
                k, v = k.repeat_interleave(r, dim=1), v.repeat_interleave(r, dim=1)
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
    return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True, enable_gqa=gqa)


def layer_forward(c, w, x):
    b, s, h = x.shape
    heads, d = c["heads"], h // c["heads"]
    kvw = c["kv"] * d
    p = 0.1 if c["dropout"] else 0.0
    qkv = F.linear(norm(c, x, w["norm1"]), w["qkv"])
    q = qkv[..., :h].view(b, s, heads, d).transpose(1, 2)
    k = qkv[..., h : h + kvw].view(b, s, c["kv"], d).transpose(1, 2)
    v = qkv[..., h + kvw :].view(b, s, c["kv"], d).transpose(1, 2)
    a = attention(c, q, k, v, p).transpose(1, 2).reshape(b, s, h)
    x = x + F.dropout(F.linear(a, w["proj"]), p)
    y = F.linear(norm(c, x, w["norm2"]), w["fc1"])
    y = SwiGLU.apply(y) if c["mlp"] == "swiglu" else F.gelu(y)
    return x + F.dropout(F.linear(y, w["fc2"]), p)


def layer_flops(c):
    """Forward matmul FLOPs of one layer, counted from the shapes; causal attention is half of 4 s^2 h."""
    h, s, tokens = c["hidden"], c["seq"], c["seq"] * c["mbs"]
    kvw = c["kv"] * h // c["heads"]
    mats = 3 if c["mlp"] == "swiglu" else 2
    return tokens * (2 * (h * (h + 2 * kvw) + h * h + mats * h * c["ffn"]) + 2 * s * h)


def stamp(cuda):
    """A point in time: a CUDA event recorded on the stream, or the host's clock."""
    if not cuda:
        return time.perf_counter()
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    return e


def elapsed_ms(cuda, a, b):
    return a.elapsed_time(b) if cuda else (b - a) * 1e3


def measure(c, layers, device, iters):
    gen = torch.Generator().manual_seed(1234)
    stack = [make_layer(c, device, gen) for _ in range(layers)]
    params = {t.untyped_storage().data_ptr() for w in stack for t in w.values()}
    x = torch.randn(c["mbs"], c["seq"], c["hidden"], generator=gen).to(device=device, dtype=torch.bfloat16)
    x.requires_grad_()
    dy = torch.randn(x.shape, generator=gen).to(device=device, dtype=torch.bfloat16)
    cuda = device.startswith("cuda")

    def forward():
        y = x
        for w in stack:
            y = layer_forward(c, w, y)
        return y

    saved = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params and st.data_ptr() != x.untyped_storage().data_ptr():
            saved[st.data_ptr()] = st.nbytes()
        return t

    # The bytes kept: once, outside the timed runs.
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        y = forward()
        if cuda:
            torch.cuda.synchronize()
            grown = torch.cuda.memory_allocated() - before
        y.backward(dy)
        if cuda:
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - before
    out = {"layers": layers, "saved_bytes": sum(saved.values()), "saved_storages": len(saved)}
    if cuda:
        out["allocated_growth_bytes"] = grown
        out["peak_bytes"] = peak
    del y

    fwd, bwd = [], []
    for i in range(3 + iters):
        for w in stack:
            for t in w.values():
                t.grad = None
        x.grad = None
        marks = [stamp(cuda)]
        y = forward()
        marks.append(stamp(cuda))
        y.backward(dy)
        marks.append(stamp(cuda))
        if cuda:
            torch.cuda.synchronize()
        del y
        if i >= 3:
            fwd.append(elapsed_ms(cuda, marks[0], marks[1]))
            bwd.append(elapsed_ms(cuda, marks[1], marks[2]))
    out["forward_ms"] = statistics.median(fwd)
    out["backward_ms"] = statistics.median(bwd)
    del stack, x, dy
    if cuda:
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("configs", nargs="+")
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("layer_probe: no CUDA device (use --device cpu for a run of the mechanics)")
    device_name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    for text in args.configs:
        c = parse_config(text)
        try:
            one = measure(c, c["layers"], args.device, args.iters)
            two = measure(c, 2 * c["layers"], args.device, args.iters)
        except RuntimeError as e:
            print(json.dumps({"config": c, "device": device_name, "error": str(e).splitlines()[0]}), flush=True)
            continue
        n = c["layers"]
        per = {k: (two[k] - one[k]) / n for k in one if k not in ("layers", "saved_storages")}
        flops = layer_flops(c)
        ms = per["forward_ms"] + per["backward_ms"]
        line = {
            "config": c,
            "device": device_name,
            "torch": torch.__version__,
            "runs": [one, two],
            "per_layer": per,
            "forward_flops": flops,
            "tflops_fwd_bwd": 3 * flops / (ms * 1e-3) / 1e12 if ms > 0 else None,
        }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()

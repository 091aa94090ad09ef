#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench_export.py - `llmp ckpt export --format hf` against reading the checkpoint.

Goal: the export within 2x of reading the same checkpoint's model tensors
(time export / time read <= 2). One process saves a Llama-shaped model in
Megatron-Core's names (fused linear_qkv and linear_fc1, a vocabulary padded
to a multiple of 128) through llmp.checkpoint as a PMIx singleton, in
--save-dtype (fp32: the optimizer's masters; bf16: the model's own), with
the same tensors again under opt/ (left out by the export, not read by the
baseline). Then, alternately for --rounds rounds, each in a new process:

    read      h5py reads every model tensor whole from index.h5 (the global
              view the export reads) into NumPy, as a user's converter would
    kept      the same read into one buffer allocated once (h5py's read_direct),
              64 MiB at a time, as the export reads: the floor of reading
    copy      read, and each tensor's bytes written to one file in --out-dir,
              fsynced: the floor of any export that writes fp32
    export    llmp.export.export_hf into a new directory (fsynced, renamed),
              --dtype bf16 (the default) and fp32

Exports and copies go to --out-dir (default --dir); /dev/shm takes the
disk's write speed out of the figure. The page cache is warm (the checkpoint was just written and is read every
round): the figures are the software's cost, not the disk's. GB = 1e9 bytes
of the model's tensors as saved. Each process's peak resident memory
(VmHWM) is printed too: the export streams in 64 MiB blocks, so it stays
flat as the model grows.

    LLMP_LIBRARY=build/runtime/.libs/libllmp.so.0 build/venv/bin/python python/bench_export.py \\
        --layers 4 --hidden 2048 --ffn 5632 --vocab 32000 --rounds 3 --dir /tmp [--out-dir /dev/shm]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def model_tensors(a):
    hd = a.hidden // a.heads
    padded = (a.vocab + 127) // 128 * 128
    shapes = {"embedding.word_embeddings.weight": (padded, a.hidden), "output_layer.weight": (padded, a.hidden),
              "decoder.final_layernorm.weight": (a.hidden,)}
    for i in range(a.layers):
        p = "decoder.layers.%d." % i
        shapes[p + "self_attention.linear_qkv.layer_norm_weight"] = (a.hidden,)
        shapes[p + "self_attention.linear_qkv.weight"] = ((a.heads + 2 * a.kv_heads) * hd, a.hidden)
        shapes[p + "self_attention.linear_proj.weight"] = (a.hidden, a.heads * hd)
        shapes[p + "mlp.linear_fc1.layer_norm_weight"] = (a.hidden,)
        shapes[p + "mlp.linear_fc1.weight"] = (2 * a.ffn, a.hidden)
        shapes[p + "mlp.linear_fc2.weight"] = (a.hidden, a.ffn)
    return shapes


def spec(a):
    return "layers=%d,hidden=%d,ffn=%d,heads=%d,kv-heads=%d,vocab=%d" % (
        a.layers, a.hidden, a.ffn, a.heads, a.kv_heads, a.vocab)


def save(a, root):
    import torch
    import llmp.checkpoint as ckpt
    dtype = torch.float32 if a.save_dtype == "fp32" else torch.bfloat16
    g = torch.Generator().manual_seed(1)
    model = {n: (torch.randn(*s, generator=g) * 0.02).to(dtype) for n, s in model_tensors(a).items()}
    ckpt.save({"model": model, "opt": {"exp_avg": model}}, root, 1)
    return sum(t.numel() * t.element_size() for t in model.values())


def child(a):
    """One measured run in this process: prints a JSON line."""
    t0 = time.perf_counter()
    if a.child == "kept":
        import h5py
        import numpy as np
        buf = np.empty(16 << 20, np.float32)
        with h5py.File(os.path.join(a.root, "step-1", "index.h5"), "r") as f:
            for name in model_tensors(a):
                ds = f["model/" + name]
                row = int(np.prod(ds.shape[1:]))
                step = max(1, buf.size // row)
                for r in range(0, ds.shape[0], step):
                    n = min(step, ds.shape[0] - r)
                    ds.read_direct(buf[:n * row].reshape((n,) + ds.shape[1:]), np.s_[r:r + n], None)
    elif a.child in ("read", "copy"):
        import h5py
        out = open(a.out, "wb") if a.child == "copy" else None
        with h5py.File(os.path.join(a.root, "step-1", "index.h5"), "r") as f:
            for name in model_tensors(a):
                t = f["model/" + name][...]
                if out:
                    out.write(memoryview(t).cast("B"))
        if out:
            out.flush()
            os.fsync(out.fileno())
            out.close()
    else:
        import llmp.export
        llmp.export.export_hf(a.root, a.out, spec(a), dtype=a.child)
    dt = time.perf_counter() - t0
    with open("/proc/self/status") as f:  # VmHWM: this process's own peak (ru_maxrss keeps the parent's)
        hwm = next((int(l.split()[1]) for l in f if l.startswith("VmHWM:")), 0)
    print(json.dumps({"seconds": dt, "maxrss_mib": hwm / 1024}))


def run_child(a, what, out=None):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", what, "--root", a.root,
           "--layers", str(a.layers), "--hidden", str(a.hidden), "--ffn", str(a.ffn), "--heads", str(a.heads),
           "--kv-heads", str(a.kv_heads), "--vocab", str(a.vocab)]
    if out:
        cmd += ["--out", out]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--ffn", type=int, default=5632)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--save-dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--out-dir", help="where the exports and copies are written (default: --dir)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)
    work = tempfile.mkdtemp(prefix="bench-export-", dir=a.dir)
    try:
        a.root = os.path.join(work, "ckpt")
        t0 = time.perf_counter()
        size = save(a, a.root)
        print("bench_export: %s, model %.3f GB as saved (%s), saved with opt/ in %.1f s" % (
            spec(a), size / 1e9, a.save_dtype, time.perf_counter() - t0), flush=True)
        rows = {"read": [], "kept": [], "copy": [], "bf16": [], "fp32": []}
        outs = tempfile.mkdtemp(prefix="bench-export-out-", dir=a.out_dir or a.dir)
        rss = {}
        print("%-6s %-8s %9s %9s %11s" % ("round", "run", "seconds", "GB/s", "maxrss MiB"))
        for r in range(a.rounds):
            for what in rows:
                out = os.path.join(outs, "hf-%s-%d" % (what, r)) if what not in ("read", "kept") else None
                got = run_child(a, what, out)
                rows[what].append(got["seconds"])
                rss[what] = max(rss.get(what, 0), got["maxrss_mib"])
                print("%-6d %-8s %9.3f %9.3f %11.0f" % (r, what, got["seconds"], size / 1e9 / got["seconds"],
                                                       got["maxrss_mib"]), flush=True)
                if out and os.path.isdir(out):
                    shutil.rmtree(out)
                elif out:
                    os.unlink(out)
        med = {k: statistics.median(v) for k, v in rows.items()}
        for what in ("bf16", "fp32"):
            print("bench_export: export --dtype %s %.3f s (%.3f GB/s), read %.3f s (%.3f GB/s): %.2fx the read "
                  "(goal <= 2x) %s; peak RSS %.0f MiB (read %.0f MiB)" % (
                      what, med[what], size / 1e9 / med[what], med["read"], size / 1e9 / med["read"],
                      med[what] / med["read"], "met" if med[what] <= 2 * med["read"] else "NOT met",
                      rss[what], rss["read"]))
            print("bench_export: export --dtype %s best of the rounds %.3f s, read's best %.3f s: %.2fx"
                  % (what, min(rows[what]), min(rows["read"]), min(rows[what]) / min(rows["read"])))
            print("bench_export: export --dtype %s %.2fx the read into a kept buffer (%.3f s)"
                  % (what, med[what] / med["kept"], med["kept"]))
            print("bench_export: export --dtype %s %.2fx the copy (read + write + fsync of the fp32 bytes, %.3f s)"
                  % (what, med[what] / med["copy"], med["copy"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if "outs" in locals():
            shutil.rmtree(outs, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

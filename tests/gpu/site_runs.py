# SPDX-License-Identifier: BSD-3-Clause
"""A site's own jobs on a GPU, through `llmp calibrate` (scripts/gpu-run.sh).

python3 tests/gpu/site_runs.py LLMP ROOT

Trains a small GPT on this GPU once per shape below, each run a job as a
site's would be: llmp.Job with LLMP_MODEL, LLMP_GPU and LLMP_METRICS set, so
that its metrics directory records the model, the layout, the step time and
the allocator's peak. The model is tests/gpu/layer_probe.py's Megatron-like
layer under an embedding, a final norm, an untied output layer and the
cross-entropy, trained as Megatron's mixed precision does on one GPU: bf16
weights, gradients accumulated over the micro-batches in fp32, Adam on fp32
master weights, the bf16 weights copied back.

Then `llmp calibrate` fits the site's constants from the five FIT runs' metrics
directories alone, and `llmp plan` scores every run with the stated GPU and
with the calibrated one. Prints, per run, the measured step and peak (from
the metrics file) against both models, and the median step error of the
held-out runs before and after. What the model's error is, is a figure
to read: nothing here asserts it; the exit status is 1 only when a run,
calibrate or plan fails.
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# name, role, model text (what llmp plan and llmp calibrate read)
RUNS = [
    ("g2k-m1", "fit", "layers=8,hidden=2048,heads=16,ffn=8192,vocab=32000,seq=2048,gbs=8,mbs=1"),
    ("g2k-m2", "fit", "layers=8,hidden=2048,heads=16,ffn=8192,vocab=32000,seq=2048,gbs=8,mbs=2"),
    ("g4k", "fit", "layers=4,hidden=4096,heads=32,ffn=16384,vocab=32000,seq=2048,gbs=4,mbs=1"),
    ("g1k-s8k", "fit", "layers=8,hidden=1024,heads=8,ffn=4096,vocab=32000,seq=8192,gbs=4,mbs=1"),
    ("l3k-swiglu", "fit",
     "layers=4,hidden=3072,heads=24,kv-heads=8,ffn=8192,mlp=swiglu,vocab=32000,seq=2048,gbs=8,mbs=1"),
    ("g1k-deep", "held-out", "layers=16,hidden=1024,heads=16,ffn=4096,vocab=32000,seq=2048,gbs=16,mbs=4"),
    ("g3k-s4k", "held-out", "layers=6,hidden=3072,heads=24,ffn=12288,vocab=32000,seq=4096,gbs=4,mbs=1"),
    ("l2k-swiglu", "held-out",
     "layers=8,hidden=2048,heads=16,kv-heads=4,ffn=5632,mlp=swiglu,vocab=32000,seq=4096,gbs=8,mbs=2"),
]
COMMON = ",dropout=0,tied=0"
STEPS, WARMUP = 8, 3


def model_keys(text):
    return dict(item.split("=") for item in text.split(","))


def child(text):
    import torch
    import torch.nn.functional as F
    import llmp
    from layer_probe import layer_forward, make_layer, norm

    dev = "cuda" if torch.cuda.is_available() else "cpu"   # cpu: a run of the mechanics only
    k = model_keys(text)
    c = {"hidden": int(k["hidden"]), "heads": int(k["heads"]), "kv": int(k.get("kv-heads", k["heads"])),
         "ffn": int(k["ffn"]), "mlp": k.get("mlp", "gelu"), "seq": int(k["seq"]), "mbs": int(k["mbs"]),
         "dropout": 0}
    vocab, layers, gbs = int(k["vocab"]), int(k["layers"]), int(k["gbs"])
    gen = torch.Generator().manual_seed(7)

    def weight(rows, cols):
        w = torch.randn(rows, cols, generator=gen) * cols**-0.5
        return w.to(device=dev, dtype=torch.bfloat16).requires_grad_()

    stack = [make_layer(c, dev, gen) for _ in range(layers)]
    emb, out = weight(vocab, c["hidden"]), weight(vocab, c["hidden"])
    final = torch.ones(c["hidden"], device=dev, dtype=torch.bfloat16, requires_grad=True)
    params = [emb, out, final] + [t for w in stack for t in w.values()]
    master = [p.detach().float().clone().requires_grad_() for p in params]
    for m in master:
        m.grad = torch.zeros_like(m)
    opt = torch.optim.Adam(master, lr=1e-4, fused=dev == "cuda")

    def step():
        for _ in range(gbs // c["mbs"]):
            tokens = torch.randint(0, vocab, (c["mbs"], c["seq"] + 1), device=dev)
            x = F.embedding(tokens[:, :-1], emb)
            for w in stack:
                x = layer_forward(c, w, x)
            logits = F.linear(norm(c, x, final), out)
            loss = F.cross_entropy(logits.float().view(-1, vocab), tokens[:, 1:].reshape(-1))
            loss.backward()
            for p, m in zip(params, master):
                m.grad.add_(p.grad)
                p.grad = None
        opt.step()
        with torch.no_grad():
            for p, m in zip(params, master):
                p.copy_(m)
                m.grad.zero_()
        if dev == "cuda":
            torch.cuda.synchronize()

    for _ in range(WARMUP):   # before the job: cuBLAS's and flash attention's first calls are not a step
        step()
    job = llmp.Job({"tick": torch.zeros(1)})
    first, _ = job.resume()
    t0 = time.perf_counter()
    for s in range(first, first + STEPS):
        step()
        job.step_end(s)
    own = (time.perf_counter() - t0) / STEPS
    peak = torch.cuda.max_memory_reserved() / 2**30 if dev == "cuda" else 0
    print(json.dumps({"own_step_s": own, "max_reserved_gib": peak}), flush=True)
    sys.exit(job.finish())


def plan(llmp, text, gpu):
    r = subprocess.run([llmp, "plan", "--world", "1", "--parallel", "tp=1", "--model", text, "--gpu", gpu,
                        "--format", "json"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit("site-runs: llmp plan --model %s --gpu %s: %s" % (text, gpu, r.stderr.strip()))
    d = json.loads(r.stdout)
    return d["step_seconds"], d["memory"]["peak_bytes"] / 2**30


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    llmp, root = sys.argv[1], sys.argv[2]
    os.makedirs(root, exist_ok=True)
    measured = {}
    for name, _, text in RUNS:
        text += COMMON
        metrics = os.path.join(root, "m-" + name)
        env = dict(os.environ, LLMP_MODEL=text, LLMP_GPU="h200", LLMP_METRICS=metrics + ",every=0",
                   LLMP_CHECKPOINT=os.path.join(root, "ck-" + name))
        r = subprocess.run([sys.executable, __file__, "--child", text], env=env, capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 0:
            sys.exit("site-runs: %s exited %d: %s" % (name, r.returncode, (r.stdout + r.stderr)[-2000:]))
        own = json.loads(r.stdout.strip().splitlines()[-1])
        with open(os.path.join(metrics, "rank-00000.jsonl")) as f:
            rec = json.loads(f.read().splitlines()[-1])
        measured[name] = (rec["step_s"] / rec["steps"], rec.get("peak_gib"), own)
        print("site-runs: %s: %d steps, %.4f s a step (own clock %.4f), peak %s GiB by %s"
              % (name, rec["steps"], measured[name][0], own["own_step_s"], rec.get("peak_gib"), rec.get("peak_by")),
              flush=True)
    fit_dirs = [os.path.join(root, "m-" + name) for name, role, _ in RUNS if role == "fit"]
    conf = os.path.join(root, "site.conf")
    r = subprocess.run([llmp, "calibrate", "-o", conf] + fit_dirs, capture_output=True, text=True, timeout=60)
    print(r.stdout + r.stderr, end="")
    if r.returncode != 0:
        sys.exit("site-runs: llmp calibrate exited %d" % r.returncode)
    with open(conf) as f:
        site_gpu = f.read().split()[0].split("=", 1)[1]   # "gpu=TEXT guard_band=X": the --gpu text
    print("# run          role       step s   stated   err   calibrated   err   peak GiB   stated calibrated")
    errors = {"stated": [], "calibrated": []}
    mem_errors = {"stated": [], "calibrated": []}
    for name, role, text in RUNS:
        text += COMMON
        step_s, peak, _ = measured[name]
        row = []
        for label, gpu in (("stated", "h200"), ("calibrated", site_gpu)):
            s, m = plan(llmp, text, gpu)
            err = (s - step_s) / step_s
            if role == "held-out":
                errors[label].append(abs(err))
                if peak:
                    mem_errors[label].append(m / peak - 1)
            row.append((s, err, m))
        print("%-14s %-9s %7.4f  %7.4f %+5.0f%%  %7.4f %+5.0f%%   %8s   %6.1f %6.1f"
              % (name, role, step_s, row[0][0], 100 * row[0][1], row[1][0], 100 * row[1][1],
                 "%.2f" % peak if peak else "-", row[0][2], row[1][2]))
    print("site-runs: held-out median step error: stated %.1f%%, calibrated %.1f%% (calibrated text: %s)"
          % (100 * statistics.median(errors["stated"]), 100 * statistics.median(errors["calibrated"]), site_gpu))
    for label, errs in mem_errors.items():
        print("site-runs: held-out peak error, %s: %s" % (label, ", ".join("%+.1f%%" % (100 * e) for e in errs)))


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: BSD-3-Clause
"""bench_groups.py - the time and the torch calls llmp.torch takes to make a
rank's process groups, by each method: "local" (a rank's own groups only),
"split" (one dist.split_group per kind) and "all" (new_group for every group
on every rank, Megatron-Core's way).

    python bench_groups.py [--ranks 8,16] [--parallel tp=2,pp=2,cp=2]
                           [--methods local,split,all] [--iters 3] [--llmp PATH]

Starts a local job of one process per rank (gloo on loopback, env:// as the
llm_parallel plugin sets it up) for each rank count, on a layout file
`llmp plan` writes. In the job every method runs --iters times, alternately;
each run starts after a barrier and ends, on each rank, when create_groups
returns (its groups made); the figure is the slowest rank's time, median over
the runs; the groups are destroyed between runs. Prints one row per rank
count and method: calls per rank (fewest-most), all groups of the layout,
the median time in ms.

The tool is --llmp, else $LLMP_BUILDDIR/cli/llmp, else `llmp` on PATH.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(outdir, methods, iters):
    import torch
    import torch.distributed as dist

    import llmp
    import llmp.torch

    dist.init_process_group("gloo", init_method="env://")
    lay = llmp.layout()
    rank = dist.get_rank()
    times = {m: [] for m in methods}
    calls = {}
    for _ in range(iters):
        for method in methods:
            dist.barrier()
            start = time.perf_counter()
            groups = llmp.torch.create_groups(lay, method=method)
            times[method].append(time.perf_counter() - start)
            calls[method] = groups.calls
            # Every rank's groups are made before any is destroyed.
            dist.barrier()
            for kind in groups:
                if groups.member(kind):
                    dist.destroy_process_group(groups[kind])
    groups_all = sum(len(g) for g in lay.groups.values())
    with open(os.path.join(outdir, "rank%d.json" % rank), "w") as f:
        json.dump({"times": times, "calls": calls, "groups": groups_all,
                   "torch": torch.__version__}, f)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def llmp_tool(given):
    if given:
        return given
    builddir = os.environ.get("LLMP_BUILDDIR")
    if builddir:
        return os.path.join(builddir, "cli", "llmp")
    found = shutil.which("llmp")
    if not found:
        sys.exit("bench_groups: no llmp tool: give --llmp PATH or set LLMP_BUILDDIR")
    return found


def run_job(tool, world, spec, methods, iters, workdir, timeout):
    layout = os.path.join(workdir, "layout-%d.json" % world)
    with open(layout, "w") as f:
        subprocess.run([tool, "plan", "--world", str(world), "--parallel", spec, "--format", "json"],
                       stdout=f, check=True)
    outdir = os.path.join(workdir, "out-%d" % world)
    os.makedirs(outdir)
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   LLMP_RANK=str(rank), LLMP_LAYOUT_FILE=layout, GLOO_SOCKET_IFNAME="lo",
                   OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="",
                   PYTHONPATH=os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", outdir,
                                       "--methods", ",".join(methods), "--iters", str(iters)], env=env))
    deadline = time.monotonic() + timeout
    for p in procs:
        p.wait(timeout=max(1, deadline - time.monotonic()))
    failed = [r for r, p in enumerate(procs) if p.returncode != 0]
    if failed:
        sys.exit("bench_groups: %d ranks: ranks %s failed" % (world, failed))
    results = []
    for rank in range(world):
        with open(os.path.join(outdir, "rank%d.json" % rank)) as f:
            results.append(json.load(f))
    return results


def report(world, spec, methods, iters, results):
    for method in methods:
        slowest = [max(r["times"][method][i] for r in results) for i in range(iters)]
        calls = [r["calls"][method] for r in results]
        print("| %d | %s | %s | %d-%d | %d | %.0f |"
              % (world, spec, method, min(calls), max(calls), results[0]["groups"],
                 1e3 * statistics.median(slowest)))
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="8,16")
    ap.add_argument("--parallel", default="tp=2,pp=2,cp=2")
    ap.add_argument("--methods", default="local,split,all")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--llmp", default=None, help="the llmp tool (for `llmp plan`)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds a job may take")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    methods = args.methods.split(",")
    if args.worker:
        worker(args.worker, methods, args.iters)
        return
    tool = llmp_tool(args.llmp)
    print("| ranks | layout | method | calls per rank | groups in layout "
          "| create ms (slowest rank, median of %d) |" % args.iters)
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench_groups.") as workdir:
        for world in (int(n) for n in args.ranks.split(",")):
            results = run_job(tool, world, args.parallel, methods, args.iters, workdir, args.timeout)
            report(world, args.parallel, methods, args.iters, results)


if __name__ == "__main__":
    main()

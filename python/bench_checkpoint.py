#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench_checkpoint.py - the bandwidth of saving a torch state dict through llmp.checkpoint.

Measured against its goals (doc/benchmarks.md), with the same bytes per rank:

    llmp.checkpoint save   vs  the C API (`llmp ckpt bench`'s save, llmp_ckpt_save)   >= 0.9x
    llmp.checkpoint save   vs  torch.save of the rank's state dict, then fsync        >= 2x

The model is `llmp ckpt bench`'s: --tensors float32 matrices of --cols
columns, --size bytes in all, rows split across the ranks. Each round runs
`llmp ckpt bench` (its own process or job) and then this script's worker,
alternately, so both see the same machine state; a figure is the median of
--iters saves in a worker, and the table gives every round. The worker times:

    ckpt.save       Checkpoint.save on a handle made once (as a training loop does)
    save()          llmp.checkpoint.save(): open, register, save, close each time
    torch.save      torch.save(state_dict, file) + fsync (plain: without the fsync)
    async stall     Checkpoint.save(async_save=True): how long the call blocks (after prepare_async)

The time is rank 0's from the call to its return (a save is collective and
rank 0 commits it last). GB = 1e9 bytes of the whole model.

    python/bench_checkpoint.py --llmp BUILD/cli/llmp --ranks 2 --size 256M --rounds 3 --dir /tmp

With --dcp it compares instead torch.distributed.checkpoint's dcp.save of the
same tensors (DTensors cut in rows over a 1-D mesh of the ranks, gloo; one
rank: plain tensors, no process group) through llmp.checkpoint.DcpWriter and
through DCP's own FileSystemWriter (a file per rank, fsynced, .metadata last),
alternately, each save into a new directory, loaded back in place (DcpReader,
FileSystemReader; from the page cache), then removed outside the timings:

    python/bench_checkpoint.py --dcp --ranks 2 --size 256M --rounds 3 --dir /tmp
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text)
    if not m:
        raise argparse.ArgumentTypeError("size %r: expected digits and K, M or G" % text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def worker(args):
    import torch

    import llmp.checkpoint as ckpt

    ctx = ckpt.init()
    rows = args.size // 4 // args.cols // args.tensors
    mine = rows // ctx.world
    g = torch.Generator().manual_seed(ctx.rank)
    local = {"layer%d.weight" % i: torch.rand(mine, args.cols, generator=g) for i in range(args.tensors)}
    sd = {k: ckpt.Shard(v, (mine * ctx.world, args.cols), (mine * ctx.rank, 0)) for k, v in local.items()}
    rank_bytes = sum(t.numel() * t.element_size() for t in local.values())
    times = {"ckpt.save": [], "save()": [], "torch.save": [], "torch.save plain": [], "async stall": []}
    step = 0
    keep = 1 << 30  # no retention inside the timed saves: old steps are removed between them,
    handle_root, fn_root = os.path.join(args.dir, "handle"), os.path.join(args.dir, "fn")

    def remove(root, step):  # as `llmp ckpt bench` removes its steps outside its timings
        if ctx.rank == 0:
            shutil.rmtree(os.path.join(root, "step-%d" % step))

    with ckpt.Checkpoint(handle_root, sd, keep=keep) as c:
        c.save(step)  # the first save plans (gathers every rank's slices); later ones do not
        remove(handle_root, step)
        c.prepare_async()  # staging memory allocated before the timed async saves, as llmp_job_resume does
        for _ in range(args.iters):
            step += 1
            t0 = time.perf_counter()
            c.save(step)
            times["ckpt.save"].append(time.perf_counter() - t0)
            remove(handle_root, step)
            t0 = time.perf_counter()
            ckpt.save(sd, fn_root, step, keep=keep)
            times["save()"].append(time.perf_counter() - t0)
            remove(fn_root, step)
            step += 1
            t0 = time.perf_counter()
            c.save(step, async_save=True)
            times["async stall"].append(time.perf_counter() - t0)
            c.wait()
            remove(handle_root, step)
            for plain in (False, True):
                path = os.path.join(args.dir, "torch-%d.pt" % ctx.rank)
                t0 = time.perf_counter()
                with open(path, "wb") as f:
                    torch.save(local, f)
                    if not plain:
                        f.flush()
                        os.fsync(f.fileno())
                times["torch.save plain" if plain else "torch.save"].append(time.perf_counter() - t0)
                os.unlink(path)
    if ctx.rank == 0:
        print(json.dumps({"world": ctx.world, "rank_bytes": rank_bytes,
                          "model_bytes": rank_bytes * ctx.world,
                          "median_s": {k: statistics.median(v) for k, v in times.items()}}), flush=True)
    ctx.finalize()


def dcp_worker(args):
    """dcp.save through DcpWriter and through FileSystemWriter, alternately; rank 0 prints medians."""
    import warnings

    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp

    import llmp.checkpoint as ckpt

    warnings.simplefilter("ignore")  # DCP's note on each save without a process group
    ctx = ckpt.init()
    rows = args.size // 4 // args.cols // args.tensors
    mine = rows // ctx.world
    g = torch.Generator().manual_seed(ctx.rank)
    local = {"layer%d.weight" % i: torch.rand(mine, args.cols, generator=g) for i in range(args.tensors)}
    sd = local
    if ctx.world > 1:
        os.environ.setdefault("RANK", str(ctx.rank))
        os.environ.setdefault("WORLD_SIZE", str(ctx.world))
        dist.init_process_group("gloo")
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import DTensor, Shard
        mesh = init_device_mesh("cpu", (ctx.world,))
        sd = {k: DTensor.from_local(v, mesh, [Shard(0)]) for k, v in local.items()}
    rank_bytes = sum(t.numel() * t.element_size() for t in local.values())
    times = {"DcpWriter": [], "FileSystemWriter": [], "DcpReader": [], "FileSystemReader": []}
    llmp_root = os.path.join(args.dir, "dcp-llmp")

    def timed(key, writer, rkey, reader, remove):
        t0 = time.perf_counter()
        dcp.save(sd, storage_writer=writer)
        times[key].append(time.perf_counter() - t0)
        t0 = time.perf_counter()  # the load, in place, of what was just saved (from the page cache)
        dcp.load(sd, storage_reader=reader)
        times[rkey].append(time.perf_counter() - t0)
        if ctx.world > 1:
            dist.barrier()  # every rank has read it
        if ctx.rank == 0:
            shutil.rmtree(remove)

    for step in range(args.iters + 1):  # the first of each is a warm-up, not counted
        timed("DcpWriter", ckpt.DcpWriter(llmp_root, step=step, keep=1 << 30),
              "DcpReader", ckpt.DcpReader(llmp_root, step=step), os.path.join(llmp_root, "step-%d" % step))
        fs_dir = os.path.join(args.dir, "dcp-fs-%d" % step)
        timed("FileSystemWriter", dcp.FileSystemWriter(fs_dir), "FileSystemReader", dcp.FileSystemReader(fs_dir),
              fs_dir)
    if ctx.rank == 0:
        print(json.dumps({"world": ctx.world, "rank_bytes": rank_bytes,
                          "model_bytes": rank_bytes * ctx.world,
                          "median_s": {k: statistics.median(v[1:]) for k, v in times.items()}}), flush=True)
    if ctx.world > 1:
        dist.destroy_process_group()
    ctx.finalize()


def launcher(ranks):
    if ranks == 1:
        return []
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)]


def singleton_env():
    env = dict(os.environ)
    for k in ("PMIX_RANK", "PMIX_NAMESPACE", "PMIX_SERVER_URI41", "SLURM_JOB_ID"):
        env.pop(k, None)
    env["PYTHONPATH"] = HERE + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def c_save_gbps(args, workdir):
    """`llmp ckpt bench`'s save line: (bytes, ms, GB/s)."""
    cmd = launcher(args.ranks) + [args.llmp, "ckpt", "bench", "--size", str(args.size), "--tensors",
                                  str(args.tensors), "--cols", str(args.cols), "--iters", str(args.iters),
                                  "--dir", workdir]
    out = subprocess.run(cmd, env=singleton_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, check=False)
    m = re.search(r"^\s*save\s+(\d+)\s+([\d.]+)\s+([\d.]+)", out.stdout, re.M)
    if out.returncode != 0 or not m:
        sys.exit("bench_checkpoint: %s failed (exit %d):\n%s" % (" ".join(cmd), out.returncode, out.stdout))
    return int(m.group(1)), float(m.group(2)) / 1e3


def py_times(args, workdir):
    env = singleton_env()
    if args.dcp and args.ranks > 1:  # torch.distributed's rendezvous for the gloo group
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    cmd = launcher(args.ranks)
    if args.dcp and args.ranks > 1:
        cmd += ["-x", "MASTER_ADDR", "-x", "MASTER_PORT", "-x", "GLOO_SOCKET_IFNAME"]
    cmd += [sys.executable, os.path.abspath(__file__), "--dcp-worker" if args.dcp else "--worker",
            "--size", str(args.size),
                                  "--tensors", str(args.tensors), "--cols", str(args.cols),
                                  "--iters", str(args.iters), "--dir", workdir]
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, check=False)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        sys.exit("bench_checkpoint: %s failed (exit %d):\n%s" % (" ".join(cmd), out.returncode, out.stdout))
    return json.loads(lines[-1])


def dcp_main(args):
    print("# bench_checkpoint --dcp: %d rank(s), model %d MiB (%d float32 tensors x %d columns), %d saves "
          "each per round, medians; GB = 1e9 bytes"
          % (args.ranks, args.size >> 20, args.tensors, args.cols, args.iters))
    print("# round  DcpWriter GB/s  FileSystemWriter GB/s  DcpWriter/FileSystemWriter  DcpWriter ms  "
          "FileSystemWriter ms  DcpReader GB/s  FileSystemReader GB/s")
    for r in range(args.rounds):
        workdir = tempfile.mkdtemp(prefix="llmp-dcp-bench-", dir=args.dir)
        try:
            os.chmod(workdir, 0o755)
            py = py_times(args, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        gb, m = py["model_bytes"] / 1e9, py["median_s"]
        print("  %d      %8.3f        %8.3f               %5.2f                  %7.1f       %7.1f"
              "          %8.3f         %8.3f"
              % (r + 1, gb / m["DcpWriter"], gb / m["FileSystemWriter"],
                 m["FileSystemWriter"] / m["DcpWriter"], 1e3 * m["DcpWriter"], 1e3 * m["FileSystemWriter"],
                 gb / m["DcpReader"], gb / m["FileSystemReader"]),
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llmp", help="the llmp tool (BUILD/cli/llmp) for the C API's figure")
    ap.add_argument("--ranks", type=int, default=1, help="ranks (mpirun -np) (default 1: a singleton)")
    ap.add_argument("--size", type=parse_size, default=parse_size("256M"), help="model bytes (default 256M)")
    ap.add_argument("--tensors", type=int, default=8)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--iters", type=int, default=5, help="saves per worker; figures are medians")
    ap.add_argument("--rounds", type=int, default=3, help="C, then Python, this many times")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the files go")
    ap.add_argument("--dcp", action="store_true",
                    help="dcp.save through llmp.checkpoint.DcpWriter against DCP's FileSystemWriter")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dcp-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if args.dcp_worker:
        return dcp_worker(args)
    if args.dcp:
        return dcp_main(args)
    if not args.llmp:
        ap.error("--llmp BUILD/cli/llmp is needed for the C API's figure")
    print("# bench_checkpoint: %d rank(s), model %d MiB (%d float32 tensors x %d columns), %d saves per "
          "worker, medians; GB = 1e9 bytes" % (args.ranks, args.size >> 20, args.tensors, args.cols, args.iters))
    print("# round  C save GB/s  ckpt.save GB/s  save() GB/s  torch.save+fsync GB/s  torch.save GB/s"
          "  ckpt.save/C  ckpt.save/torch.save+fsync  async stall ms  torch.save+fsync ms")
    for r in range(args.rounds):
        workdir = tempfile.mkdtemp(prefix="llmp-ckpy-bench-", dir=args.dir)
        try:
            os.chmod(workdir, 0o755)
            cbytes, cs = c_save_gbps(args, workdir)
            py = py_times(args, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if cbytes != py["model_bytes"]:
            sys.exit("bench_checkpoint: the C bench saved %d bytes, the Python one %d" % (cbytes, py["model_bytes"]))
        gb = py["model_bytes"] / 1e9
        m = py["median_s"]
        c_gbps = gb / cs
        print("  %d      %8.3f     %8.3f       %8.3f        %8.3f             %8.3f        %5.2f        %5.2f"
              "                  %7.1f          %7.1f"
              % (r + 1, c_gbps, gb / m["ckpt.save"], gb / m["save()"], gb / m["torch.save"],
                 gb / m["torch.save plain"], cs / m["ckpt.save"], m["torch.save"] / m["ckpt.save"],
                 1e3 * m["async stall"], 1e3 * m["torch.save"]), flush=True)


if __name__ == "__main__":
    sys.exit(main())

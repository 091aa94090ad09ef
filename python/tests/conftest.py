# SPDX-License-Identifier: BSD-3-Clause
"""conftest.py - what the Python package's tests share: real layout files from
the built `llmp plan`, the groups Megatron-Core's RankGenerator makes for a
layout (its rules written out here, independently of llmp), and a launcher
that starts a local torch.distributed job of one process per rank.

The tool is $LLMP_BUILDDIR/cli/llmp (make check exports LLMP_BUILDDIR) or
$LLMP_BIN; a missing tool fails the tests, it does not skip them.
"""

import json
import os
import random
import signal
import socket
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)  # python/, which holds llmp/


def llmp_tool():
    path = os.environ.get("LLMP_BIN")
    if not path:
        builddir = os.environ.get("LLMP_BUILDDIR")
        if not builddir:
            pytest.fail("neither LLMP_BIN nor LLMP_BUILDDIR is set: cannot find the llmp tool")
        path = os.path.join(builddir, "cli", "llmp")
    if not os.access(path, os.X_OK):
        pytest.fail("the llmp tool is not built at %s" % path)
    return path


def plan_json(world, spec, rank=None):
    """The document `llmp plan --format json` prints, as text."""
    cmd = [llmp_tool(), "plan", "--world", str(world), "--format", "json"]
    if spec:
        cmd += ["--parallel", spec]
    if rank is not None:
        cmd += ["--rank", str(rank)]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 0, "%s failed: %s" % (" ".join(cmd), done.stderr)
    return done.stdout


@pytest.fixture
def layout_file(tmp_path):
    """layout_file(world, spec[, rank]) -> path of a layout file `llmp plan` wrote."""
    def write(world, spec, rank=None):
        name = "layout-%d-%s%s.json" % (world, spec.replace(",", "_").replace("=", ""),
                                        "" if rank is None else "-r%d" % rank)
        path = tmp_path / name
        path.write_text(plan_json(world, spec, rank))
        return str(path)
    return write


# ------------------------------------------------------------------ Megatron-Core
# Megatron-Core's parallel_state.RankGenerator and
# generate_masked_orthogonal_rank_groups, written out: the dims of `order` are
# laid out fastest first; a group of tokens varies the masked dims and holds
# the others fixed.

def _prefix_product(sizes):
    out, acc = [1], 1
    for s in sizes:
        acc *= s
        out.append(acc)
    return out


def _decompose(index, shape):
    stride = _prefix_product(shape)
    return [(index // d) % s for s, d in zip(shape, stride)]


def masked_orthogonal_groups(world, sizes, mask):
    masked = [s for s, m in zip(sizes, mask) if m]
    unmasked = [s for s, m in zip(sizes, mask) if not m]
    stride = _prefix_product(sizes)
    masked_stride = [d for d, m in zip(stride, mask) if m]
    unmasked_stride = [d for d, m in zip(stride, mask) if not m]
    group_size = _prefix_product(masked)[-1]
    groups = []
    for g in range(world // group_size):
        fixed = _decompose(g, unmasked)
        base = sum(i * d for i, d in zip(fixed, unmasked_stride))
        groups.append([base + sum(i * d for i, d in zip(_decompose(r, masked), masked_stride))
                       for r in range(group_size)])
    return groups


class RankGenerator:
    def __init__(self, tp, ep, dp, pp, cp, order):
        size = {"tp": tp, "pp": pp, "dp": dp, "ep": ep, "cp": cp}
        self.world = tp * ep * dp * pp * cp
        for name, n in size.items():
            if name not in order.split("-"):
                assert n == 1
                order += "-" + name
        self.order = order.split("-")
        self.sizes = [size[t] for t in self.order]

    def get_ranks(self, token):
        mask = [t in token.split("-") for t in self.order]
        return masked_orthogonal_groups(self.world, self.sizes, mask)


def megatron_groups(world, tp=1, pp=1, cp=1, ep=1, etp=None, order="tp-cp-ep-dp-pp"):
    """Every group kind of llmp's layout file as Megatron-Core's
    initialize_model_parallel builds it."""
    etp = tp if etp is None else etp
    dp = world // (tp * pp * cp)
    edp = world // (etp * ep * pp)
    dense = RankGenerator(tp=tp, ep=1, dp=dp, pp=pp, cp=cp, order=order)
    expert = RankGenerator(tp=etp, ep=ep, dp=edp, pp=pp, cp=1, order=order)
    out = {kind: dense.get_ranks(kind) for kind in
           ("tp", "pp", "cp", "dp", "dp-cp", "tp-cp", "tp-pp", "tp-dp", "tp-dp-cp")}
    out["ep"] = expert.get_ranks("ep")
    out["expert-tp"] = expert.get_ranks("tp")
    out["expert-dp"] = expert.get_ranks("dp")
    out["tp-ep"] = expert.get_ranks("tp-ep")
    out["tp-ep-pp"] = expert.get_ranks("tp-ep-pp")
    # Embedding: the first and last stage of each pipeline; position
    # embedding: the first (Megatron's defaults, no split rank).
    out["embedding"] = [[g[0], g[-1]] if len(g) > 1 else list(g) for g in out["pp"]]
    out["position-embedding"] = [[g[0]] for g in out["pp"]]
    return out


def group_of(groups, rank):
    for g in groups:
        if rank in g:
            return g
    return None


# -------------------------------------------------------------------- launcher

def free_port():
    """A loopback port free now and outside the kernel's ephemeral range.

    A port the kernel picked (bind to 0) goes back to the ephemeral pool
    when the probe closes, and mpirun, gloo or any connect() may be given it
    before torch's TCPStore binds it: seen as EADDRINUSE in CI. A port below
    the range is only ever taken by an explicit bind."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()  # not the tests' seeded generator
    for _ in range(200):
        port = rng.randrange(10000, max(low, 10001))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port below %d" % low)


def launch(world, layout_path, scenario, outdir, args=(), timeout=240, env_extra=None):
    """Run dist_worker.py SCENARIO as `world` local processes, rendezvous by
    env:// on a free loopback port: forked from one process that imported
    torch once (dist_worker.fork_ranks). Returns {rank: its JSON}, or fails
    the test naming the ranks that had not finished after `timeout` seconds
    (a deadlock) or that failed."""
    os.makedirs(outdir, exist_ok=True)
    port = free_port()
    env = dict(os.environ)
    env.update({
        "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world),
        "GROUP_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "LLMP_WORLD_SIZE": str(world), "LLMP_LAYOUT_FILE": layout_path,
        # loopback: the host name may resolve to an address gloo cannot use
        "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONPATH": os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p),
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.update(env_extra or {})
    with open(os.path.join(outdir, "launcher.log"), "w") as log:
        # a session of its own: the ranks are killed with it at the deadline
        zygote = subprocess.Popen([sys.executable, os.path.join(HERE, "dist_worker.py"), "--world", str(world),
                                   scenario, outdir] + list(args), env=env, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        zygote.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    hung = [r for r in range(world) if not os.path.exists(os.path.join(outdir, "rank%d.exit" % r))]
    launcher_failed = zygote.poll() not in (None, 0)
    try:
        os.killpg(zygote.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    zygote.wait()
    if hung and launcher_failed:
        with open(os.path.join(outdir, "launcher.log")) as f:
            pytest.fail("%s, %d ranks: the launcher exited %d before ranks %s ended:\n%s"
                        % (scenario, world, zygote.returncode, hung, f.read()[-3000:]))
    if hung:
        pytest.fail("%s, %d ranks: ranks %s had not finished after %d s (deadlock?); logs in %s"
                    % (scenario, world, hung, timeout, outdir))
    results = {}
    for rank in range(world):
        path = os.path.join(outdir, "rank%d.json" % rank)
        with open(os.path.join(outdir, "rank%d.exit" % rank)) as f:
            code = int(f.read())
        with open(os.path.join(outdir, "rank%d.log" % rank)) as f:
            log = f.read()
        if not os.path.exists(path):
            pytest.fail("rank %d exited %d without a result:\n%s" % (rank, code, log[-3000:]))
        with open(path) as f:
            results[rank] = json.load(f)
        if code != 0:
            pytest.fail("rank %d exited %d:\n%s\n%s" % (rank, code, results[rank].get("exception", ""),
                                                        log[-3000:]))
    return results


SINGLETON_UNSET = ("PMIX_RANK", "PMIX_NAMESPACE", "PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
                   "SLURM_JOB_ID", "LLMP_PARALLEL", "LLMP_LAYOUT_FILE")


def libllmp_path():
    """libllmp: $LLMP_LIBRARY, else $LLMP_BUILDDIR/runtime/.libs/libllmp.so.0; a missing one fails the test."""
    path = os.environ.get("LLMP_LIBRARY")
    if not path:
        builddir = os.environ.get("LLMP_BUILDDIR")
        if not builddir:
            pytest.fail("neither LLMP_LIBRARY nor LLMP_BUILDDIR is set: cannot find libllmp")
        path = os.path.join(builddir, "runtime", ".libs", "libllmp.so.0")
    if not os.path.exists(path):
        pytest.fail("libllmp is not built at %s" % path)
    return path


@pytest.fixture(scope="module")
def ck():
    """llmp.checkpoint with a singleton context (no launcher), for one test module."""
    os.environ["LLMP_LIBRARY"] = libllmp_path()
    for name in SINGLETON_UNSET:
        os.environ.pop(name, None)
    import llmp.checkpoint as ck
    ctx = ck.init()
    assert (ctx.rank, ctx.world) == (0, 1)
    yield ck
    ctx.finalize()

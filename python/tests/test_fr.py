# SPDX-License-Identifier: BSD-3-Clause
"""llmp.fr on real flight recorder dumps: 4 local gloo processes under a
tp=2 layout create torch groups without llmp (plain new_group, dp's before
tp's, no group_desc: torch's names 1, 2 are dp groups and 3, 4 tp groups),
make calls this test knows, and dump through llmp.fr.dump() (torch's
_dump_fr_trace_file, a pickle) and torch's _dump_fr_trace_json. Rank 3
leaves out the last dp allreduce, which rank 1 has started.

The expected names, coordinates and call numbers are worked out here from
the layout's rules (tp fastest), not from the dumps.
"""

import os
import pickle
import subprocess
import sys
import time

import pytest

import llmp
import llmp.fr as fr

from conftest import PACKAGE_ROOT, free_port

WORKER = r"""
import os, sys, datetime
import torch, torch.distributed as dist
import llmp.fr
from torch._C import _distributed_c10d as c10d
rank, world, out = int(os.environ["RANK"]), 4, sys.argv[1]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
mine = {}
for kind, groups in (("dp", ([0, 2], [1, 3])), ("tp", ([0, 1], [2, 3]))):
    for ranks in groups:
        g = dist.new_group(ranks)
        if rank in ranks:
            mine[kind] = g
t = torch.ones(8)
for kind in ("tp", "dp", "tp", "dp", "tp"):
    dist.all_reduce(t, group=mine[kind])
dist.barrier()
if rank != 3:
    work = dist.all_reduce(t, group=mine["dp"], async_op=True)
    if rank != 1:
        work.wait()
llmp.fr.dump()
open(os.path.join(out, "json", "rank_%d" % rank), "wb").write(c10d._dump_fr_trace_json())
print("dumped", flush=True)
os._exit(0)  # rank 1's last call can never finish: no teardown
"""


def run_job(tmp_path):
    out = tmp_path / "job"
    (out / "fr").mkdir(parents=True)
    (out / "json").mkdir()
    port, procs = free_port(), []
    for rank in range(4):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="4", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1",
                   TORCH_FR_DUMP_TEMP_FILE=str(out / "fr" / "rank_"),
                   PYTHONPATH=os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p))
        procs.append(subprocess.Popen([sys.executable, "-c", WORKER, str(out)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + 120
    for rank, p in enumerate(procs):
        try:
            text = p.communicate(timeout=max(1, deadline - time.monotonic()))[0].decode()
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("rank %d did not finish" % rank)
        assert p.returncode == 0 and "dumped" in text, "rank %d: %s" % (rank, text)
    return out


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    return run_job(tmp_path_factory.mktemp("fr"))


def expected_calls(rank):
    """(kind, call number on that kind's group) of every tp/dp call the worker made."""
    seq, made = [], {"tp": 0, "dp": 0}
    for kind in ("tp", "dp", "tp", "dp", "tp") + (("dp",) if rank != 3 else ()):
        made[kind] += 1
        seq.append((kind, made[kind]))
    return seq


def check(a):
    assert a["world"] == 4 and a["dumps"] == 4
    by_name = {g["torch_name"]: g for g in a["groups"]}
    # torch numbers groups in new_group's order: dp's two, then tp's two; "0" is the world.
    assert by_name["0"]["kind"] == "world"
    for name, kind, ranks in (("1", "dp", [0, 2]), ("2", "dp", [1, 3]), ("3", "tp", [0, 1]),
                              ("4", "tp", [2, 3])):
        assert by_name[name]["kind"] == kind and by_name[name]["ranks"] == ranks, by_name[name]
    # Only rank 3 is behind, on its dp group, which the others reached call 3 of.
    assert [(g["kind"], g["ranks"], g["behind"]) for g in a["groups"] if g["behind"]] == [("dp", [1, 3], [3])]
    for r in a["ranks"]:
        rank = r["rank"]
        assert r["coords"]["tp"] == rank % 2 and r["coords"]["dp"] == rank // 2, r["coords"]
        got = [(c["group"], c["seq"]) for c in r["last"] if c["group"] in ("tp", "dp")]
        assert got == expected_calls(rank), (rank, got)
        assert [c["op"] for c in r["last"] if c["group"] == "world"] == ["gloo:barrier"]


def test_pickle_dumps_named_by_members(job, layout_file):
    lay = llmp.load(layout_file(4, "tp=2"))
    dumps = fr.load_dir(str(job / "fr"))
    assert sorted(dumps) == [0, 1, 2, 3]
    # gloo's dumps carry no group_desc a reader could lean on
    assert {e["process_group"][1] for d in dumps.values() for e in d["entries"]} <= {"undefined", "default_pg"}
    check(fr.annotate(dumps, lay, last=50))


def test_json_dumps_read_alike(job, layout_file):
    lay = llmp.load(layout_file(4, "tp=2"))
    check(fr.annotate(fr.load_dir(str(job / "json")), lay, last=50))


def test_text_and_html(job, layout_file, capsys):
    path = layout_file(4, "tp=2")
    assert fr.main([str(job / "fr"), "--layout", path]) == 0
    text = capsys.readouterr().out
    assert "behind: dp group [1, 3]: rank 3 did not reach call #3" in text
    assert "rank 3 (tp 1 cp 0 ep 0 dp 1 pp 0)" in text
    assert fr.main([str(job / "fr"), "--layout", path, "--format", "html"]) == 0
    page = capsys.readouterr().out
    assert "<h3>rank 2: tp 0 cp 0 ep 0 dp 1 pp 0</h3>" in page
    assert "<li>dp group [1, 3]: rank 3 did not reach call #3</li>" in page


def test_a_dump_naming_a_class_is_refused_unrun(tmp_path, layout_file):
    mark = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, ("touch %s" % mark,))

    (tmp_path / "fr").mkdir()
    (tmp_path / "fr" / "rank_0").write_bytes(pickle.dumps({"entries": [Payload()]}))
    with pytest.raises(fr.DumpError, match="names a class"):
        fr.load_dir(str(tmp_path / "fr"))
    assert not mark.exists()
    assert fr.main([str(tmp_path / "fr"), "--layout", layout_file(4, "tp=2")]) == 1

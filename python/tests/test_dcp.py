# SPDX-License-Identifier: BSD-3-Clause
"""test_dcp.py - dcp.save / dcp.load through llmp.checkpoint.DcpWriter and DcpReader.

Several ranks (Open MPI's mpirun is the PMIx server libllmp joins; gloo for
torch.distributed): a state dict of DTensors on a 2x2 DeviceMesh (tp=2 x
dp=2: tp shards replicated over dp, 2-D dp x tp shards, uneven shards, a
bool tensor), plain tensors and non-tensor values is saved by 4 ranks, then
loaded by 4 ranks cut Shard(0) (dp=4), by 2 ranks cut along other
dimensions, and whole by 1; `llmp ckpt verify` and h5py read the result; a
save in which rank 2 fails inside write_data commits nothing and the older
step still loads. tests/cluster/torch_dcp.py is the rank's program (also run
under srun by tests/python_cluster.bats); it computes every expected piece
with torch.chunk from the global tensors and compares raw bits.

One process (a PMIx singleton, torch.distributed not initialised): every
dtype round-trips bit for bit (those llmp stores, and others as raw bytes),
0-d and empty tensors, non-contiguous ones, bytes items, keys that are not
llmp names; the committed meta.bin holds the Metadata dcp.save returned;
half-written or damaged steps are never loaded; misuse is refused by name;
metadata another user could have written or redirected (a directory or link
on the way, the step directory, meta.bin itself) is refused before a byte
of it is read.
"""

import io
import os
import pickle
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest
import torch

from conftest import PACKAGE_ROOT, free_port, libllmp_path, llmp_tool

# dcp.save/load without torch.distributed say so each time; that is the point here.
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")

WORKER = os.path.join(os.path.dirname(PACKAGE_ROOT), "tests", "cluster", "torch_dcp.py")


# ------------------------------------------------------------------ several ranks

def mpirun(np_, *args, timeout=180):
    """torch_dcp.py ARGS on np_ ranks under mpirun; its output, every rank having printed 'dcp R ok'."""
    try:
        version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    except OSError:
        version = ""
    if "Open MPI" not in version:
        pytest.fail("Open MPI's mpirun is needed to start several libllmp ranks without Slurm")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PMIX_", "OMPI_"))}
    env.pop("LLMP_PARALLEL", None)
    env.pop("LLMP_LAYOUT_FILE", None)
    env.update({"LLMP_LIBRARY": libllmp_path(), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
                "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONPATH": os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)})
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(np_)]
    if os.getuid() == 0:
        cmd.append("--allow-run-as-root")
    for name in ("LLMP_LIBRARY", "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME", "OMP_NUM_THREADS",
                 "PYTHONPATH", "PYTHONDONTWRITEBYTECODE"):
        cmd += ["-x", name]
    cmd += [sys.executable, WORKER] + [str(a) for a in args]
    done = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)
    out = done.stdout + done.stderr
    oks = [r for r in range(np_) if ("dcp %d ok" % r) in done.stdout]
    what = " ".join(map(str, args))
    assert done.returncode == 0 and len(oks) == np_, "%s: exit %d\n%s" % (what, done.returncode, out[-6000:])
    return done.stdout


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A root with step 5 saved by dcp.save from 4 ranks on a 2x2 (dp, tp) mesh."""
    root = tmp_path_factory.mktemp("dcp") / "ckpt"
    out = mpirun(4, "save", root, 5)
    assert out.count("saved step 5") == 4
    return root


def test_save_2x2_is_an_llmp_checkpoint_verify_passes(saved):
    assert sorted(os.listdir(saved)) == ["latest", "step-5"]
    # Every rank owns a 2-D dp x tp shard, so every rank wrote a shard file.
    assert sorted(f for f in os.listdir(saved / "step-5") if f.startswith("shard-")) == \
        ["shard-%d.h5" % r for r in range(4)]
    done = subprocess.run([llmp_tool(), "ckpt", "verify", str(saved)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "step-5: OK" in done.stdout


def test_h5py_reads_every_tensor_whole_and_the_bytes_items(saved):
    done = subprocess.run([sys.executable, WORKER, "h5py", str(saved), "5"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "h5py ok", done.stdout + done.stderr


def test_load_dp4_shard0_bit_identical(saved):
    out = mpirun(4, "load-dp4", saved)
    assert out.count("loaded step 5 of world 4") == 4


def test_load_world2_other_dimensions_bit_identical(saved):
    out = mpirun(2, "load-world2", saved)
    assert out.count("loaded step 5 of world 2") == 2


def test_load_whole_in_one_rank(saved):
    assert "loaded step 5 of world 1" in mpirun(1, "load-whole", saved)


def test_save_failing_on_one_rank_commits_nothing_older_loads(saved, tmp_path):
    root = tmp_path / "ckpt"
    shutil.copytree(saved, root)
    out = mpirun(4, "save-fail", root, 6)
    assert out.count("failed as it should") == 4
    assert sorted(os.listdir(root)) == ["latest", "step-5"]  # no step-6, no step-6.tmp
    assert mpirun(4, "load-dp4", root).count("loaded step 5 of world 4") == 4


# ------------------------------------------------------------------ one process

def bits(t):
    t = t.contiguous()
    if t.dtype.is_complex:
        t = torch.view_as_real(t)
    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return t.view(ints[t.element_size()])


def assert_same(got, want, name):
    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape, want.shape)
    assert torch.equal(bits(got), bits(want)), "%s differs" % name


def every_dtype():
    g = torch.Generator().manual_seed(7)
    sd = {}
    for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16):  # llmp's own types
        t = torch.randn(9, 5, generator=g, dtype=torch.float64).to(dt)
        t.view(-1)[:4] = torch.tensor([float("inf"), float("nan"), -0.0, 1e-40]).to(dt)
        sd["f.%s" % str(dt)[6:]] = t
    sd["i.int32"] = torch.randint(-2**31, 2**31 - 1, (4, 3), generator=g, dtype=torch.int32)
    sd["i.int64"] = torch.randint(-2**62, 2**62, (17,), generator=g, dtype=torch.int64)
    sd["i.uint8"] = torch.randint(0, 256, (2, 3, 4), generator=g, dtype=torch.uint8)
    # Not llmp types: stored as raw bytes.
    sd["raw.bool"] = torch.randint(0, 2, (6, 2), generator=g).bool()
    sd["raw.int8"] = torch.randint(-128, 128, (5,), generator=g, dtype=torch.int8)
    sd["raw.int16"] = torch.randint(-2**15, 2**15, (3, 7), generator=g, dtype=torch.int16)
    sd["raw.complex64"] = torch.randn(4, 2, generator=g, dtype=torch.complex64)
    sd["raw.scalar_int16"] = torch.tensor(-12345, dtype=torch.int16)
    sd["scalar"] = torch.tensor(2.5, dtype=torch.float64)                 # 0-d
    sd["empty"] = torch.zeros(0, 4)                                        # no dataset
    sd["transposed"] = torch.randn(6, 4, generator=g).to(torch.bfloat16).t()  # not contiguous
    return sd


def test_every_dtype_round_trips_bit_identical(ck, tmp_path):
    import torch.distributed.checkpoint as dcp
    sd = every_dtype()
    state = {"model": sd, "epoch": 3, "sched": {"lr": 0.5, "gamma": [1, 2]}, "note": b"\x00raw"}
    dcp.save(state, storage_writer=ck.DcpWriter(tmp_path, step=1))
    blank = {k: torch.full_like(v, 1) if v.numel() else torch.ones_like(v) for k, v in sd.items()}
    blank["transposed"] = torch.zeros(6, 4, dtype=torch.bfloat16).t()   # load into a non-contiguous view too
    out = {"model": blank, "epoch": 0, "sched": {"lr": 0.0, "gamma": []}, "note": b""}
    reader = ck.DcpReader(tmp_path)
    dcp.load(out, storage_reader=reader)
    assert reader.loaded_step == 1
    for k, v in sd.items():
        assert_same(out["model"][k], v, k)
    assert (out["epoch"], out["sched"], out["note"]) == (3, {"lr": 0.5, "gamma": [1, 2]}, b"\x00raw")
    with h5py.File(tmp_path / "step-1" / "index.h5", "r") as f:
        assert "model.empty" not in f and "model.f.float32" in f
        # Raw types: a uint8 dataset, one more dimension of the element size.
        d = f["model.raw.int16"]
        assert d.dtype == np.uint8 and d.shape == (3, 7, 2)
        assert torch.equal(torch.from_numpy(d[...]).view(torch.int16).reshape(3, 7), sd["raw.int16"])
        assert f["model.scalar"].shape == (1,) and f["model.scalar"][0] == 2.5
        assert torch.load(io.BytesIO(f["epoch"][...].tobytes()), weights_only=False) == 3


def test_meta_bin_holds_the_metadata_dcp_save_returned(ck, tmp_path):
    import torch.distributed.checkpoint as dcp
    from llmp.dcp import MAGIC
    sd = {"w": torch.arange(12.0).reshape(3, 4), "n": 5}
    md = dcp.save(sd, storage_writer=ck.DcpWriter(tmp_path, step=2))
    raw = (tmp_path / "step-2" / "meta.bin").read_bytes()
    assert raw.startswith(MAGIC)
    stored = pickle.loads(raw[len(MAGIC):])
    assert stored.state_dict_metadata == md.state_dict_metadata
    assert stored.planner_data == md.planner_data
    assert set(stored.state_dict_metadata) == {"w", "n"}
    assert stored.state_dict_metadata["w"].size == torch.Size([3, 4])


def test_a_key_that_is_no_llmp_name_is_hashed_and_round_trips(ck, tmp_path):
    import torch.distributed.checkpoint as dcp
    from llmp.dcp import dataset_name
    long = "layers." + "x" * 150 + ".weight"
    sd = {long: torch.arange(6.0), "with space": torch.ones(2, dtype=torch.int32)}
    dcp.save(sd, storage_writer=ck.DcpWriter(tmp_path, step=1))
    out = {long: torch.zeros(6), "with space": torch.zeros(2, dtype=torch.int32)}
    dcp.load(out, storage_reader=ck.DcpReader(tmp_path))
    assert torch.equal(out[long], sd[long]) and torch.equal(out["with space"], sd["with space"])
    name = dataset_name(long)
    assert name.startswith("dcp-hashed/") and dataset_name("with space") != "with space"
    with h5py.File(tmp_path / "step-1" / "index.h5", "r") as f:
        assert np.array_equal(f[name][...], np.arange(6.0, dtype=np.float32))


def save_steps(ck, root, steps):
    import torch.distributed.checkpoint as dcp
    for s in steps:
        dcp.save({"w": torch.full((4, 4), float(s)), "step": s}, storage_writer=ck.DcpWriter(root, step=s))


def load_w(ck, root, step=None):
    import torch.distributed.checkpoint as dcp
    out = {"w": torch.zeros(4, 4), "step": 0}
    reader = ck.DcpReader(root, step=step)
    dcp.load(out, storage_reader=reader)
    assert torch.equal(out["w"], torch.full((4, 4), float(out["step"])))
    return reader.loaded_step, out["step"]


def test_a_half_written_step_is_never_loaded(ck, tmp_path):
    save_steps(ck, tmp_path, [5])
    # What a save killed before its commit leaves: step-9.tmp, here with every file in it.
    shutil.copytree(tmp_path / "step-5", tmp_path / "step-9.tmp")
    assert load_w(ck, tmp_path) == (5, 5)
    # A step whose DCP metadata (meta.bin) is cut short: passed over for the older one.
    save_steps(ck, tmp_path, [7])
    meta = tmp_path / "step-7" / "meta.bin"
    meta.write_bytes(meta.read_bytes()[:-10])
    assert load_w(ck, tmp_path) == (5, 5)
    with pytest.raises(BaseException, match="meta.bin is truncated or corrupted"):
        load_w(ck, tmp_path, step=7)


def test_an_existing_step_is_refused_and_kept(ck, tmp_path):
    import torch.distributed.checkpoint as dcp
    save_steps(ck, tmp_path, [3])
    with pytest.raises(BaseException, match="step-3"):
        dcp.save({"w": torch.zeros(4, 4), "step": 99}, storage_writer=ck.DcpWriter(tmp_path, step=3))
    assert load_w(ck, tmp_path) == (3, 3)


def test_a_checkpoint_not_saved_through_dcp_is_refused_by_name(ck, tmp_path):
    import torch.distributed.checkpoint as dcp
    ck.save({"w": torch.ones(4, 4)}, tmp_path, step=4)
    with pytest.raises(BaseException, match="step-4 was not saved through llmp.checkpoint.DcpWriter"):
        dcp.load({"w": torch.zeros(4, 4)}, storage_reader=ck.DcpReader(tmp_path))


def test_no_checkpoint_is_an_error_naming_the_root(ck, tmp_path):
    import torch.distributed.checkpoint as dcp
    with pytest.raises(BaseException, match="no complete checkpoint under %s" % tmp_path):
        dcp.load({"w": torch.zeros(4, 4)}, storage_reader=ck.DcpReader(tmp_path))


def test_checkpoint_id_selects_the_root(ck, tmp_path):
    import torch.distributed.checkpoint as dcp
    root = tmp_path / "by-id"
    dcp.save({"w": torch.full((4, 4), 8.0), "step": 8}, checkpoint_id=root,
             storage_writer=ck.DcpWriter(tmp_path / "unused", step=8))
    assert not (tmp_path / "unused").exists()
    assert ck.DcpReader.validate_checkpoint_id(root) and not ck.DcpReader.validate_checkpoint_id(tmp_path)
    assert load_w(ck, root) == (8, 8)


def test_plan_caching_is_refused_before_anything_is_written(ck, tmp_path):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.default_planner import DefaultSavePlanner
    planner = DefaultSavePlanner(enable_plan_caching=True)
    dcp.save({"w": torch.ones(3)}, storage_writer=ck.DcpWriter(tmp_path, step=1), planner=planner)
    # The second round is a cached one: DCP hands the storage layer empty plans.
    with pytest.raises(BaseException, match="enable_plan_caching"):
        dcp.save({"w": torch.ones(3)}, storage_writer=ck.DcpWriter(tmp_path, step=2), planner=planner)
    assert sorted(os.listdir(tmp_path)) == ["latest", "step-1"]


def test_metadata_others_could_write_is_never_unpickled(ck, tmp_path):
    # A root another user made first in a shared place, or left writable to others: the
    # pickled metadata there could run their code (tests/security.bats M3).
    save_steps(ck, tmp_path, [2])
    assert load_w(ck, tmp_path) == (2, 2)
    os.chmod(tmp_path, 0o777)
    with pytest.raises(BaseException, match=r"is writable by others \(mode 0777\): its metadata is not unpickled"):
        load_w(ck, tmp_path)
    os.chmod(tmp_path, 0o1777)  # sticky, as /tmp: nobody replaces another's files
    assert load_w(ck, tmp_path) == (2, 2)
    os.chmod(tmp_path, 0o755)
    meta = tmp_path / "step-2" / "meta.bin"
    if os.geteuid() == 0:  # only root can give a file to another user
        os.chown(meta, 4242, 4242)
        with pytest.raises(BaseException, match="meta.bin belongs to uid 4242, not to this user"):
            load_w(ck, tmp_path)
        os.chown(meta, 0, 0)
    assert load_w(ck, tmp_path) == (2, 2)


def test_metadata_another_user_could_redirect_is_never_read(ck, tmp_path):
    # Every directory from / down and every link on the way is checked before libllmp or the
    # reader reads a byte under the root: here meta.bin is damaged, which a read would report.
    shared = tmp_path / "shared"
    run = shared / "run"
    save_steps(ck, run, [2])
    meta = run / "step-2" / "meta.bin"
    good = meta.read_bytes()
    meta.write_bytes(good[:-10])
    damaged = "meta.bin is truncated or corrupted"
    with pytest.raises(BaseException, match=damaged):
        load_w(ck, run, step=2)
    # A parent others may write to without the sticky bit could have run renamed away and replaced.
    os.chmod(shared, 0o777)
    with pytest.raises(BaseException, match=r"%s, on the path to %s, is writable by everyone \(mode 0777, no "
                       r"sticky bit\): anyone could rename" % (shared, run)):
        load_w(ck, run, step=2)
    os.chmod(shared, 0o2770)  # a project directory shared through its group
    with pytest.raises(BaseException, match=r"%s, on the path to %s, is writable by its group \(mode 2770, no "
                       r"sticky bit\): another member of its group could rename" % (shared, run)):
        load_w(ck, run, step=2)
    os.chmod(shared, 0o1777)  # sticky, and ours (or root's): nobody else moves run
    with pytest.raises(BaseException, match=damaged):
        load_w(ck, run, step=2)
    # A link of ours is followed.
    os.chmod(shared, 0o755)
    (tmp_path / "mine").symlink_to(run)
    with pytest.raises(BaseException, match=damaged):
        load_w(ck, tmp_path / "mine", step=2)
    if os.geteuid() == 0:  # only root can give a file to another user
        theirs = tmp_path / "theirs"
        theirs.symlink_to(run)  # another user's pick of our runs
        os.lchown(theirs, 4242, 4242)
        with pytest.raises(BaseException, match="%s is a symbolic link of uid 4242, neither root nor this user "
                           r"\(0\): it is not followed" % theirs):
            load_w(ck, theirs, step=2)
        os.chown(shared, 4242, 4242)
        for mode in (0o755, 0o1777):  # its owner may rename what is in it, sticky or not
            os.chmod(shared, mode)
            with pytest.raises(BaseException, match=r"%s, on the path to %s, belongs to uid 4242, neither root "
                               r"nor this user \(0\)" % (shared, run)):
                load_w(ck, run, step=2)
        os.chown(shared, 0, 0)
        os.chmod(shared, 0o755)
        os.chown(run / "step-2", 4242, 4242)  # in a sticky root, another user could have made it
        with pytest.raises(BaseException, match=r"step-2 belongs to uid 4242, not to this user \(0\)"):
            load_w(ck, run)
        os.chown(run / "step-2", 0, 0)
    # meta.bin a link to the same bytes: libllmp's checksum passes, the reader does not follow it.
    (tmp_path / "elsewhere.bin").write_bytes(good)
    meta.unlink()
    meta.symlink_to(tmp_path / "elsewhere.bin")
    with pytest.raises(BaseException, match="step-2/meta.bin is a symbolic link: it is not followed"):
        load_w(ck, run)
    meta.unlink()
    meta.write_bytes(good)
    assert load_w(ck, run) == (2, 2)


def test_the_walk_resolves_links_and_dots_as_the_kernel_does(ck, tmp_path, monkeypatch):
    from llmp.dcp import open_own_dir

    def same(fd, path):
        st, want = os.fstat(fd), os.stat(path)
        os.close(fd)
        return (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino)

    deep = tmp_path / "deep" / "a" / "b"
    deep.mkdir(parents=True)
    (tmp_path / "to-b").symlink_to("deep/a/b")
    assert same(open_own_dir(tmp_path / "to-b"), deep)
    assert same(open_own_dir("%s/to-b/.." % tmp_path), deep.parent)  # the target's parent, not tmp_path
    assert same(open_own_dir("%s/to-b/./../b/." % tmp_path), deep)
    monkeypatch.chdir(tmp_path)
    assert same(open_own_dir("to-b"), deep)
    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises(PermissionError, match="%s/loop: more than 40 symbolic links on the path to loop" % tmp_path):
        open_own_dir("loop")
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(NotADirectoryError, match="%s/file is not a directory" % tmp_path):
        open_own_dir("file/x")

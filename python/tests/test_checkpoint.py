# SPDX-License-Identifier: BSD-3-Clause
"""test_checkpoint.py - llmp.checkpoint as a PMIx singleton (one process, world 1).

A state dict of every dtype llmp stores (bfloat16 included, with infinities,
NaNs and subnormals) is saved through libllmp and loaded back bit for bit;
the files are read with h5py, without llmp, the way python/README.md tells
users to; a saved whole tensor is loaded into a slice of it (the loader
reshards), a DTensor is saved and loaded, and every misuse is refused with
a message naming the culprit. The expected values are the tensors
themselves, compared as raw bits.

libllmp is $LLMP_LIBRARY, else $LLMP_BUILDDIR/runtime/.libs/libllmp.so.0;
a missing one fails the tests.
"""

import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
import torch

from conftest import PACKAGE_ROOT, free_port, libllmp_path as _libllmp


def bits(t):
    """The tensor's bytes, as an integer tensor of the same element size."""
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return t.contiguous().view(ints[t.element_size()])


def assert_same_bits(got, want, name):
    assert got.dtype == want.dtype and got.shape == want.shape, name
    assert torch.equal(bits(got), bits(want)), "tensor %s differs" % name


SPECIALS = [float("inf"), float("-inf"), float("nan"), -0.0, 1e-40, 3.0e38, -1.5, 65504.0, 6e-8]


def sample_state():
    g = torch.Generator().manual_seed(16)
    sd = {}
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        t = torch.randn(33, 17, generator=g, dtype=torch.float64).to(dtype)
        t.view(-1)[:len(SPECIALS)] = torch.tensor(SPECIALS, dtype=torch.float64).to(dtype)
        sd["float/%s" % str(dtype).split(".")[1]] = t
    sd["int/int32"] = torch.randint(-2**31, 2**31 - 1, (5, 6, 7), generator=g, dtype=torch.int32)
    sd["int/int64"] = torch.randint(-2**62, 2**62, (1000,), generator=g, dtype=torch.int64)
    sd["int/uint8"] = torch.randint(0, 256, (3, 4, 2, 5), generator=g, dtype=torch.uint8)
    sd["scalar"] = torch.tensor(123456789, dtype=torch.int64)
    sd["transposed"] = torch.randn(8, 6, generator=g).to(torch.bfloat16).t()  # not contiguous
    sd["big.weight"] = torch.randn(512, 1024, generator=g)  # 2 MiB: aligned in the shard
    return sd


def blank(sd):
    """A state dict of the same tensors, shapes and strides, filled with a pattern."""
    return {k: torch.full_like(v, 7) for k, v in sd.items()}


def test_round_trip_bit_identical(ck, tmp_path):
    sd = sample_state()
    assert not sd["transposed"].is_contiguous()
    ck.save(sd, tmp_path, step=5, meta=b"step five")
    out = blank(sd)
    assert ck.load(out, tmp_path) == (5, b"step five")
    for k in sd:
        assert_same_bits(out[k], sd[k], k)
    assert sorted(os.listdir(tmp_path / "step-5")) == ["MANIFEST", "index.h5", "meta.bin", "shard-0.h5"]
    assert (tmp_path / "latest").read_text() == "step-5\n"


def test_save_is_zero_copy_and_load_in_place(ck, tmp_path):
    sd = {"w": torch.arange(12, dtype=torch.float32).reshape(3, 4)}
    with ck.Checkpoint(tmp_path, sd, keep=3) as c:
        ptr = sd["w"].data_ptr()
        assert c.entries[0].address == ptr and c.entries[0].buffer is sd["w"]
        c.save(1)
        sd["w"].mul_(2)  # the next save reads the tensor's memory as it is now
        c.save(2)
        sd["w"].zero_()
        assert c.load(1) == (1, b"")
        assert sd["w"].data_ptr() == ptr
        assert torch.equal(sd["w"], torch.arange(12, dtype=torch.float32).reshape(3, 4))
        assert c.load() == (2, b"")
        assert torch.equal(sd["w"], 2 * torch.arange(12, dtype=torch.float32).reshape(3, 4))
        c.save(3, async_save=True)
        sd["w"].fill_(-1)  # after an async save returned: the staged bytes are written
        c.wait()
        assert c.stats()["step"] == 3
        c.load(3)
        assert torch.equal(sd["w"], 2 * torch.arange(12, dtype=torch.float32).reshape(3, 4))


def read_raw(dataset):
    """A dataset's stored bytes, unconverted (HDF5 reads them with the file's own type)."""
    raw = np.empty(dataset.shape, dtype="u%d" % dataset.id.get_type().get_size())
    dataset.id.read(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=dataset.id.get_type())
    return raw


def test_h5py_reads_every_tensor_without_llmp(ck, tmp_path):
    sd = sample_state()
    ck.save(sd, tmp_path, step=9)
    with h5py.File(tmp_path / "step-9" / "index.h5", "r") as f:
        for k, t in sd.items():
            d = f[k]
            want_shape = tuple(t.shape) or (1,)  # a 0-d tensor is stored as shape (1,)
            assert d.shape == want_shape, k
            # The stored bytes are the tensor's, whatever its dtype.
            assert read_raw(d).tobytes() == t.contiguous().numpy().tobytes() if t.dtype != torch.bfloat16 \
                else read_raw(d).tobytes() == bits(t).numpy().tobytes(), k
            value = d[...]
            if t.dtype == torch.bfloat16:
                # h5py hands a bfloat16 dataset over as float32, converted by HDF5:
                # every value exactly, infinities and -0 included; a NaN stays a NaN
                # but HDF5 gives it its own bits (README: the raw read keeps them).
                assert value.dtype == np.float32, k
                got = torch.from_numpy(value).to(torch.bfloat16).reshape(t.shape)
                nan = torch.isnan(t)
                assert torch.equal(torch.isnan(got), nan), k
                assert_same_bits(got[~nan], t[~nan], k)
                raw = torch.from_numpy(read_raw(d).view(np.int16)).view(torch.bfloat16)
                assert_same_bits(raw.reshape(t.shape), t, k)
            else:
                assert value.dtype == t.contiguous().numpy().dtype, k
                assert_same_bits(torch.from_numpy(value).reshape(t.shape), t, k)


def test_load_into_another_slicing(ck, tmp_path):
    """Saved whole, loaded as a slice (rows 8..19, columns 256..767): the loader reshards."""
    g = torch.Generator().manual_seed(3)
    whole = torch.randn(32, 1024, generator=g).to(torch.bfloat16)
    ck.save({"w": whole}, tmp_path, step=1)
    part = torch.zeros(12, 512, dtype=torch.bfloat16)
    ck.load({"w": ck.Shard(part, global_shape=(32, 1024), offset=(8, 256))}, tmp_path)
    assert_same_bits(part, whole[8:20, 256:768], "w")
    # Saved as a slice that tiles nothing: refused before anything is written.
    with pytest.raises(ck.CheckpointError, match="w"):
        ck.save({"w": ck.Shard(part, (32, 1024), (8, 256))}, tmp_path, step=2)
    assert not (tmp_path / "step-2").exists()


def test_shard_split(ck):
    s = ck.Shard.split(torch.zeros(4, 6), dim=1, index=2, parts=3)
    assert (s.global_shape, s.offset) == ((4, 18), (0, 12))


def test_dtensor(ck, tmp_path):
    """A DTensor (a one-rank mesh, gloo) is saved by its local slice and read back whole."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Replicate, Shard

    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % free_port(), rank=0, world_size=1)
    try:
        mesh = init_device_mesh("cpu", (1,))
        whole = torch.randn(6, 10, dtype=torch.float64)
        sd = {"sharded": DTensor.from_local(whole.clone(), mesh, [Shard(1)]),
              "replicated": DTensor.from_local(whole[0].clone(), mesh, [Replicate()])}
        ck.save(sd, tmp_path, step=4)
        out = {"sharded": torch.zeros(6, 10, dtype=torch.float64), "replicated": torch.zeros(10, dtype=torch.float64)}
        ck.load(out, tmp_path)
        assert_same_bits(out["sharded"], whole, "sharded")
        assert_same_bits(out["replicated"], whole[0], "replicated")
        back = {"sharded": DTensor.from_local(torch.zeros(6, 10, dtype=torch.float64), mesh, [Shard(1)])}
        ck.load(back, tmp_path)  # loading into a DTensor fills its local tensor
        assert_same_bits(back["sharded"].to_local(), whole, "sharded")
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("value, message", [
    (torch.zeros(3, dtype=torch.int16), "'bad' is torch.int16"),
    ("text", "'bad' is a str"),
    (torch.zeros(0, 4), "'bad' has shape \\(0, 4\\)"),
])
def test_refused_entries_name_the_key(ck, tmp_path, value, message):
    with pytest.raises((TypeError, ValueError), match=message):
        ck.save({"ok": torch.zeros(2), "bad": value}, tmp_path, step=1)


def test_mismatch_on_load_names_the_tensor(ck, tmp_path):
    ck.save({"w": torch.zeros(4, 4)}, tmp_path, step=1)
    with pytest.raises(ck.CheckpointError, match="w") as e:
        ck.load({"w": torch.zeros(4, 5)}, tmp_path, step=1)
    assert e.value.status is not None
    with pytest.raises(ck.CheckpointError, match="step 8"):
        ck.load({"w": torch.zeros(4, 4)}, tmp_path, step=8)


def test_moved_memory_is_refused(ck, tmp_path):
    p = torch.nn.Parameter(torch.zeros(3))
    with ck.Checkpoint(tmp_path, {"p": p}) as c:
        p.data = torch.ones(3)
        with pytest.raises(ck.CheckpointError, match="'p' moved"):
            c.save(1)



def test_a_root_others_could_redirect_is_refused_and_nothing_is_made_there(ck, tmp_path):
    # libllmp makes a missing root one directory at a time, each only inside one that passed
    # common/own_dir.h's rule: a refused path leaves nothing made where it leads.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(ck.CheckpointError, match=r"checkpoint directory refused: %s, on the path to %s/run/ck, "
                       r"is writable by everyone \(mode 0777, no sticky bit\)" % (shared, shared)):
        ck.save({"w": torch.ones(2)}, shared / "run" / "ck", step=1)
    assert os.listdir(shared) == []
    os.chmod(shared, 0o1777)  # sticky, and ours (or root's)
    ck.save({"w": torch.ones(2)}, shared / "run" / "ck", step=1)
    assert sorted(os.listdir(shared / "run" / "ck")) == ["latest", "step-1"]
    if os.geteuid() == 0:  # only root can give a link to another user
        other_run = tmp_path / "other-run"  # one of ours, which another user's link picks
        other_run.mkdir()
        link = tmp_path / "link"
        link.symlink_to(other_run)
        os.lchown(link, 4242, 4242)
        with pytest.raises(ck.CheckpointError, match=r"checkpoint directory refused: %s is a symbolic link of "
                           r"uid 4242, neither root nor this job's user \(0\)" % link):
            ck.save({"w": torch.ones(2)}, link / "new", step=1)
        assert os.listdir(other_run) == []


def run_python(code, **env):
    full = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, **env)
    return subprocess.run([sys.executable, "-c", code], env=full, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)


def test_missing_library_is_named():
    done = run_python("import llmp.checkpoint as c; c.init()", LLMP_LIBRARY="/nonexistent/libllmp.so.0")
    assert done.returncode != 0
    assert "libllmp not found; tried /nonexistent/libllmp.so.0" in done.stdout, done.stdout
    assert "LLMP_LIBRARY" in done.stdout


def test_library_found_beside_the_package(tmp_path):
    """Without LLMP_LIBRARY: libllmp.so.0 next to the package is used (as make install places it)."""
    pkg = tmp_path / "llmp"
    pkg.mkdir()
    for name in os.listdir(os.path.join(PACKAGE_ROOT, "llmp")):
        if name.endswith(".py"):
            (pkg / name).write_bytes(open(os.path.join(PACKAGE_ROOT, "llmp", name), "rb").read())
    os.symlink(os.path.realpath(_libllmp()), pkg / "libllmp.so.0")
    env = {k: v for k, v in os.environ.items() if k != "LLMP_LIBRARY"}
    done = subprocess.run([sys.executable, "-c", "import llmp.checkpoint as c; print(c.library()._name)"],
                          env=dict(env, PYTHONPATH=str(tmp_path)), cwd=str(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    assert done.returncode == 0, done.stdout
    assert done.stdout.strip() == str(pkg / "libllmp.so.0")


# Device memory through the package, without a GPU: the CUDA driver's test double
# (tests/device/fake_cuda.c, built by make check) linked as libcuda.so.1 on the child's
# LD_LIBRARY_PATH, so that the child and libllmp load the same "driver", as a torch
# program and libllmp load the real one. Its device memory is host memory it tracks, seen
# here through torch.frombuffer; libllmp asks the driver, finds device memory, and stages
# every slice through pinned host memory (llmp_ckpt_stats' device_bytes). What the test
# cannot show without a GPU is torch's own CUDA tensors, which take the same path.
DEVICE_CHILD = r"""
import ctypes, sys, torch
import llmp.checkpoint as ck
cu = ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
ctx = ctypes.c_void_p()
assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cu.cuCtxSetCurrent(ctx) == 0

def device_tensor(shape, dtype):
    n = torch.Size(shape).numel() * torch.empty(0, dtype=dtype).element_size()
    ptr = ctypes.c_uint64()
    assert cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(n)) == 0
    return torch.frombuffer((ctypes.c_char * n).from_address(ptr.value), dtype=dtype).view(shape)

root = sys.argv[1]
w, b = device_tensor((24, 40), torch.float32), device_tensor((7, 9), torch.bfloat16)
w.copy_(torch.arange(24 * 40, dtype=torch.float32).view(24, 40) * 0.5 - 7)
b.copy_((torch.arange(63, dtype=torch.float32).view(7, 9) / 8 - 3).to(torch.bfloat16))
want = {"w": w.clone(), "b": b.clone()}  # clones are host tensors
with ck.Checkpoint(root, {"w": w, "b": b}) as c:
    c.save(3)
    stats = c.stats()
assert stats["device_bytes"] == 24 * 40 * 4 + 7 * 9 * 2, stats
# loaded into device tensors (columns 8-39 of w: another slicing) and into host tensors
back_w, back_b = device_tensor((24, 32), torch.float32), device_tensor((7, 9), torch.bfloat16)
ck.load({"w": ck.Shard(back_w, (24, 40), (0, 8)), "b": back_b}, root)
host_b = torch.zeros(7, 9, dtype=torch.bfloat16)
ck.load({"b": host_b}, root)
for got, exp, what in ((back_w, want["w"][:, 8:], "w"), (back_b, want["b"], "b"), (host_b, want["b"], "host b")):
    assert torch.equal(got.view(torch.int16 if got.dtype == torch.bfloat16 else torch.int32),
                       exp.view(torch.int16 if exp.dtype == torch.bfloat16 else torch.int32)), what
print("device ok", stats["device_bytes"])
"""


def test_device_memory_staged_by_libllmp(tmp_path):
    builddir = os.environ.get("LLMP_BUILDDIR")
    if not builddir:
        pytest.fail("LLMP_BUILDDIR is not set: cannot find the CUDA driver's test double")
    fake = os.path.join(builddir, "tests", "device", ".libs", "fake_cuda.so")
    if not os.path.exists(fake):
        pytest.fail("the CUDA driver's test double is not built at %s (make check builds it)" % fake)
    driver = tmp_path / "driver"
    driver.mkdir()
    os.symlink(fake, driver / "libcuda.so.1")
    env = {"LD_LIBRARY_PATH": "%s:%s" % (driver, os.environ.get("LD_LIBRARY_PATH", "")),
           "FAKE_CUDA": "libcuda.so.1"}
    env = dict({k: v for k, v in os.environ.items() if k != "LLMP_CUDA_LIBRARY"}, PYTHONPATH=PACKAGE_ROOT, **env)
    done = subprocess.run([sys.executable, "-c", DEVICE_CHILD, str(tmp_path / "ckpt")], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert done.returncode == 0, done.stdout
    assert "device ok %d" % (24 * 40 * 4 + 7 * 9 * 2) in done.stdout, done.stdout

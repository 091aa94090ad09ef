#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The global view of an llmp checkpoint, read with h5py alone (tests/ckpt.bats).

    check_view.py view STEPDIR STEP [--big K]
        Every tensor of STEPDIR/index.h5 (virtual datasets) read WHOLE and
        compared with its values at STEP, computed here from the same formulas
        as tests/ckpt/ck_check.c; then every shard file read directly, each
        dataset compared with its part of the tensor as the MANIFEST places
        it. Prints "OK ...", "WRONG ..." and "NOTE ..." lines, and exits 1 if
        anything was wrong.

    check_view.py corrupt STEPDIR TENSOR STEP [OWNER]
        Finds the bytes of one saved slice of TENSOR in its shard file (the
        values are known, so the bytes are), flips one byte in their middle,
        and prints "corrupted PATH at byte N".
"""
import os
import sys

import numpy as np

try:
    import h5py
except ImportError:  # the bats file skips on this
    h5py = None

DTYPES = {
    "float32": np.float32,
    "float64": np.float64,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "float16": np.float16,
    "bfloat16": np.uint16,  # the bits: numpy has no bfloat16
}


def model(big=0):
    """name -> (dtype name, global shape), as ck_check.c registers them."""
    m = {
        "layers/0/w_row": ("float32", (13, 10)),
        "layers/0/w_col": ("float64", (6, 12)),
        "layers/0/w_col_bf16": ("bfloat16", (4, 12)),
        "layers/0/bias": ("int32", (10,)),
        "emb/u8": ("uint8", (12, 12, 5)),
        "norm/f16": ("float16", (24,)),
    }
    if big:
        m["big/w"] = ("float32", (48 * big, 1024))
    return m


def values(name, shape, step):
    """The whole tensor at step; bfloat16 as its uint16 bits."""
    g = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    if name == "layers/0/w_row":
        return (step + ((g * 7) % 101) * 0.125 - 6.0).astype(np.float32)
    if name == "layers/0/w_col":
        return (step * 1.5 + g / 1024.0 - 0.5).astype(np.float64)
    if name == "layers/0/w_col_bf16":
        f = (((g + step) % 64) * 0.5 - 8.0).astype(np.float32)
        return (f.view(np.uint32) >> 16).astype(np.uint16)
    if name == "layers/0/bias":
        return (step * 1000 - g * 37).astype(np.int32)
    if name == "emb/u8":
        return ((g * 13 + step) % 251).astype(np.uint8)
    if name == "norm/f16":
        return (((g * 3 + step) % 512) * 0.25 - 32.0).astype(np.float16)
    if name == "big/w":
        return ((g * 5 + step) % 65536).astype(np.float32)
    raise KeyError(name)


def bf16_to_float32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def read_manifest(stepdir):
    """(shards {rank: bytes}, slices [(name, dtype, global, offset, shape, owner, crc, file, dataset)]).

    file is the rank in the name of the shard file holding the slice, dataset its path there:
    format 2 has a file per owner and the tensor's name; format 3 (files=node) names the file
    after OWNER on the slice line, and puts each rank's datasets under rank-OWNER/.
    """
    shards, slices = {}, []
    with open(os.path.join(stepdir, "MANIFEST")) as f:
        lines = f.read().split("\n")
    assert lines[0].startswith("llmp-checkpoint "), "not a MANIFEST"
    version = int(lines[0].split()[1])
    assert version in (2, 3), f"format {version}"
    for line in lines:
        w = line.split()
        if not w:
            continue
        if w[0] == "shard":  # shard RANK BYTES CRC
            shards[int(w[1])] = int(w[2])
        elif w[0] == "slice":  # ... OWNER [FILE] AT CRC
            nd = int(w[3])
            nums = [int(x) for x in w[4:4 + 3 * nd]]
            owner = int(w[4 + 3 * nd])
            node = version == 3
            file = int(w[5 + 3 * nd]) if node else owner
            dataset = f"rank-{owner}/{w[1]}" if node else w[1]
            slices.append((w[1], w[2], tuple(nums[:nd]), tuple(nums[nd:2 * nd]),
                           tuple(nums[2 * nd:]), owner, int(w[(7 if node else 6) + 3 * nd], 16),
                           file, dataset))
    assert any(line.startswith("end 0x") for line in lines), "MANIFEST without its end line"
    return shards, slices


class Report:
    def __init__(self):
        self.checks = self.wrong = 0

    def expect(self, ok, what):
        self.checks += 1
        if ok:
            print("OK " + what)
        else:
            self.wrong += 1
            print("WRONG " + what)
        return ok


def raw_bits(ds):
    """A 16-bit dataset's stored bits, read in its own file type (no conversion)."""
    raw = np.empty(ds.shape, dtype=np.uint16)
    ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=ds.id.get_type())
    return raw


def compare(rep, where, ds, dtype, want):
    """ds (an h5py dataset) against want (numpy, bfloat16 as bits), reading it whole."""
    if dtype == "bfloat16":
        # h5py has no bfloat16: see what it makes of HDF5's custom float.
        t = ds.id.get_type()
        try:
            got = ds[()]
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            print(f"NOTE {where}: h5py cannot read the bfloat16 custom float: {e}")
            got = None
        if got is not None:
            print(f"NOTE {where}: h5py reads the bfloat16 custom float (size {t.get_size()}, "
                  f"fields {t.get_fields()}, ebias {t.get_ebias()}) as numpy {got.dtype}, "
                  "values converted by HDF5")
            rep.expect(got.shape == want.shape and np.array_equal(
                got.astype(np.float32), bf16_to_float32(want)),
                f"{where}: bfloat16 read by h5py as {got.dtype} equals the expected values")
        bits = raw_bits(ds)
        return rep.expect(np.array_equal(bits, want),
                          f"{where}: bfloat16 raw bits (read in the file type) equal the expected bits")
    got = ds[()]
    if dtype == "float16":
        t = ds.id.get_type()
        print(f"NOTE {where}: h5py reads the float16 custom float (size {t.get_size()}, fields "
              f"{t.get_fields()}, ebias {t.get_ebias()}) as numpy {got.dtype}")
        rep.expect(np.array_equal(raw_bits(ds), want.view(np.uint16)),
                   f"{where}: float16 raw bits equal the expected bits")
    ok = got.dtype == want.dtype and got.shape == want.shape
    ok = ok and np.array_equal(got.view(np.uint8), want.view(np.uint8))  # bit-identical
    return rep.expect(ok, f"{where}: {got.dtype} {got.shape} bit-identical to the expected "
                      f"{want.dtype} {want.shape}")


def cmd_view(stepdir, step, big):
    rep = Report()
    m = model(big)
    shards, slices = read_manifest(stepdir)
    with h5py.File(os.path.join(stepdir, "index.h5"), "r") as f:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        rep.expect(sorted(names) == sorted(m), f"index.h5 holds exactly {sorted(m)} (has {sorted(names)})")
        for name, (dtype, shape) in m.items():
            if name not in f:
                continue
            ds = f[name]
            rep.expect(ds.is_virtual, f"index.h5 {name} is a virtual dataset")
            compare(rep, f"index.h5 {name}", ds, dtype, values(name, shape, step))
    # Every shard directly: its datasets are exactly the slices the MANIFEST says it owns.
    for rank in sorted(shards):
        path = os.path.join(stepdir, f"shard-{rank}.h5")
        rep.expect(os.path.getsize(path) == shards[rank], f"{path} has the size its MANIFEST says")
        owned = [s for s in slices if s[7] == rank]
        with h5py.File(path, "r") as f:
            names = []
            f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
            rep.expect(sorted(names) == sorted(s[8] for s in owned),
                       f"{path} holds exactly the slices it owns ({len(owned)})")
            for name, dtype, glob, off, shape, _, _, _, dataset in owned:
                region = tuple(slice(o, o + s) for o, s in zip(off, shape))
                want = np.ascontiguousarray(values(name, glob, step)[region])
                compare(rep, f"{path} {dataset}{list(off)}+{list(shape)}", f[dataset], dtype, want)
    # Replicas are written once: the MANIFEST's slices of a tensor tile it exactly.
    for name, (dtype, shape) in m.items():
        cover = np.zeros(shape, dtype=np.int32)
        for s in slices:
            if s[0] == name:
                cover[tuple(slice(o, o + n) for o, n in zip(s[3], s[4]))] += 1
        rep.expect((cover == 1).all(), f"MANIFEST: the slices of {name} cover it exactly once")
    print(f"check_view: {rep.checks} checks, {rep.wrong} wrong")
    return 1 if rep.wrong else 0


def cmd_corrupt(stepdir, tensor, step, owner=None):
    _, slices = read_manifest(stepdir)
    for name, dtype, glob, off, shape, own, _, file, _ in slices:
        if name != tensor or (owner is not None and own != owner):
            continue
        region = tuple(slice(o, o + s) for o, s in zip(off, shape))
        pattern = np.ascontiguousarray(values(name, glob, step)[region]).tobytes()
        path = os.path.join(stepdir, f"shard-{file}.h5")
        with open(path, "rb") as f:
            data = bytearray(f.read())
        at = data.find(pattern)
        if at < 0 or data.find(pattern, at + 1) >= 0:
            print(f"{path}: the {len(pattern)} bytes of {name} found {'no' if at < 0 else 'more than one'} "
                  "time(s)", file=sys.stderr)
            return 1
        at += len(pattern) // 2
        data[at] ^= 0x5A
        with open(path, "r+b") as f:
            f.seek(at)
            f.write(bytes([data[at]]))
            f.flush()
            os.fsync(f.fileno())
        print(f"corrupted {path} at byte {at}")
        return 0
    print(f"{stepdir}: no slice of {tensor}" + (f" owned by {owner}" if owner is not None else ""),
          file=sys.stderr)
    return 1


def main(argv):
    if h5py is None:
        print("check_view.py: h5py is not installed", file=sys.stderr)
        return 3
    big = 0
    if "--big" in argv:
        i = argv.index("--big")
        big = int(argv[i + 1])
        del argv[i:i + 2]
    if len(argv) == 4 and argv[1] == "view":
        return cmd_view(argv[2], int(argv[3]), big)
    if len(argv) in (5, 6) and argv[1] == "corrupt":
        return cmd_corrupt(argv[2], argv[3], int(argv[4]), int(argv[5]) if len(argv) == 6 else None)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

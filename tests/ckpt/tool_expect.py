#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What `llmp ckpt` must report about checkpoints tests/ckpt/ck_check saved
as a PMIx singleton (tests/ckpt_tool.bats), computed here independently:
the model's tensors, their bytes from the same formulas as ck_check.c, and
their CRC-32C from a bitwise implementation of the polynomial. Plain Python
(no numpy, no h5py), so the tests run wherever python3 does.

    tool_expect.py inspect DOC.json STEPDIR STEP BIG [FILES]
        DOC is `llmp ckpt inspect --json` of STEPDIR: step, world, shards,
        meta, and every tensor (dtype, shape, bytes, its one slice, CRC).
        FILES is rank (the default: format 2, dataset NAME) or node (format
        3: the one rank's datasets under rank-0/).
    tool_expect.py list DOC.json ROOT NAME=STATE[+latest] ...
        DOC is `llmp ckpt list --json ROOT`: exactly the entries named, in
        that order, with their states, and the bytes of the files in each.
    tool_expect.py verify DOC.json BIG NAME=ok|FILE:TENSOR ...
        DOC is `llmp ckpt verify --json`: each checkpoint named is intact
        (ok, every byte of the model checked) or has a problem in FILE about
        TENSOR ("-" for none).
    tool_expect.py corrupt STEPDIR TENSOR STEP BIG
        Flips one byte in the middle of TENSOR's bytes in shard-0.h5, found
        by their known values; prints "corrupted PATH at byte N".
    tool_expect.py reseal MANIFEST
        Replaces the end line of an edited MANIFEST with the CRC-32C of the
        text before it, as a save writes it: a MANIFEST that is whole but
        disagrees with its files, as a faulty writer could leave one.

Exits 1 with a line saying what differs.
"""
import json
import os
import struct
import sys


def die(msg):
    sys.exit("tool_expect: " + msg)


# ------------------------------------------------------------- CRC-32C

def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the published check value

# ------------------------------------------------------------- the model

ESIZE = {"float32": 4, "float64": 8, "int32": 4, "uint8": 1, "float16": 2, "bfloat16": 2}


def model(big):
    """name -> (dtype, global shape), as ck_check.c registers them."""
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


def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def element(name, g, step):
    """Little-endian bytes of element g (row-major global index) at step."""
    if name == "layers/0/w_row":
        return struct.pack("<f", step + ((g * 7) % 101) * 0.125 - 6.0)
    if name == "layers/0/w_col":
        return struct.pack("<d", step * 1.5 + g / 1024.0 - 0.5)
    if name == "layers/0/w_col_bf16":
        return struct.pack("<f", ((g + step) % 64) * 0.5 - 8.0)[2:4]  # the high half
    if name == "layers/0/bias":
        return struct.pack("<i", step * 1000 - g * 37)
    if name == "emb/u8":
        return struct.pack("<B", (g * 13 + step) % 251)
    if name == "norm/f16":
        return struct.pack("<e", ((g * 3 + step) % 512) * 0.25 - 32.0)
    if name == "big/w":
        return struct.pack("<f", float((g * 5 + step) % 65536))
    raise KeyError(name)


def tensor_bytes(name, shape, step):
    return b"".join(element(name, g, step) for g in range(count(shape)))


def meta_bytes(step):
    return ("step=%d loader_pos=%d" % (step, step * 4096 + 17)).encode()


# -------------------------------------------------------------- commands

def file_entry(path, **keys):
    """What inspect says of a whole file: its size and CRC-32C, recomputed here."""
    data = open(path, "rb").read()
    return dict(keys, file=os.path.basename(path), bytes=len(data), crc32c="0x%08x" % crc32c(data))


def check_inspect(doc, stepdir, step, big, files="rank"):
    want = model(big)
    expect = {"step": step, "world": 1, "format": 3 if files == "node" else 2, "path": stepdir}
    for k, v in expect.items():
        if doc.get(k) != v:
            die("inspect: %s = %r, expected %r" % (k, doc.get(k), v))
    if doc["layout"].get("world") != 1 or doc["layout"].get("tp") != 1:
        die("inspect: layout %r" % doc["layout"])
    meta = meta_bytes(step)
    if doc["meta"] != {"file": "meta.bin", "bytes": len(meta), "crc32c": "0x%08x" % crc32c(meta)}:
        die("inspect: meta %r" % doc["meta"])
    shard = os.path.join(stepdir, "shard-0.h5")
    if doc["shards"] != [file_entry(shard, rank=0)]:
        die("inspect: shards %r, expected [%r]" % (doc["shards"], file_entry(shard, rank=0)))
    index = file_entry(os.path.join(stepdir, "index.h5"))
    if doc["index"] != index:
        die("inspect: index %r, expected %r" % (doc["index"], index))
    shard_data = open(shard, "rb").read()
    names = [t["name"] for t in doc["tensors"]]
    if names != sorted(want):
        die("inspect: tensors %r, expected %r" % (names, sorted(want)))
    for t in doc["tensors"]:
        dtype, shape = want[t["name"]]
        nbytes = count(shape) * ESIZE[dtype]
        if t["dtype"] != dtype or tuple(t["shape"]) != shape or t["bytes"] != nbytes:
            die("inspect: %s is %s %r %d bytes, expected %s %r %d" % (
                t["name"], t["dtype"], t["shape"], t["bytes"], dtype, shape, nbytes))
        data = tensor_bytes(t["name"], shape, step)
        at = shard_data.find(data)  # where its known bytes are in the shard
        if at < 0 or shard_data.find(data, at + 1) >= 0:
            die("inspect: the bytes of %s are not in shard-0.h5 exactly once" % t["name"])
        dataset = ("rank-0/" if files == "node" else "") + t["name"]
        one = {"offset": [0] * len(shape), "shape": list(shape), "owner": 0, "file": "shard-0.h5",
               "dataset": dataset, "at": at, "bytes": nbytes, "crc32c": "0x%08x" % crc32c(data)}
        if t["slices"] != [one]:
            die("inspect: %s slices %r, expected [%r]" % (t["name"], t["slices"], one))
    print("inspect: %d tensors as expected" % len(names))


def tree_bytes(path):
    total = 0
    for top, _, files in os.walk(path):
        for f in files:
            p = os.path.join(top, f)
            if os.path.isfile(p) and not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def check_list(doc, root, expected):
    got = doc["checkpoints"]
    if [e["name"] for e in got] != [x.split("=")[0] for x in expected]:
        die("list: entries %r, expected %r" % ([e["name"] for e in got], expected))
    for e, x in zip(got, expected):
        state = x.split("=")[1]
        latest = state.endswith("+latest")
        state = state.replace("+latest", "")
        if e["state"] != state or e["latest"] != latest:
            die("list: %s is %s latest=%s, expected %s latest=%s" % (e["name"], e["state"], e["latest"],
                                                                  state, latest))
        size = tree_bytes(os.path.join(root, e["name"]))
        if e["bytes"] != size:
            die("list: %s has %d bytes, the files hold %d" % (e["name"], e["bytes"], size))
        complete, refused = state == "complete", state in ("corrupt-manifest", "unsupported-format")
        if complete != (e["tensors"] is not None) or refused != (e["problem"] is not None):
            die("list: %s: tensors %r, problem %r" % (e["name"], e["tensors"], e["problem"]))
    print("list: %d entries as expected" % len(got))


def check_verify(doc, expected, nbytes):
    got = {c["name"]: c for c in doc["checkpoints"]}
    if sorted(got) != sorted(x.split("=")[0] for x in expected):
        die("verify: checkpoints %r" % sorted(got))
    all_ok = True
    for x in expected:
        name, what = x.split("=", 1)
        c = got[name]
        if what == "ok":
            if not c["ok"] or c["problems"] or c["bytes_checked"] != nbytes:
                die("verify: %s: %r, expected intact with %d bytes checked" % (name, c, nbytes))
            continue
        all_ok = False
        file, tensor = what.split(":")
        tensor = None if tensor == "-" else tensor
        if c["ok"] or not any(p["file"] == file and p["tensor"] == tensor and file in p["message"]
                              for p in c["problems"]):
            die("verify: %s: %r, expected a problem in %s about %s" % (name, c["problems"], file, tensor))
    if doc["ok"] != all_ok:
        die("verify: ok = %r" % doc["ok"])
    print("verify: %d checkpoints as expected" % len(expected))


def corrupt(stepdir, tensor, step, big):
    dtype, shape = model(big)[tensor]
    want = tensor_bytes(tensor, shape, step)
    path = os.path.join(stepdir, "shard-0.h5")
    with open(path, "r+b") as f:
        data = f.read()
        at = data.find(want)
        if at < 0 or data.find(want, at + 1) >= 0:
            die("corrupt: the bytes of %s are not in %s exactly once" % (tensor, path))
        at += len(want) // 2
        f.seek(at)
        f.write(bytes([data[at] ^ 0x10]))
    print("corrupted %s at byte %d" % (path, at))


def reseal(path):
    data = open(path, "rb").read()
    body = data[:data.rindex(b"\nend ") + 1] if b"\nend " in data else data
    with open(path, "wb") as f:
        f.write(body + b"end 0x%08x\n" % crc32c(body))
    print("resealed %s" % path)


def main(argv):
    if len(argv) < 3:
        die(__doc__)
    cmd = argv[1]
    if cmd == "inspect":
        check_inspect(json.load(open(argv[2])), argv[3], int(argv[4]), int(argv[5]), *argv[6:7])
    elif cmd == "list":
        check_list(json.load(open(argv[2])), argv[3], argv[4:])
    elif cmd == "verify":
        nbytes = sum(count(shape) * ESIZE[dtype] for dtype, shape in model(int(argv[3])).values())
        check_verify(json.load(open(argv[2])), argv[4:], nbytes)
    elif cmd == "corrupt":
        corrupt(argv[2], argv[3], int(argv[4]), int(argv[5]))
    elif cmd == "reseal":
        reseal(argv[2])
    else:
        die("unknown command " + cmd)


main(sys.argv)

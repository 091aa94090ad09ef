# SPDX-License-Identifier: BSD-3-Clause
"""torch's own CUDA tensors through llmp.checkpoint, on a real GPU (scripts/gpu-run.sh).

python3 tests/gpu/torch_ckpt.py ROOT

Saves CUDA tensors of four dtypes (synchronously, then asynchronously with the
tensors overwritten as soon as save returns, then through a small staging
limit), loads them into CUDA tensors of another slicing and into host
tensors, and compares every bit with the values computed here. Prints one
line per check and "torch-ckpt: passed" or exits 1 naming the first mismatch.
"""
import sys
import time

import torch

import llmp.checkpoint as ck


def bits(t):
    """The tensor's bytes as integers, so that NaN and -0.0 compare as bits."""
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.contiguous().view(view)


def same(got, want, what):
    if not torch.equal(bits(got.cpu()), bits(want.cpu())):
        print("torch-ckpt: FAIL %s differs" % what)
        sys.exit(1)
    print("torch-ckpt: %s bit-identical" % what)


def values(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    return torch.randn(shape, generator=g, dtype=torch.float32).to(dtype)


def main():
    root = sys.argv[1]
    dev = torch.device("cuda", 0)
    shapes = {"w": ((4096, 1024), torch.float32), "b": ((1000, 7, 9), torch.bfloat16),
              "h": ((333, 77), torch.float16), "e": ((1 << 20,), torch.uint8)}
    for mode, step, opts in (("sync", 1, {}), ("async", 2, {}), ("staged", 3, {"staging_max": 1 << 20})):
        want = {k: values(s, d, 100 * step + i) for i, (k, (s, d)) in enumerate(shapes.items())}
        sd = {k: v.to(dev) for k, v in want.items()}
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with ck.Checkpoint(root, sd, **opts) as c:
            if mode == "async":
                c.save(step, async_save=True)
                for v in sd.values():  # the save holds the values of the call
                    v.zero_()
                c.wait()
            else:
                c.save(step)
            stats = c.stats()
        t = time.perf_counter() - t0
        nbytes = sum(v.numel() * v.element_size() for v in want.values())
        print("torch-ckpt: %s save of %d bytes in %.3f s, device_bytes %d" % (mode, nbytes, t, stats["device_bytes"]))
        if stats["device_bytes"] != nbytes:
            print("torch-ckpt: FAIL %s: device_bytes %d, expected %d" % (mode, stats["device_bytes"], nbytes))
            sys.exit(1)
        # Into CUDA tensors sliced another way (w's columns 256.., b's middle rows) and into host tensors.
        back_w = torch.empty(4096, 768, dtype=torch.float32, device=dev)
        back_b = torch.empty(500, 7, 9, dtype=torch.bfloat16, device=dev)
        host_h = torch.empty(333, 77, dtype=torch.float16)
        back_e = torch.empty(1 << 20, dtype=torch.uint8, device=dev)
        ck.load({"w": ck.Shard(back_w, (4096, 1024), (0, 256)), "b": ck.Shard(back_b, (1000, 7, 9), (250, 0, 0)),
                 "h": host_h, "e": back_e}, root, step)
        same(back_w, want["w"][:, 256:], "%s w (columns 256..1023, on the GPU)" % mode)
        same(back_b, want["b"][250:750], "%s b (rows 250..749, on the GPU)" % mode)
        same(host_h, want["h"], "%s h (into host memory)" % mode)
        same(back_e, want["e"], "%s e (on the GPU)" % mode)
    print("torch-ckpt: passed")


if __name__ == "__main__":
    main()

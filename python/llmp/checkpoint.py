# SPDX-License-Identifier: BSD-3-Clause
"""llmp.checkpoint - torch state dicts in llmp's sharded HDF5 checkpoints, through libllmp.

    import llmp.checkpoint as ckpt
    ckpt.save(model.state_dict(), "/scratch/run1", step=400)     # collective
    step, meta = ckpt.load(model.state_dict(), "/scratch/run1")  # the newest complete one

Every tensor of the state dict is registered with libllmp's llmp_ckpt
(include/llmp/llmp_ckpt.h) by the address of its memory: a save writes the
tensor's bytes from where they are, a load reads into them, with no copy in
Python. A plain tensor is the whole tensor, held alike by every rank (libllmp
writes a replica once); a DTensor, or a tensor wrapped in Shard(), is this
rank's slice of a global tensor. libllmp's load reads each rank's slices from
whichever shards hold them, so the loading layout and world size need not be
the saving ones. The format is doc/checkpoint.md; h5py reads it directly
(python/README.md says how, bfloat16 included).

libllmp needs a context (llmp_init): under `srun --mpi=pmix` the job's, with
no launcher a PMIx singleton (rank 0 of a world of 1). init() makes it, or
the first Checkpoint does; save and load are collective over every rank of it.
"""

import ctypes
import os
from collections.abc import Mapping

import torch

from . import _libllmp as _c
from ._libllmp import LIBRARY_ENV, CheckpointError, library, library_candidates  # noqa: F401

#: torch dtype -> llmp_dtype (include/llmp/llmp_dtype.h, mirrored in _libllmp.py).
DTYPES = {
    torch.float32: _c.DTYPE["LLMP_FLOAT32"],
    torch.float64: _c.DTYPE["LLMP_FLOAT64"],
    torch.bfloat16: _c.DTYPE["LLMP_BFLOAT16"],
    torch.float16: _c.DTYPE["LLMP_FLOAT16"],
    torch.int32: _c.DTYPE["LLMP_INT32"],
    torch.int64: _c.DTYPE["LLMP_INT64"],
    torch.uint8: _c.DTYPE["LLMP_UINT8"],
}

_MAX_DIMS = _c.CONSTANTS["LLMP_CKPT_MAX_DIMS"]
_MAX_NAME = _c.CONSTANTS["LLMP_CKPT_MAX_NAME"]
_NEWEST = _c.CONSTANTS["LLMP_CKPT_NEWEST"]
#: Metadata bytes a load takes in memory; more is read from meta.bin (llmp.Job reads this much).
META_CAP = 1 << 20


def _status_name(status):
    return _c.status_name(status)


# --------------------------------------------------------------- the context

class Context:
    """This process's libllmp context (llmp_init): its rank and world. One per process."""

    def __init__(self, spec=None, timeout=None):
        lib = library()
        opts = _c.InitOpts(spec=spec.encode() if spec else None, timeout_s=float(timeout or 0))
        handle = ctypes.c_void_p()
        rc = lib.llmp_init(ctypes.byref(opts), ctypes.byref(handle))
        if rc != 0:
            why = lib.llmp_errmsg(handle).decode(errors="replace") if handle else \
                lib.llmp_strerror(rc).decode()
            if handle:
                lib.llmp_finalize(handle)
            raise CheckpointError("llmp.checkpoint: llmp_init failed (%s): %s"
                                  % (_status_name(rc), why), _status_name(rc))
        self._lib, self.handle = lib, handle
        self.rank = lib.llmp_rank(handle)
        self.world = lib.llmp_world_size(handle)

    def check(self, rc, what):
        """Raise CheckpointError for a failed call, with libllmp's own message."""
        if rc != 0:
            raise CheckpointError("llmp.checkpoint: %s failed on rank %d (%s): %s"
                                  % (what, self.rank, _status_name(rc),
                                     self._lib.llmp_errmsg(self.handle).decode(errors="replace")),
                                  _status_name(rc))

    def finalize(self):
        """llmp_finalize; close every Checkpoint of this context first."""
        global _context
        if self.handle:
            self._lib.llmp_finalize(self.handle)
            self.handle = None
        if _context is self:
            _context = None

    def __repr__(self):
        return "llmp.checkpoint.Context(rank=%d, world=%d)" % (self.rank, self.world)


_context = None


def init(spec=None, timeout=None):
    """This process's Context, made on first call (collective: every rank of the job calls it).

    spec: the layout in --llm-parallel's grammar (None: the plugin's
    LLMP_PARALLEL, else dp = world); timeout: seconds to wait for a peer.
    """
    global _context
    if _context is None:
        _context = Context(spec, timeout)
    return _context


# ------------------------------------------------------------------- slices

class Shard:
    """This rank's slice of a global tensor: `local` holds global[offset : offset + local.shape].

    Put one in a state dict in place of a tensor that is sharded by hand
    (for a DTensor llmp works this out itself):
        sd["w"] = llmp.checkpoint.Shard(w_local, global_shape=(1024, 512), offset=(512 * tp_rank, 0))
    """

    def __init__(self, local, global_shape, offset):
        if not isinstance(local, torch.Tensor):
            raise TypeError("llmp.checkpoint.Shard: local must be a torch.Tensor, not %s"
                            % type(local).__name__)
        self.local = local
        self.global_shape = tuple(int(x) for x in global_shape)
        self.offset = tuple(int(x) for x in offset)
        if len(self.global_shape) != local.dim() or len(self.offset) != local.dim():
            raise ValueError("llmp.checkpoint.Shard: local has %d dimensions, global_shape %d and "
                             "offset %d" % (local.dim(), len(self.global_shape), len(self.offset)))

    @classmethod
    def split(cls, local, dim, index, parts):
        """Part `index` of `parts` equal parts along dimension `dim` (as tp splits a weight)."""
        shape = list(local.shape)
        offset = [0] * local.dim()
        offset[dim] = index * shape[dim]
        shape[dim] *= parts
        return cls(local, shape, offset)

    def __repr__(self):
        return "Shard(%s %s of %s at %s)" % (self.local.dtype, tuple(self.local.shape),
                                           self.global_shape, self.offset)


def _dtensor_slice(t):
    """(local tensor, global shape, offset) of a DTensor, or None for anything else."""
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # torch without DTensor
        return None
    if not isinstance(t, DTensor):
        return None
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset
    shape, offset = compute_local_shape_and_global_offset(t.shape, t.device_mesh, t.placements)
    local = t._local_tensor
    if tuple(local.shape) != tuple(shape):
        raise ValueError("DTensor of global shape %s: local shape %s, torch computes %s"
                         % (tuple(t.shape), tuple(local.shape), tuple(shape)))
    # Partial placements are sums pending, not slices: save their reduced value.
    if any(p.is_partial() for p in t.placements):
        raise ValueError("DTensor with a Partial placement %s: call .redistribute() to "
                         "Replicate or Shard before saving" % (t.placements,))
    return local, tuple(t.shape), tuple(int(o) for o in offset)


def flatten_state_dict(state_dict, prefix=""):
    """(name, value) for every leaf of a nested state dict; nested keys joined by '/'."""
    for key, value in state_dict.items():
        name = prefix + str(key)
        if isinstance(value, Mapping):
            yield from flatten_state_dict(value, name + "/")
        else:
            yield name, value


class Entry:
    """One registered tensor: what libllmp reads and writes, and what the program holds.

    Checkpoint's, and llmp.Job's, which registers the same way with the job's checkpoint.
    """

    def __init__(self, name, value):
        self.name = name
        if isinstance(value, Shard):
            tensor, global_shape, offset = value.local, value.global_shape, value.offset
        elif isinstance(value, torch.Tensor):
            sliced = _dtensor_slice(value)
            if sliced:
                tensor, global_shape, offset = sliced
            else:
                tensor, global_shape, offset = value, tuple(value.shape), (0,) * value.dim()
        else:
            raise TypeError("llmp.checkpoint: state dict entry '%s' is a %s; only tensors, "
                            "DTensors, llmp.checkpoint.Shard and nested dicts of them are "
                            "saved (put other values in meta)" % (name, type(value).__name__))
        if not 1 <= len(name.encode()) <= _MAX_NAME or any(c <= " " or c > "~" for c in name):
            raise ValueError("llmp.checkpoint: tensor name '%s' must be 1-%d printable ASCII "
                             "characters without spaces" % (name, _MAX_NAME))
        if tensor.dtype not in DTYPES:
            raise TypeError("llmp.checkpoint: tensor '%s' is %s; llmp checkpoints hold %s"
                            % (name, tensor.dtype, ", ".join(str(d) for d in DTYPES)))
        # CUDA tensors are registered by their device address: libllmp asks the CUDA driver
        # the process loaded, and stages their slices through pinned host memory
        # (doc/checkpoint.md). Other devices' memory is not CUDA's: libllmp cannot reach it.
        if tensor.device.type not in ("cpu", "cuda"):
            raise ValueError("llmp.checkpoint: tensor '%s' is on %s; llmp saves CPU and CUDA "
                             "tensors: move it with .cpu()" % (name, tensor.device))
        if tensor.numel() == 0:
            raise ValueError("llmp.checkpoint: tensor '%s' has shape %s: an empty tensor has no "
                             "slice to save" % (name, tuple(tensor.shape)))
        if tensor.dim() > _MAX_DIMS:
            raise ValueError("llmp.checkpoint: tensor '%s' has %d dimensions (at most %d)"
                             % (name, tensor.dim(), _MAX_DIMS))
        self.tensor = tensor
        # libllmp's slices have at least one dimension: a 0-d tensor is stored as shape (1,).
        self.global_shape = global_shape or (1,)
        self.offset = offset or (0,)
        self.shape = tuple(tensor.shape) or (1,)
        # Contiguous memory is registered as it is (zero copy); anything else goes
        # through a contiguous copy, refreshed before a save and copied back after a load.
        self.buffer = tensor if tensor.is_contiguous() else tensor.contiguous()
        self.address = self.buffer.data_ptr()

    def before_save(self):
        self.check_memory()
        if self.buffer is not self.tensor:
            self.buffer.copy_(self.tensor)

    def after_load(self):
        if self.buffer is not self.tensor:
            self.tensor.copy_(self.buffer)

    def check_memory(self):
        """Refuse a tensor whose memory moved since it was registered (before a save or load)."""
        # `param.data = other` swaps a tensor's memory behind the registered address.
        if self.buffer is self.tensor and self.tensor.data_ptr() != self.address:
            raise CheckpointError("llmp.checkpoint: tensor '%s' moved to other memory since the "
                                  "Checkpoint registered it; make a new Checkpoint" % self.name)


def u64_array(values):
    """values as a C uint64_t array, for a shape or an offset."""
    return (ctypes.c_uint64 * len(values))(*values)


# --------------------------------------------------------------- checkpoints

class Checkpoint:
    """The tensors of a state dict registered with one llmp_ckpt handle under `root`.

    Made once, saved and loaded many times (collective calls, every rank of
    the context in the same order): the tensors must stay the same objects
    in the same memory. keep: complete checkpoints kept (0: libllmp's 2);
    alignment: file offset alignment of large datasets (0: libllmp's default);
    staging_max: bytes an async save may copy (0: no limit).
    """

    def __init__(self, root, state_dict, keep=0, alignment=0, staging_max=0, context=None,
                 allow_empty=False):
        self.context = context or init()
        self.root = os.fspath(root)
        self.entries = [Entry(name, value) for name, value in flatten_state_dict(state_dict)]
        # allow_empty: a rank that holds no slice still takes part in the collective
        # save or load (llmp.dcp: DCP's plan may give a rank nothing to write).
        if not self.entries and not allow_empty:
            raise ValueError("llmp.checkpoint: the state dict for %s holds no tensor" % self.root)
        lib, ctx = self.context._lib, self.context
        self._lib = lib
        self.handle = ctypes.c_void_p()
        opts = _c.CkptOpts(root=self.root.encode(), keep=keep, alignment=alignment, staging_max=staging_max)
        ctx.check(lib.llmp_ckpt_open(ctx.handle, ctypes.byref(opts), ctypes.byref(self.handle)),
                  "llmp_ckpt_open(%s)" % self.root)
        try:
            for e in self.entries:
                n = len(e.shape)
                ctx.check(lib.llmp_ckpt_register(self.handle, e.name.encode(), DTYPES[e.tensor.dtype], n,
                                                 u64_array(e.global_shape), u64_array(e.offset),
                                                 u64_array(e.shape), ctypes.c_void_p(e.address)),
                          "registering tensor '%s'" % e.name)
        except BaseException:
            self.close()
            raise

    def _handle(self):
        if not self.handle:
            raise CheckpointError("llmp.checkpoint: the Checkpoint of %s is closed" % self.root)
        return self.handle

    def save(self, step, meta=b"", async_save=False):
        """Write checkpoint `step` (collective); with async_save, return once staged (wait() commits)."""
        handle = self._handle()
        for e in self.entries:
            e.before_save()
        meta = bytes(meta)
        call = self._lib.llmp_ckpt_save_async if async_save else self._lib.llmp_ckpt_save
        self.context.check(call(handle, int(step), meta, len(meta)),
                           "%s of step %d to %s" % ("async save" if async_save else "save", step, self.root))

    def prepare_async(self):
        """Plan async saves and allocate their staging memory now (collective)."""
        self.context.check(self._lib.llmp_ckpt_prepare_async(self._handle()), "prepare_async")

    def wait(self):
        """Commit a pending async save (collective when one is pending)."""
        self.context.check(self._lib.llmp_ckpt_wait(self._handle()), "wait for the async save")

    def load(self, step=None):
        """Fill every tensor from checkpoint `step` (None: the newest complete one); (step, meta)."""
        loaded, meta, metalen = self.load_head(step)
        if len(meta) < metalen:  # more than the buffer: meta.bin itself, its CRC checked by the load
            path = os.path.join(self.root, "step-%d" % loaded, "meta.bin")
            with open(path, "rb") as f:
                meta = f.read()
            if len(meta) != metalen:
                raise CheckpointError("llmp.checkpoint: %s holds %d bytes, the load saw %d"
                                      % (path, len(meta), metalen))
        return loaded, meta

    def load_head(self, step=None):
        """load, but meta.bin is not read past what libllmp returned: (step, the metadata's first
        bytes (all of it up to 1 MiB), its full size). For a caller that reads meta.bin itself."""
        handle = self._handle()
        for e in self.entries:
            e.check_memory()
        loaded = ctypes.c_uint64()
        metalen = ctypes.c_size_t()
        buf = ctypes.create_string_buffer(META_CAP)
        want = _NEWEST if step is None else int(step)
        what = "load of %s from %s" % ("the newest step" if step is None else "step %d" % step, self.root)
        self.context.check(self._lib.llmp_ckpt_load(handle, want, ctypes.byref(loaded), buf, META_CAP,
                                                     ctypes.byref(metalen)), what)
        for e in self.entries:
            e.after_load()
        return loaded.value, buf.raw[:min(metalen.value, META_CAP)], metalen.value

    def stats(self):
        """What the last save cost this rank: a dict of llmp_ckpt_stats' fields."""
        s = _c.CkptStats()
        self.context.check(self._lib.llmp_ckpt_get_stats(self._handle(), ctypes.byref(s)), "get_stats")
        return {name: getattr(s, name) for name, _ in _c.CkptStats._fields_ if name != "size"}

    def close(self):
        """Close the handle (collective while an async save is pending: it is committed first)."""
        if self.handle:
            self._lib.llmp_ckpt_close(self.handle)
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def save(state_dict, root, step, meta=b"", **opts):
    """Save a state dict as checkpoint `step` under root (collective); opts as Checkpoint's."""
    with Checkpoint(root, state_dict, **opts) as ck:
        ck.save(step, meta)


def load(state_dict, root, step=None, **opts):
    """Load checkpoint `step` (None: the newest complete) into a state dict's tensors, in place.

    Collective; returns (step, meta). The tensors may be sliced otherwise
    than when saved (another layout or world size): libllmp reshards.
    """
    with Checkpoint(root, state_dict, **opts) as ck:
        return ck.load(step)


def __getattr__(name):
    # torch.distributed.checkpoint's storage layer lives in llmp.dcp, imported on first use.
    if name in ("DcpWriter", "DcpReader"):
        from . import dcp
        return getattr(dcp, name)
    raise AttributeError("module 'llmp.checkpoint' has no attribute '%s'" % name)

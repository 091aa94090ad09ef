# SPDX-License-Identifier: BSD-3-Clause
"""llmp.dcp - torch.distributed.checkpoint (DCP) storage in llmp's checkpoints.

    import torch.distributed.checkpoint as dcp
    from llmp.checkpoint import DcpWriter, DcpReader
    dcp.save(state_dict, storage_writer=DcpWriter("/scratch/run1", step=400))
    dcp.load(state_dict, storage_reader=DcpReader("/scratch/run1"))     # the newest complete step

DCP plans (which rank writes which chunk, resharding on load); llmp stores:
every chunk DCP gives a rank to write is registered with libllmp as that
rank's slice of the global tensor, and one collective llmp_ckpt_save writes
ROOT/step-N like any llmp checkpoint (shards, an index of whole tensors that
h5py reads, a MANIFEST with checksums, an atomic commit). A load registers
the regions DCP's read plan asks of each tensor and lets libllmp read them
from whichever shards hold them.

Where the two models differ (doc/checkpoint.md, "DCP"):
- DCP's Metadata (a pickle) is written by the coordinator in finish(), after
  every rank wrote; llmp commits inside the collective save, before that.
  So the coordinator builds the Metadata from the global plan (as DCP's
  default planner does: the plans' items, their planner_data) and it goes
  into the save as llmp's user metadata (meta.bin), inside the commit and
  under the MANIFEST's checksum. finish() checks that DCP's own Metadata is
  the same. No file is written after the commit: a step is complete, DCP
  metadata included, or absent.
- Bytes items (optimizer step counts, LR scheduler state, any non-tensor
  value DCP pickles) are uint8 datasets of their bytes, named by their key,
  in the writing rank's shard: checksummed like tensors, readable by h5py.
- Tensors of a dtype llmp does not store (bool, int8, int16, complex, ...)
  are stored as their raw bytes: a uint8 dataset with one more dimension,
  the element's size. An empty tensor has no dataset (its shape is in the
  Metadata). A 0-d tensor is a dataset of shape (1,).
- A key that is not a valid llmp name (spaces, more than 127 bytes) is
  stored as dcp-hashed/<hash>; Metadata.storage_data maps each chunk to its
  dataset.

Both sides are collective over libllmp's context (llmp.checkpoint.init()):
DCP's process group must hold every rank of it, which the coordinator checks.
Before the collective save or load, the ranks agree (one small llmp
allreduce) that every one of them resolved its items: a rank that fails
there makes every rank raise, and nothing is committed.
"""

import ctypes
import dataclasses
import hashlib
import io
import os
import pickle
import re
from collections import ChainMap

import torch
from torch.distributed.checkpoint.metadata import (BytesStorageMetadata, Metadata, MetadataIndex,
                                                   TensorStorageMetadata)
from torch.distributed.checkpoint.planner import LoadItemType, WriteItemType
from torch.distributed.checkpoint.storage import StorageReader, StorageWriter, WriteResult
from torch.futures import Future

from . import _libllmp as _c
from . import checkpoint as _ck

#: What meta.bin of a step saved through DcpWriter starts with; the pickled Metadata follows.
MAGIC = b"llmp-dcp 1\n"

_LLMP_INT64, _LLMP_MAX = _c.DTYPE["LLMP_INT64"], _c.OP["LLMP_MAX"]  # llmp_dtype.h's enums
_STEP_DIR = re.compile(r"^step-[0-9]+$")


def check_own(path):
    """Raise PermissionError unless path belongs to this user and nobody else may write to it
    (group or world write only with the sticky bit, as on /tmp): the rule of llmp's
    own_dir.h, for what a load unpickles."""
    st = os.stat(path)
    if st.st_uid != os.geteuid():
        raise PermissionError("llmp.dcp: %s belongs to uid %d, not to this user (%d): its metadata "
                              "is not unpickled (another user could have written it)"
                              % (path, st.st_uid, os.geteuid()))
    if st.st_mode & 0o022 and not st.st_mode & 0o1000:
        raise PermissionError("llmp.dcp: %s is writable by others (mode %04o): its metadata is not "
                              "unpickled (chmod go-w it)" % (path, st.st_mode & 0o7777))


def dataset_name(fqn):
    """The llmp tensor name of a DCP key: the key itself when llmp takes it as a name."""
    ok = (1 <= len(fqn.encode()) <= _ck._MAX_NAME and all(" " < c <= "~" for c in fqn)
          and not fqn.startswith("/") and not fqn.endswith("/") and "//" not in fqn and fqn != ".")
    if ok:
        return fqn
    return "dcp-hashed/" + hashlib.sha256(fqn.encode()).hexdigest()[:32]


def _agree(ctx, failed):
    """True when any rank of ctx's world failed (one llmp allreduce, MAX of a flag)."""
    lib = ctx._lib
    comm = ctypes.c_void_p()
    ctx.check(lib.llmp_comm_world(ctx.handle, ctypes.byref(comm)), "llmp_comm_world")
    mine, anyone = ctypes.c_int64(1 if failed else 0), ctypes.c_int64()
    ctx.check(lib.llmp_allreduce(comm, ctypes.byref(mine), ctypes.byref(anyone), 1, _LLMP_INT64, _LLMP_MAX),
              "agreeing whether every rank is ready")
    return anyone.value != 0


def _stored_dtype(dtype):
    """(dtype llmp stores, bytes per element of the trailing raw dimension or 0)."""
    if dtype in _ck.DTYPES:
        return dtype, 0
    return torch.uint8, torch.empty((), dtype=dtype).element_size()


def _as_stored(tensor, shape):
    """A contiguous CPU tensor of `shape` (a 0-d one as (1,)) in llmp's terms: itself, or its raw bytes."""
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous().reshape(tuple(shape) or (1,))
    _, raw = _stored_dtype(t.dtype)
    if raw:
        t = t.view(torch.uint8).reshape(tuple(t.shape) + (raw,))
    return t


def _slice_of(dtype, global_shape, offset, shape):
    """(global shape, offset, shape) of a region as llmp registers it (0-d and raw dtypes mapped)."""
    global_shape, offset, shape = tuple(global_shape) or (1,), tuple(offset) or (0,), tuple(shape) or (1,)
    _, raw = _stored_dtype(dtype)
    if raw:
        return global_shape + (raw,), offset + (0,), shape + (raw,)
    return global_shape, offset, shape


@dataclasses.dataclass(frozen=True)
class _LocalPlanData:
    """What each rank tells the coordinator: where it is in libllmp's world, what it saves."""
    llmp_rank: int
    llmp_world: int
    root: str
    step: int


@dataclasses.dataclass(frozen=True)
class _GlobalPlanData:
    """What the coordinator hands each rank: the llmp user metadata (libllmp takes rank 0's)."""
    meta: bytes


def _metadata_of(plans):
    """DCP's Metadata as DefaultSavePlanner builds it from the global plan, with our storage_data."""
    md, names = {}, {}
    for plan in plans:
        for item in plan.items:
            fqn = item.index.fqn
            if item.type == WriteItemType.BYTE_IO:
                md[fqn] = BytesStorageMetadata()
                names[MetadataIndex(fqn)] = dataset_name(fqn)
                continue
            td = item.tensor_data
            entry = md.setdefault(fqn, TensorStorageMetadata(properties=td.properties, size=td.size,
                                                             chunks=[]))
            entry.chunks.append(td.chunk)
            names[MetadataIndex(fqn, td.chunk.offsets)] = dataset_name(fqn)
    data = [p.planner_data for p in plans]
    planner_data = dict(ChainMap(*data)) if data and all(isinstance(d, dict) for d in data) else None
    return Metadata(state_dict_metadata=md, planner_data=planner_data, storage_data=names)


def _done(value):
    fut = Future()
    fut.set_result(value)
    return fut


class DcpWriter(StorageWriter):
    """Writes dcp.save's plan as llmp checkpoint `step` under `root` (collective, every rank).

    keep: complete checkpoints kept under root (0: libllmp's 2); alignment:
    as llmp.checkpoint.Checkpoint's. A checkpoint_id given to dcp.save
    replaces root.
    """

    def __init__(self, root, step, keep=0, alignment=0, context=None):
        super().__init__()
        self.root = os.fspath(root)
        self.step = int(step)
        self.keep, self.alignment = keep, alignment
        self._context = context
        self._metadata = None

    def reset(self, checkpoint_id=None):
        if checkpoint_id is not None:
            self.root = os.fspath(checkpoint_id)
        self._metadata = None

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return isinstance(checkpoint_id, (str, os.PathLike))

    def set_up_storage_writer(self, is_coordinator, *args, **kwargs):
        self.is_coordinator = is_coordinator
        self.ctx = self._context or _ck.init()

    def prepare_local_plan(self, plan):
        return dataclasses.replace(plan, storage_data=_LocalPlanData(self.ctx.rank, self.ctx.world,
                                                                     self.root, self.step))

    def prepare_global_plan(self, plans):
        if any(not p.usable for p in plans):
            # A cached round hands the storage layer empty plans, and the Metadata saved
            # with the step is built from them: refused before anything is written.
            raise ValueError("llmp.dcp: DcpWriter does not support DefaultSavePlanner's "
                             "enable_plan_caching (its cached rounds give the storage layer empty plans)")
        mine = [p.storage_data for p in plans]
        world = self.ctx.world
        if sorted(d.llmp_rank for d in mine) != list(range(world)):
            raise ValueError("llmp.dcp: dcp.save's process group has %d ranks (libllmp ranks %s); "
                             "llmp saves collectively over libllmp's whole world of %d: use the "
                             "default group" % (len(plans), sorted(d.llmp_rank for d in mine), world))
        if len({(d.root, d.step) for d in mine}) != 1:
            raise ValueError("llmp.dcp: the ranks' DcpWriters disagree on root and step: %s"
                             % sorted({(d.root, d.step) for d in mine}))
        self._metadata = _metadata_of(plans)
        meta = MAGIC + pickle.dumps(self._metadata, protocol=pickle.HIGHEST_PROTOCOL)
        return [dataclasses.replace(p, storage_data=_GlobalPlanData(meta if d.llmp_rank == 0 else b""))
                for p, d in zip(plans, mine)]

    def write_data(self, plan, planner):
        results, state, failure, ck = [], {}, None, None
        try:
            for item in plan.items:
                results.append(self._stage(item, planner, state))
            ck = _ck.Checkpoint(self.root, state, keep=self.keep, alignment=self.alignment,
                                context=self.ctx, allow_empty=True)
        except Exception as e:  # told to every rank below, then raised here
            failure = e
        try:
            if _agree(self.ctx, failure is not None):
                if failure is not None:
                    raise failure
                raise _ck.CheckpointError("llmp.dcp: rank %d: another rank failed before step %d was "
                                          "written; nothing saved" % (self.ctx.rank, self.step))
            ck.save(self.step, plan.storage_data.meta)
        finally:
            if ck is not None:
                ck.close()
        return _done(results)

    def _stage(self, item, planner, state):
        """Put one WriteItem into `state` as an llmp slice; its WriteResult."""
        fqn = item.index.fqn
        name = dataset_name(fqn)
        if name in state:
            raise ValueError("llmp.dcp: rank %d writes two chunks of '%s'; llmp registers one slice "
                             "of a tensor per rank" % (self.ctx.rank, fqn))
        data = planner.resolve_data(item)
        if item.type == WriteItemType.BYTE_IO:
            raw = data.getvalue() if isinstance(data, io.BytesIO) else bytes(data)
            if not raw:
                raise ValueError("llmp.dcp: bytes item '%s' is empty; llmp stores bytes as a "
                                 "non-empty uint8 dataset" % fqn)
            state[name] = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
            return WriteResult(index=item.index, size_in_bytes=len(raw), storage_data=name)
        chunk, size = item.tensor_data.chunk, item.tensor_data.size
        if data.numel() == 0:  # nothing to store: the Metadata holds the shape
            return WriteResult(index=item.index, size_in_bytes=0, storage_data=None)
        if tuple(data.shape) != tuple(chunk.sizes):
            raise ValueError("llmp.dcp: '%s': the planner gave a tensor of shape %s for a chunk of %s"
                             % (fqn, tuple(data.shape), tuple(chunk.sizes)))
        local = _as_stored(data, chunk.sizes)
        global_shape, offset, _ = _slice_of(data.dtype, size, chunk.offsets, chunk.sizes)
        state[name] = _ck.Shard(local, global_shape, offset)
        return WriteResult(index=item.index, size_in_bytes=local.numel() * local.element_size(),
                           storage_data=name)

    def finish(self, metadata, results):
        # Committed in write_data; here only the check that DCP's Metadata is what we stored.
        ours = self._metadata
        if ours is None or metadata.state_dict_metadata != ours.state_dict_metadata or \
                metadata.planner_data != ours.planner_data:
            raise ValueError("llmp.dcp: DCP's Metadata of step %d differs from the one built from "
                             "the global plan and saved in %s (a planner whose Metadata is not its "
                             "items'?)" % (self.step, self.root))
        written = sum(len(r) for r in results)
        planned = sum(len(c.chunks) if isinstance(c, TensorStorageMetadata) else 1
                      for c in ours.state_dict_metadata.values())
        if written != planned:
            raise ValueError("llmp.dcp: step %d: %d items written, %d planned"
                             % (self.step, written, planned))


def manifest_shapes(path):
    """{tensor name: global shape} from a MANIFEST's slice lines (doc/checkpoint.md)."""
    shapes = {}
    with open(path) as f:
        for line in f:
            words = line.split()
            if words and words[0] == "slice":
                ndim = int(words[3])
                shapes[words[1]] = tuple(int(x) for x in words[4:4 + ndim])
    return shapes


class DcpReader(StorageReader):
    """Reads an llmp checkpoint that DcpWriter saved, for dcp.load (collective, every rank).

    step: the step to load (None: the newest complete one; libllmp passes
    over a damaged one to the one before it). A checkpoint_id given to
    dcp.load replaces root.
    """

    def __init__(self, root, step=None, context=None):
        super().__init__()
        self.root = os.fspath(root)
        self.step = step
        self._context = context
        self.loaded_step = None

    def reset(self, checkpoint_id=None):
        if checkpoint_id is not None:
            self.root = os.fspath(checkpoint_id)
        self.loaded_step = None

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        try:
            return any(_STEP_DIR.match(n) for n in os.listdir(os.fspath(checkpoint_id)))
        except (OSError, TypeError):
            return False

    def read_metadata(self):
        self.ctx = self._context or _ck.init()
        # A load with nothing registered: libllmp picks the step (the newest complete one
        # that passes its checks) and checks its MANIFEST, shards' sizes, index and meta.bin.
        with _ck.Checkpoint(self.root, {}, context=self.ctx, allow_empty=True) as ck:
            self.loaded_step, meta = ck.load(self.step)
        where = os.path.join(self.root, "step-%d" % self.loaded_step)
        if not meta.startswith(MAGIC):
            raise ValueError("llmp.dcp: %s was not saved through llmp.checkpoint.DcpWriter (its "
                             "meta.bin holds no DCP Metadata): load it with llmp.checkpoint.load"
                             % where)
        # Unpickling runs code: only bytes nobody but this user could have put there.
        for path in (self.root, where, os.path.join(where, "meta.bin")):
            check_own(path)
        metadata = pickle.loads(meta[len(MAGIC):])
        self.shapes = manifest_shapes(os.path.join(where, "MANIFEST"))
        return metadata

    def set_up_storage_reader(self, metadata, is_coordinator, *args, **kwargs):
        self.metadata = metadata
        self.is_coordinator = is_coordinator
        self.names = {index.fqn: name for index, name in (metadata.storage_data or {}).items()}

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, plans):
        return plans

    def read_data(self, plan, planner):
        state, after, failure = {}, [], None
        try:
            by_fqn = {}
            for item in plan.items:
                by_fqn.setdefault(item.storage_index.fqn, []).append(item)
            for fqn, items in by_fqn.items():
                self._plan_reads(fqn, items, planner, state, after)
            ck = _ck.Checkpoint(self.root, state, context=self.ctx, allow_empty=True)
        except Exception as e:
            failure, ck = e, None
        try:
            if _agree(self.ctx, failure is not None):
                if failure is not None:
                    raise failure
                raise _ck.CheckpointError("llmp.dcp: rank %d: another rank failed before step %d was read"
                                          % (self.ctx.rank, self.loaded_step))
            ck.load(self.loaded_step)
        finally:
            if ck is not None:
                ck.close()
        for done in after:
            done()
        return _done(None)

    def _name(self, fqn):
        return self.names.get(fqn) or dataset_name(fqn)

    def _plan_reads(self, fqn, items, planner, state, after):
        """Register what `items` (all of one key) read; queue what moves it to the planner."""
        name = self._name(fqn)
        if items[0].type == LoadItemType.BYTE_IO:
            if name not in self.shapes:
                raise ValueError("llmp.dcp: bytes item '%s' has no dataset %s in step %d"
                                 % (fqn, name, self.loaded_step))
            buf = torch.empty(self.shapes[name], dtype=torch.uint8)
            state[name] = buf
            after.extend(lambda it=it: planner.load_bytes(it, io.BytesIO(buf.numpy().tobytes()))
                         for it in items)
            return
        md = self.metadata.state_dict_metadata[fqn]
        dtype = md.properties.dtype
        ndim = len(md.size)
        regions = []  # (item, global start, lengths) of each item that reads anything
        for it in items:
            lengths = tuple(it.lengths)
            if any(n == 0 for n in lengths):
                after.append(lambda it=it: planner.commit_tensor(it, planner.resolve_tensor(it).detach()))
                continue
            start = tuple(o + s for o, s in zip(it.storage_index.offset, it.storage_offsets))
            regions.append((it, start, lengths))
        if not regions:
            return
        # One slice per tensor and rank (libllmp's rule): the box around this rank's regions.
        lo = tuple(min(r[1][d] for r in regions) for d in range(ndim))
        hi = tuple(max(r[1][d] + r[2][d] for r in regions) for d in range(ndim))
        shape = tuple(h - l for l, h in zip(lo, hi))
        global_shape, offset, reg_shape = _slice_of(dtype, md.size, lo, shape)
        if len(regions) == 1:
            it = regions[0][0]
            target = planner.resolve_tensor(it).detach()
            if target.device.type == "cpu" and target.dtype == dtype and target.is_contiguous():
                # Zero copy: libllmp reads straight into the program's tensor.
                state[self._name(fqn)] = _ck.Shard(_as_view(target, reg_shape), global_shape, offset)
                after.append(lambda it=it, t=target: planner.commit_tensor(it, t))
                return
        buf = torch.empty(shape or (1,), dtype=dtype)
        state[name] = _ck.Shard(_as_view(buf, reg_shape), global_shape, offset)
        for it, start, lengths in regions:
            after.append(lambda it=it, start=start, lengths=lengths:
                         self._copy_out(planner, it, buf, lo, start, lengths))

    @staticmethod
    def _copy_out(planner, item, buf, lo, start, lengths):
        src = buf
        for d, (s, l, n) in enumerate(zip(start, lo, lengths)):
            src = src.narrow(d, s - l, n)
        target = planner.resolve_tensor(item).detach()
        target.copy_(src.reshape(target.shape))
        planner.commit_tensor(item, target)


def _as_view(t, shape):
    """t (contiguous, CPU) seen as `shape` in llmp's dtype: the same memory."""
    if t.dtype not in _ck.DTYPES:
        t = t.reshape(-1).view(torch.uint8)
    return t.view(shape)

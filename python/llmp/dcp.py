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
import errno
import hashlib
import io
import os
import pickle
import re
import stat
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
_MAX_NAME = _c.CONSTANTS["LLMP_CKPT_MAX_NAME"]  # bytes of an llmp tensor name (llmp_ckpt.h)
_STEP_DIR = re.compile(r"^step-[0-9]+$")


# ------------------------------------------------------- whose bytes are unpickled
#
# Unpickling runs code, so a load unpickles only what nobody but this user
# (or root) could have put there, by the rule of llmp's common/own_dir.h:
# every directory from / down to the checkpoint's must belong to root or this
# user and let nobody else write unless it has the sticky bit (another owner,
# or another writer, could rename what is under it away and put their own in
# its place; a group-shared project directory, root:proj 2770, is refused so);
# the root and the step directory must be this user's; a symbolic link on the
# way is followed only when root or this user made it. A path that passes
# cannot be made to lead elsewhere by another user afterwards. meta.bin is
# opened without following a link from the checked step directory's
# descriptor, checked on that descriptor, and read from it: nothing is read
# before its checks.

_MAX_LINKS = 40  # the kernel's own bound on the links of one path
_PATH_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_REMEDY = "its metadata is not unpickled (use a directory under one only you or root can write to)"


def _shown(path):
    """path for a message: at most 200 bytes, each byte that is not printable ASCII as '?'."""
    raw = os.fsencode(path)
    text = "".join(chr(b) if 32 <= b < 127 else "?" for b in raw[:200])
    return text + "..." if len(raw) > 200 else text


def _writable_by_others(mode):
    return bool(mode & 0o022) and not mode & stat.S_ISVTX


def _check_on_the_way(fd, at, given, uid):
    """at (fd), a directory the walk is about to look in: root's or the user's, nobody else's to write."""
    st = os.fstat(fd)
    where = "%s, on the path to %s," % (_shown(at or "/"), _shown(given))
    mode = st.st_mode & 0o7777
    if st.st_uid not in (0, uid):
        why = ("belongs to uid %d, neither root nor this user (%d): its owner could rename what is under "
               "it away and put another in its place" % (st.st_uid, uid))
    elif not _writable_by_others(st.st_mode):
        return
    elif st.st_mode & 0o002:
        why = ("is writable by everyone (mode %04o, no sticky bit): anyone could rename what is under it "
               "away and put another in its place" % mode)
    else:
        why = ("is writable by its group (mode %04o, no sticky bit): another member of its group could "
               "rename what is under it away and put another in its place" % mode)
    raise PermissionError("llmp.dcp: %s %s; %s" % (where, why, _REMEDY))


def _check_last(fd, given, uid):
    """The directory named: the user's, nobody else's to write in."""
    st = os.fstat(fd)
    if st.st_uid != uid:
        raise PermissionError("llmp.dcp: %s belongs to uid %d, not to this user (%d): its metadata "
                              "is not unpickled (another user could have written it)"
                              % (_shown(given), st.st_uid, uid))
    if _writable_by_others(st.st_mode):
        raise PermissionError("llmp.dcp: %s is writable by others (mode %04o): its metadata is not "
                              "unpickled (chmod go-w it)" % (_shown(given), st.st_mode & 0o7777))


def _lstat(fd, at, name):
    """lstat of name in at (fd); an error names the whole path."""
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError as e:
        raise type(e)(e.errno, "llmp.dcp: %s" % e.strerror, _shown(at + "/" + name)) from None


def _link_target(fd, at, name, st, given, uid, links):
    """What link `name` (lstat st) in at (fd) holds, once it is root's or the user's and one of at most 40."""
    link = "%s/%s" % (at, name)
    if st.st_uid not in (0, uid):
        raise PermissionError("llmp.dcp: %s is a symbolic link of uid %d, neither root nor this user (%d): "
                              "it is not followed, as its owner chose where it leads; %s"
                              % (_shown(link), st.st_uid, uid, _REMEDY))
    if links > _MAX_LINKS:
        raise PermissionError("llmp.dcp: %s: more than %d symbolic links on the path to %s (%s)"
                              % (_shown(link), _MAX_LINKS, _shown(given), os.strerror(errno.ELOOP)))
    return os.readlink(name, dir_fd=fd)


def open_own_dir(path):
    """An O_PATH descriptor of directory `path` (the caller closes it), once every directory and
    link on the way passed the rule above; else PermissionError naming the one refused and why.

    Walked one name at a time from a descriptor of the directory above it, from / (a relative
    path through the working directory os.getcwd() gives). "." is where the walk is, ".." the
    parent on disk: after a followed link, the parent of its target, as the kernel has it."""
    uid, given = os.geteuid(), os.fsdecode(os.fspath(path))
    whole = given if given.startswith("/") else os.getcwd() + "/" + given
    todo = [n for n in reversed(whole.split("/")) if n]
    fd, at, links = os.open("/", _PATH_FLAGS), "", 0
    try:
        while todo:
            name, up = todo.pop(), None
            if name == "..":
                up = os.open("..", _PATH_FLAGS, dir_fd=fd) if at else None
                at = at.rpartition("/")[0]
            elif name != ".":
                _check_on_the_way(fd, at, given, uid)
                st = _lstat(fd, at, name)
                if stat.S_ISLNK(st.st_mode):
                    links += 1
                    target = _link_target(fd, at, name, st, given, uid, links)
                    todo.extend(n for n in reversed(target.split("/")) if n)
                    if target.startswith("/"):
                        up, at = os.open("/", _PATH_FLAGS), ""
                elif not stat.S_ISDIR(st.st_mode):
                    raise NotADirectoryError("llmp.dcp: %s is not a directory" % _shown(at + "/" + name))
                else:
                    # O_NOFOLLOW: should it have become a link since, this fails rather than follows.
                    up = os.open(name, _PATH_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                    at += "/" + name
            if up is not None:
                os.close(fd)
                fd = up
        _check_last(fd, given, uid)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_own(path):
    """Raise PermissionError unless `path` and every directory and link on the way pass the
    rule above (open_own_dir)."""
    os.close(open_own_dir(path))


def read_own_file(dir_fd, name, where):
    """The bytes of file `name` in the checked directory dir_fd (shown as `where`): opened without
    following a link and without waiting (a FIFO), then checked on that descriptor, before any
    byte is read, to be a regular file of this user that nobody else may write."""
    path = _shown(os.path.join(where, name))
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise PermissionError("llmp.dcp: %s is a symbolic link: it is not followed, its metadata is "
                                  "not unpickled" % path) from None
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PermissionError("llmp.dcp: %s is not a regular file: its metadata is not unpickled" % path)
        if st.st_uid != os.geteuid():
            raise PermissionError("llmp.dcp: %s belongs to uid %d, not to this user (%d): its metadata "
                                  "is not unpickled (another user could have written it)"
                                  % (path, st.st_uid, os.geteuid()))
        if st.st_mode & 0o022:
            raise PermissionError("llmp.dcp: %s is writable by others (mode %04o): its metadata is not "
                                  "unpickled (chmod go-w it)" % (path, st.st_mode & 0o7777))
        return f.read()


def dataset_name(fqn):
    """The llmp tensor name of a DCP key: the key itself when llmp takes it as a name."""
    ok = (1 <= len(fqn.encode()) <= _MAX_NAME and all(" " < c <= "~" for c in fqn)
          and not fqn.startswith("/") and not fqn.endswith("/") and "//" not in fqn and fqn != ".")
    if ok:
        return fqn
    return "dcp-hashed/" + hashlib.sha256(fqn.encode()).hexdigest()[:32]


def _agree(ctx, failed):
    """True when any rank of ctx's world failed (one llmp allreduce, MAX of a flag)."""
    lib = _c.library()  # the process's one libllmp, which ctx was made with
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


def manifest_shapes(manifest):
    """{tensor name: global shape} from a MANIFEST's slice lines (doc/checkpoint.md): its path, or
    a file object of its text."""
    if isinstance(manifest, (str, bytes, os.PathLike)):
        with open(manifest) as f:
            return manifest_shapes(f)
    shapes = {}
    for line in manifest:
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

    The metadata is unpickled, which runs code: a root, step directory or
    meta.bin that another user could have written or redirected (a
    directory on the way root's or this user's, writable by nobody else
    unless sticky; links followed only when root's or this user's;
    open_own_dir) is refused with PermissionError before any byte under it
    is read.
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

    def _check_before_load(self):
        """The root, and every step directory libllmp may pick, by the rule of open_own_dir."""
        check_own(self.root)
        if self.step is None:
            steps = [n for n in os.listdir(self.root) if _STEP_DIR.match(n)]
        else:
            steps = ["step-%d" % self.step]
        for name in steps:
            if os.path.lexists(os.path.join(self.root, name)):  # a missing one is libllmp's to report
                check_own(os.path.join(self.root, name))

    def _read_checked(self, seen, metalen):
        """(meta.bin, MANIFEST) of the loaded step, each checked on its descriptor, then read from it;
        meta.bin must hold the bytes libllmp checked (seen: its first ones, metalen: its size)."""
        where = os.path.join(self.root, "step-%d" % self.loaded_step)
        # Opened again by the walk: a step added since to a sticky root is checked too.
        step_fd = open_own_dir(where)
        try:
            meta = read_own_file(step_fd, "meta.bin", where)
            manifest = read_own_file(step_fd, "MANIFEST", where)
        finally:
            os.close(step_fd)
        if len(meta) != metalen or not meta.startswith(seen):
            raise _ck.CheckpointError("llmp.dcp: %s/meta.bin changed while it was loaded" % _shown(where))
        if not meta.startswith(MAGIC):
            raise ValueError("llmp.dcp: %s was not saved through llmp.checkpoint.DcpWriter (its "
                             "meta.bin holds no DCP Metadata): load it with llmp.checkpoint.load"
                             % where)
        return meta, manifest

    def read_metadata(self):
        self.ctx = self._context or _ck.init()
        # Unpickling runs code: nothing under a root or step directory another user could have
        # written or redirected is read, by libllmp or here. The ranks agree first, so a refusal on
        # one fails every rank rather than leaving the others in the collective load.
        failure = None
        try:
            self._check_before_load()
        except OSError as e:
            failure = e
        if _agree(self.ctx, failure is not None):
            raise failure or _ck.CheckpointError("llmp.dcp: rank %d: another rank refused %s before "
                                                 "loading it" % (self.ctx.rank, self.root))
        # A load with nothing registered: libllmp picks the step (the newest complete one
        # that passes its checks) and checks its MANIFEST, shards' sizes, index and meta.bin.
        with _ck.Checkpoint(self.root, {}, context=self.ctx, allow_empty=True) as ck:
            self.loaded_step, seen, metalen = ck.load_head(self.step)
        meta, manifest = self._read_checked(seen, metalen)
        metadata = pickle.loads(meta[len(MAGIC):])
        self.shapes = manifest_shapes(io.StringIO(manifest.decode()))
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

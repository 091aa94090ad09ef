# SPDX-License-Identifier: BSD-3-Clause
"""llmp.torch - torch.distributed set up from llmp's layout.

init() starts torch.distributed from the env:// variables the llm_parallel
plugin sets (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...) and creates one
torch process group for every group of the layout file, named as llmp names
them (tp, pp, cp, dp, ep, dp-cp, tp-cp, tp-pp, ...). device_mesh() wraps them
in a DeviceMesh with torchtitan's dimension order (pp, dp, cp, tp).

Why every rank creates every group: torch.distributed.new_group must be
entered by all ranks, in one order, for the groups' names to agree. With
use_local_synchronization=True a non-member returns before torch counts the
group, so members that had joined different numbers of earlier groups salt
the new group's store prefix differently and wait for each other forever in
gloo's connectFullMesh (seen with torch 2.15, tp=2,pp=3 on 12 ranks). So
llmp calls new_group for every group on every rank, in the layout's order,
without local synchronisation: for a non-member the call only advances
torch's counter, and only members communicate (unless the user asks torch
for a barrier after each group with TORCH_DIST_INIT_BARRIER=1).
"""

import datetime
import inspect
import os
from collections.abc import Mapping

import torch
import torch.distributed as dist

from .layout import Layout, LayoutError
from .layout import layout as _read_layout

#: torchtitan's mesh dimensions, slowest first: its ParallelDims builds the
#: world mesh as pp x dp x cp x tp, which is llmp's (and Megatron-Core's)
#: default order tp-cp-ep-dp-pp read from the other end.
TORCHTITAN_MESH_DIMS = ("pp", "dp", "cp", "tp")

_ENV_RENDEZVOUS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


class Groups(Mapping):
    """The torch process groups of a layout, by llmp's kind names.

    groups["tp"] is this rank's tp group. For a kind this rank belongs to no
    group of (a middle pipeline stage has no "embedding" group) it is
    torch's GroupMember.NON_GROUP_MEMBER, never None (None means the whole
    world to torch.distributed); member(kind) tells which. ranks(kind) gives
    the group's global ranks, and layout the Layout they came from.
    """

    def __init__(self, lay, groups):
        self.layout = lay
        self._groups = groups

    def __getitem__(self, kind):
        try:
            return self._groups[kind]
        except KeyError:
            raise KeyError("llmp.torch: no group kind '%s' was created (created: %s)"
                           % (kind, " ".join(self._groups))) from None

    def __iter__(self):
        return iter(self._groups)

    def __len__(self):
        return len(self._groups)

    def member(self, kind):
        """Whether this rank is in a group of this kind."""
        return self[kind] is not dist.GroupMember.NON_GROUP_MEMBER

    def ranks(self, kind):
        """This rank's group of this kind as global ranks (None if in none)."""
        self[kind]
        return self.layout.group(kind)

    def __repr__(self):
        return "Groups(%s, rank=%d)" % (" ".join(self._groups), self.layout.rank)


def default_backend():
    """nccl when CUDA is available and torch has NCCL, else gloo."""
    if torch.cuda.is_available() and dist.is_nccl_available():
        return "nccl"
    return "gloo"


def _needs_cuda(backend):
    return "nccl" in str(backend).lower()


def local_device():
    """This task's CUDA device: LOCAL_RANK indexes the visible GPUs when
    each task sees the node's (torchrun's contract); with one GPU visible
    (llm_parallel's --llm-gpu-bind=task) it is device 0, whatever LOCAL_RANK."""
    count = torch.cuda.device_count()
    if count == 0:
        raise RuntimeError("llmp.torch: the nccl backend needs a GPU, and CUDA sees none")
    if count == 1:
        return torch.device("cuda", 0)
    local = os.environ.get("LOCAL_RANK", "")
    if not local.isdigit():
        raise RuntimeError("llmp.torch: %d GPUs visible and LOCAL_RANK=%r does not say which is "
                           "this task's" % (count, local))
    if int(local) >= count:
        raise RuntimeError("llmp.torch: LOCAL_RANK=%s, but only %d GPUs are visible "
                           "(CUDA_VISIBLE_DEVICES=%s)"
                           % (local, count, os.environ.get("CUDA_VISIBLE_DEVICES", "unset")))
    return torch.device("cuda", int(local))


def _check_env(lay):
    for name in _ENV_RENDEZVOUS:
        if not os.environ.get(name):
            raise RuntimeError("llmp.torch.init: %s is not set: start the job with srun "
                               "--llm-parallel=... (the llm_parallel plugin sets the env:// "
                               "variables) or with torchrun" % name)
    rank, world = os.environ["RANK"], os.environ["WORLD_SIZE"]
    if not world.isdigit() or int(world) != lay.world:
        raise RuntimeError("llmp.torch.init: WORLD_SIZE=%s, but the layout %s has %d ranks"
                           % (world, lay.path or "", lay.world))
    if not rank.isdigit() or (lay.rank is not None and int(rank) != lay.rank):
        raise RuntimeError("llmp.torch.init: RANK=%s, but the layout's rank is %s" % (rank, lay.rank))


def _accepts(func, name):
    try:
        return name in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def init(backend=None, timeout=None, layout=None, kinds=None):
    """Start torch.distributed (unless already started) and create the
    layout's process groups.

    backend: a torch backend name; default nccl when CUDA is available, gloo
    otherwise (with nccl the task's GPU becomes the current device, see
    local_device). timeout: a datetime.timedelta or seconds, for the
    rendezvous and every group. layout: a Layout or a path; default
    llmp.layout() (LLMP_LAYOUT_FILE). kinds: the group kinds to create,
    default all of the file's; every rank must pass the same.

    Returns Groups. Every rank of the job must call it, as for new_group.
    """
    if layout is None:
        lay = _read_layout()
    elif isinstance(layout, Layout):
        lay = layout
    else:
        lay = _read_layout(layout)
    if lay.single_rank_view:
        raise LayoutError("llmp.torch.init: layout file %s is one rank's view (llmp plan --rank); "
                          "every rank must create every group, so it needs the whole layout"
                          % lay.path)
    if isinstance(timeout, (int, float)):
        timeout = datetime.timedelta(seconds=timeout)

    if dist.is_initialized():
        if dist.get_world_size() != lay.world:
            raise RuntimeError("llmp.torch.init: torch.distributed runs %d ranks, the layout %s has %d"
                               % (dist.get_world_size(), lay.path or "", lay.world))
        if lay.rank is None:
            lay.rank = dist.get_rank()
        elif lay.rank != dist.get_rank():
            raise RuntimeError("llmp.torch.init: torch.distributed's rank is %d, the layout's %d"
                               % (dist.get_rank(), lay.rank))
        backend = backend or dist.get_backend()
    else:
        _check_env(lay)
        if lay.rank is None:
            lay.rank = int(os.environ["RANK"])
        backend = backend or default_backend()
        kwargs = {"backend": backend, "init_method": "env://",
                  "rank": lay.rank, "world_size": lay.world}
        if timeout is not None:
            kwargs["timeout"] = timeout
        if _needs_cuda(backend):
            device = local_device()
            torch.cuda.set_device(device)
            if _accepts(dist.init_process_group, "device_id"):
                kwargs["device_id"] = device
        dist.init_process_group(**kwargs)

    return Groups(lay, create_groups(lay, kinds=kinds, timeout=timeout))


def create_groups(lay, kinds=None, timeout=None, backend=None):
    """Create a torch group for every group of every kind of the layout, on
    every rank in one order (see the module's comment); returns a dict kind
    -> this rank's group or GroupMember.NON_GROUP_MEMBER."""
    if kinds is None:
        kinds = lay.kinds()
    else:
        kinds = tuple(kinds)
        for kind in kinds:
            if kind not in lay.groups:
                raise KeyError("llmp.torch: layout %s has no group kind '%s'" % (lay.path, kind))
    rank = dist.get_rank()
    with_desc = _accepts(dist.new_group, "group_desc")
    # Keep the ranks as llmp lists them (ascending for every kind llmp writes).
    keep_order = _accepts(dist.new_group, "sort_ranks")
    mine = {}
    for kind in kinds:
        mine[kind] = dist.GroupMember.NON_GROUP_MEMBER
        for members in lay.groups[kind]:
            kwargs = {"ranks": list(members), "use_local_synchronization": False}
            if timeout is not None:
                kwargs["timeout"] = timeout
            if backend is not None:
                kwargs["backend"] = backend
            if with_desc:
                kwargs["group_desc"] = kind
            if keep_order:
                kwargs["sort_ranks"] = False
            group = dist.new_group(**kwargs)
            if rank in members:
                mine[kind] = group
    return mine


def mesh_of(lay, dims=TORCHTITAN_MESH_DIMS):
    """The device mesh of a layout as nested lists: mesh[i0][i1]... is the
    rank with coordinate i0 along dims[0], i1 along dims[1], ... (coordinates
    as Layout.coords gives them)."""
    if lay.single_rank_view:
        raise LayoutError("llmp: layout file %s is one rank's view; a mesh needs every rank" % lay.path)
    shape = [lay.sizes[d] for d in dims]
    total = 1
    for n in shape:
        total *= n
    if total != lay.world:
        raise LayoutError("llmp: the mesh %s has %d cells, the layout %s has %d ranks"
                          % ("x".join("%s=%d" % p for p in zip(dims, shape)), total, lay.path, lay.world))
    flat = [None] * total
    for r in range(lay.world):
        c = lay.coords(r)
        index = 0
        for d, n in zip(dims, shape):
            index = index * n + c[d]
        if flat[index] is not None:
            raise LayoutError("llmp: layout %s: ranks %d and %d have the same %s coordinates"
                              % (lay.path, flat[index], r, "/".join(dims)))
        flat[index] = r

    def nest(values, sizes):
        if len(sizes) == 1:
            return list(values)
        step = len(values) // sizes[0]
        return [nest(values[i * step:(i + 1) * step], sizes[1:]) for i in range(sizes[0])]

    return nest(flat, shape)


def device_mesh(groups, device_type=None, dims=TORCHTITAN_MESH_DIMS):
    """A torch DeviceMesh over the groups init() made, dimensions named and
    ordered as torchtitan's (pp, dp, cp, tp, slowest first), so that
    mesh["tp"].get_group() is groups["tp"]. device_type defaults to "cuda"
    with the nccl backend, else "cpu"."""
    try:
        from torch.distributed.device_mesh import DeviceMesh
    except ImportError as e:
        raise RuntimeError("llmp.torch.device_mesh: this torch (%s) has no DeviceMesh: %s"
                           % (torch.__version__, e)) from None
    if not hasattr(DeviceMesh, "from_group"):
        raise RuntimeError("llmp.torch.device_mesh: this torch (%s) has no DeviceMesh.from_group"
                           % torch.__version__)
    lay = groups.layout
    if device_type is None:
        device_type = "cuda" if _needs_cuda(dist.get_backend()) else "cpu"
    mesh = mesh_of(lay, dims)
    # The mesh's line through this rank along each dimension must be the
    # group made for it, or DeviceMesh would pair a dimension with the wrong group.
    c = lay.coords()
    for dim in dims:
        line = tuple(_cell(mesh, dims, {**c, dim: i}) for i in range(lay.sizes[dim]))
        if line != groups.ranks(dim):
            raise LayoutError("llmp: layout %s: the %s group of rank %d is %s, but the mesh's %s line "
                              "through it is %s" % (lay.path, dim, lay.rank, groups.ranks(dim), dim, line))
    return DeviceMesh.from_group([groups[d] for d in dims], device_type,
                                 mesh=torch.tensor(mesh, dtype=torch.int), mesh_dim_names=tuple(dims))


def _cell(mesh, dims, coords):
    for dim in dims:
        mesh = mesh[coords[dim]]
    return mesh

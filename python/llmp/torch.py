# SPDX-License-Identifier: BSD-3-Clause
"""llmp.torch - torch.distributed set up from llmp's layout.

init() starts torch.distributed from the env:// variables the llm_parallel
plugin sets (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...) and creates the
rank's torch process groups for the groups of the layout file, named as llmp
names them (tp, pp, cp, dp, ep, dp-cp, tp-cp, tp-pp, ...). device_mesh() wraps
them in a DeviceMesh with torchtitan's dimension order (pp, dp, cp, tp).

How the groups are made (create_groups, method=):

- "local": each rank creates only its own groups, one call per group, and only
  the members of a group talk while creating it. torch's own way to do that,
  new_group(ranks, use_local_synchronization=True), deadlocks: a non-member
  returns before torch counts the group (_new_group_with_tag), and the group's
  store prefix is a hash of its ranks salted with that count
  (_process_group_name, _hash_ranks_to_str), so members that joined different
  numbers of earlier groups wait under different prefixes forever in gloo's
  connectFullMesh (seen with torch 2.15, tp=2,pp=3 on 12 ranks). llmp instead
  names the group itself, from the kind and the group's number in the layout
  ("llmp_tp_3"), the same on every member whatever else it joined, and hands
  that name to torch's group constructor (_new_process_group_helper), which
  makes the store prefix of it and registers the group for torch's
  collectives and DeviceMesh. Used with gloo.
- "split": one dist.split_group per kind on every rank (O(kinds) calls, each
  collective over the world for NCCL's ncclCommSplit); torch names the groups
  with its counter, which every rank advances alike. Used with NCCL when the
  default group is bound to a device (init() binds it).
- "all": Megatron-Core's way, new_group for every group of every kind on
  every rank in one order (O(all groups) calls; for a non-member the call
  only advances torch's counter). The fallback for a torch or a backend where
  neither of the others is available.
"""

import datetime
import inspect
import logging
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

#: The ways create_groups can make the groups (see the module's comment).
METHODS = ("local", "split", "all")

_log = logging.getLogger("llmp.torch")


class Groups(Mapping):
    """The torch process groups of a layout, by llmp's kind names.

    groups["tp"] is this rank's tp group. For a kind this rank belongs to no
    group of (a middle pipeline stage has no "embedding" group) it is
    torch's GroupMember.NON_GROUP_MEMBER, never None (None means the whole
    world to torch.distributed); member(kind) tells which. ranks(kind) gives
    the group's global ranks, and layout the Layout they came from.
    method is how they were made ("local", "split" or "all") and calls the
    number of torch group-creation calls this rank made for them.
    """

    def __init__(self, lay, groups, method=None, calls=None):
        self.layout = lay
        self._groups = groups
        self.method = method
        self.calls = calls

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
        return "Groups(%s, rank=%d, method=%s)" % (" ".join(self._groups), self.layout.rank, self.method)


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


def init(backend=None, timeout=None, layout=None, kinds=None, method=None):
    """Start torch.distributed (unless already started) and create the
    layout's process groups.

    backend: a torch backend name; default nccl when CUDA is available, gloo
    otherwise (with nccl the task's GPU becomes the current device, see
    local_device). timeout: a datetime.timedelta or seconds, for the
    rendezvous and every group. layout: a Layout or a path; default
    llmp.layout() (LLMP_LAYOUT_FILE). kinds: the group kinds to create,
    default all of the file's; every rank must pass the same. method: how to
    make the groups, "local", "split" or "all" (see create_groups); default
    $LLMP_TORCH_GROUPS, else the cheapest this torch and backend allow.

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
                          "llmp.torch needs every group of the layout (their numbers name the groups)"
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

    return create_groups(lay, kinds=kinds, timeout=timeout, method=method)


def create_groups(lay, kinds=None, timeout=None, backend=None, method=None):
    """Create this rank's torch group of every kind of the layout (kinds:
    which, default all of the file's) and return them as Groups.

    Every rank of the job must call it, with the same kinds, as many times
    as the others (as for new_group). method: "local" (only this rank's groups, named by llmp), "split"
    (dist.split_group per kind) or "all" (new_group for every group); default
    $LLMP_TORCH_GROUPS, else choose_method(). A method asked for that this
    torch or backend cannot do raises RuntimeError saying why; the automatic
    choice falls back to "all" and logs why (logger "llmp.torch")."""
    kinds = _check_kinds(lay, kinds)
    if timeout is None:
        timeout = _default_timeout(backend)
    if method is None:
        method = os.environ.get("LLMP_TORCH_GROUPS") or None
    if method is None:
        method, why = choose_method(backend)
        log = _log.info if method != "all" else _log.warning
    else:
        if method not in METHODS:
            raise ValueError("llmp.torch: group method '%s' is none of %s (argument method= or "
                             "LLMP_TORCH_GROUPS)" % (method, " ".join(METHODS)))
        why = "asked for"
        unavailable = _unavailable(method, backend)
        if unavailable:
            raise RuntimeError("llmp.torch: group method '%s' is not available: %s" % (method, unavailable))
        log = _log.info
    make = {"local": _create_local, "split": _create_split, "all": _create_all}[method]
    mine, calls = make(lay, kinds, timeout, backend)
    log("llmp.torch: rank %d: %d group kinds by method '%s' (%s): %d group-creation calls",
        dist.get_rank(), len(kinds), method, why, calls)
    return Groups(lay, mine, method=method, calls=calls)


def choose_method(backend=None):
    """The cheapest way this torch and backend allow to make a rank's groups,
    and why, as a pair: ("local", ...) with gloo on a default group bound to
    no device, else ("split", ...) where the default group's backend can
    split, else ("all", the reasons the others are not available)."""
    reasons = []
    for method in ("local", "split"):
        unavailable = _unavailable(method, backend)
        if not unavailable:
            return method, "the cheapest this torch allows"
        reasons.append("%s: %s" % (method, unavailable))
    return "all", "fallback; " + "; ".join(reasons)


def _unavailable(method, backend):
    """None if `method` can make groups here, else why not."""
    c10d = dist.distributed_c10d
    default = c10d._get_default_group()
    backend = str(backend or dist.get_backend(default)).lower()
    if method == "local":
        helper = getattr(c10d, "_new_process_group_helper", None)
        if helper is None or not all(_accepts(helper, p) for p in _HELPER_PARAMS):
            return "torch %s has no _new_process_group_helper taking %s" % (torch.__version__,
                                                                            ", ".join(_HELPER_PARAMS))
        if not hasattr(getattr(c10d, "_world", None), "pg_group_ranks"):
            return "torch %s keeps no _world.pg_group_ranks" % torch.__version__
        if backend != "gloo":
            # NCCL on a bound default group splits every new communicator off
            # the world's (ncclCommSplit), which non-members must enter too.
            return "backend %s is not gloo" % backend
        if default.bound_device_id is not None:
            return "the default group is bound to %s (torch would split from it)" % default.bound_device_id
        return None
    if method == "split":
        if not hasattr(dist, "split_group"):
            return "torch %s has no split_group" % torch.__version__
        device = default.bound_device_id
        if device is None and backend != "gloo":
            return "backend %s needs a default group bound to a device (init_process_group(device_id=))" \
                % backend
        try:
            parent = default._get_backend(device or torch.device("cpu"))
        except RuntimeError as e:
            return "the default group has no backend for %s: %s" % (device or "cpu", e)
        if not getattr(parent, "supports_splitting", False):
            return "the default group's %s backend cannot split" % backend
        return None
    return None


#: What "local" passes to torch's group constructor, by name.
_HELPER_PARAMS = ("group_size", "group_rank", "global_ranks_in_group", "backend", "store",
                  "group_name", "timeout", "group_desc")


def _check_kinds(lay, kinds):
    if kinds is None:
        return lay.kinds()
    kinds = tuple(kinds)
    for kind in kinds:
        if kind not in lay.groups:
            raise KeyError("llmp.torch: layout %s has no group kind '%s'" % (lay.path, kind))
    return kinds


def _default_timeout(backend):
    c10d = dist.distributed_c10d
    get = getattr(c10d, "_get_default_timeout", None)
    if get is not None:
        return get(dist.Backend(backend or dist.get_backend()))
    return c10d.default_pg_timeout


# The generation of llmp's groups in the current world, so that a second
# create_groups (every rank calls it alike) names its groups anew; reset
# when the default group changes (a new init_process_group).
_generation = {"world": None, "count": 0}


def _next_generation():
    default = dist.distributed_c10d._get_default_group()
    if _generation["world"] is not default:
        _generation["world"], _generation["count"] = default, 0
    n = _generation["count"]
    _generation["count"] += 1
    return n


def group_name(kind, number, generation=0):
    """The name llmp gives its torch group `number` (0-based, the layout's
    numbering) of `kind` with method "local": torch's store prefix for the
    group, identical on every member."""
    return "llmp_%s_%d" % (kind, number) + (".%d" % generation if generation else "")


def _create_local(lay, kinds, timeout, backend):
    """Only this rank's groups, one torch call each. Members meet under a
    store prefix llmp names, so it does not matter what else each joined;
    every rank walks the kinds in one order, so a group's members all
    arrive once their groups of the earlier kinds are made."""
    c10d = dist.distributed_c10d
    default = c10d._get_default_group()
    backend = dist.Backend(backend or dist.get_backend(default))
    store = c10d._world.pg_map[default][1]  # what new_group passes: the default group's store
    generation = _next_generation()
    rank = default.rank()
    mine, calls = {}, 0
    for kind in kinds:
        mine[kind] = dist.GroupMember.NON_GROUP_MEMBER
        for number, members in enumerate(lay.groups[kind]):
            if rank not in members:
                continue
            members = list(members)
            group, _ = c10d._new_process_group_helper(
                group_size=len(members), group_rank=members.index(rank), global_ranks_in_group=members,
                backend=backend, store=store, group_name=group_name(kind, number, generation),
                timeout=timeout, group_desc=kind)
            # What new_group records after the constructor: global -> group rank.
            c10d._world.pg_group_ranks[group] = {g: i for i, g in enumerate(members)}
            mine[kind] = group
            calls += 1
            break
    return mine, calls


def _create_split(lay, kinds, timeout, backend):
    """One split_group of the world per kind, entered by every rank."""
    takes_backend = backend is not None and _accepts(dist.split_group, "backend")
    mine, calls = {}, 0
    for kind in kinds:
        kwargs = {"split_ranks": [list(g) for g in lay.groups[kind]], "timeout": timeout,
                  "group_desc": kind}
        if takes_backend:
            kwargs["backend"] = backend
        mine[kind] = dist.split_group(**kwargs)
        calls += 1
    return mine, calls


def _create_all(lay, kinds, timeout, backend):
    """Every group of every kind on every rank, in one order, without local
    synchronisation (Megatron-Core's way): a non-member's call only advances
    torch's counter, only members communicate (unless the user asks torch
    for a barrier after each group with TORCH_DIST_INIT_BARRIER=1)."""
    rank = dist.get_rank()
    with_desc = _accepts(dist.new_group, "group_desc")
    # Keep the ranks as llmp lists them (ascending for every kind llmp writes).
    keep_order = _accepts(dist.new_group, "sort_ranks")
    mine, calls = {}, 0
    for kind in kinds:
        mine[kind] = dist.GroupMember.NON_GROUP_MEMBER
        for members in lay.groups[kind]:
            kwargs = {"ranks": list(members), "use_local_synchronization": False, "timeout": timeout}
            if backend is not None:
                kwargs["backend"] = backend
            if with_desc:
                kwargs["group_desc"] = kind
            if keep_order:
                kwargs["sort_ranks"] = False
            group = dist.new_group(**kwargs)
            calls += 1
            if rank in members:
                mine[kind] = group
    return mine, calls


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

# SPDX-License-Identifier: BSD-3-Clause
"""llmp.layout - a job's layout read from llmp's JSON layout file.

The SPANK plugin writes the file once per node for every step and names it in
LLMP_LAYOUT_FILE; `llmp plan --format json` prints the same document
(doc/layout-json.md). Reading it here, in plain Python, means a framework and
libllmp never disagree about which ranks form a group, and nothing needs
libllmp to know them.
"""

import json
import os

#: The group kinds of a layout file, in the order llmp lists them (Megatron-Core's
#: RankGenerator tokens). llmp.torch creates torch groups in this order.
GROUP_KINDS = (
    "tp", "pp", "cp", "dp", "ep", "dp-cp", "tp-cp", "tp-pp", "tp-dp", "tp-dp-cp",
    "expert-tp", "expert-dp", "tp-ep", "tp-ep-pp", "embedding", "position-embedding",
)

#: The dimensions a rank has a coordinate along, and the group kind whose
#: position gives it (a group lists its ranks in coordinate order).
COORD_DIMS = ("tp", "cp", "ep", "dp", "pp", "expert-tp", "expert-dp")

#: The sizes every version-1 file has.
SIZE_KEYS = ("tp", "pp", "cp", "dp", "ep", "expert-tp", "expert-dp", "vpp")

FORMAT_VERSION = 1


class LayoutError(ValueError):
    """A layout file that is missing, unreadable or not what llmp writes.

    The message names the file and, where one is at fault, the key."""


def _fail(source, key, why):
    where = "%s: key '%s'" % (source, key) if key else source
    return LayoutError("llmp: layout file %s: %s" % (where, why))


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _env_int(name):
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        n = int(value)
    except ValueError:
        raise LayoutError("llmp: %s=%r is not an integer" % (name, value)) from None
    if n < 0:
        raise LayoutError("llmp: %s=%d is negative" % (name, n))
    return n


class Layout:
    """The sizes, order and groups of a job, and one rank's place in it.

    Attributes: path (the file, or None), version, world, order (tuple of
    dimension names, fastest first), spec (the layout keys given), sizes
    (dict), warnings (list), groups (dict: kind -> tuple of groups, each a
    tuple of ranks in Megatron-Core's order), rank (this task's rank, or None
    when not known), single_rank_view (True for a file of `llmp plan --rank`,
    which lists only that rank's groups).
    """

    def __init__(self, doc, path=None, rank=None):
        source = path if path is not None else "<document>"
        self.path = path
        if not isinstance(doc, dict):
            raise _fail(source, None, "expected a JSON object, found %s" % type(doc).__name__)
        self.version = self._int(doc, "version", source, minimum=1)
        if self.version != FORMAT_VERSION:
            raise _fail(source, "version", "version %d, this llmp package reads version %d"
                        % (self.version, FORMAT_VERSION))
        self.world = self._int(doc, "world", source, minimum=1)
        order = self._get(doc, "order", str, source)
        self.order = tuple(order.split("-"))
        if not all(self.order):
            raise _fail(source, "order", "%r is not a '-'-separated list of dimensions" % order)
        self.spec = self._get(doc, "spec", str, source)
        self.sizes = self._sizes(doc, source)
        warnings = self._get(doc, "warnings", list, source)
        if not all(isinstance(w, str) for w in warnings):
            raise _fail(source, "warnings", "expected an array of strings")
        self.warnings = list(warnings)
        self.groups = self._groups(doc, source)

        # The single-rank view (llmp plan --rank R) names its rank and lists
        # only that rank's groups; the per-node file has every group.
        self._coords = None
        file_rank = None
        if "rank" in doc:
            file_rank = self._int(doc, "rank", source, minimum=0)
            if file_rank >= self.world:
                raise _fail(source, "rank", "%d is not below world %d" % (file_rank, self.world))
            coords = self._get(doc, "coords", dict, source)
            for dim in COORD_DIMS:
                self._int(coords, dim, source, prefix="coords.", minimum=0)
            self._coords = {dim: coords[dim] for dim in COORD_DIMS}
            if rank is not None and rank != file_rank:
                raise _fail(source, "rank", "the file shows rank %d, not rank %d" % (file_rank, rank))
            rank = file_rank
        if rank is not None:
            if not _is_int(rank) or not 0 <= rank < self.world:
                raise _fail(source, None, "rank %r is not in 0..%d" % (rank, self.world - 1))
        self.rank = rank
        self.single_rank_view = file_rank is not None
        self._source = source

    # ------------------------------------------------------------ reading
    @staticmethod
    def _get(doc, key, kind, source, prefix=""):
        if key not in doc:
            raise _fail(source, prefix + key, "missing")
        value = doc[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _fail(source, prefix + key, "expected %s, found %s"
                        % (kind.__name__, json.dumps(value)[:40]))
        return value

    @classmethod
    def _int(cls, doc, key, source, prefix="", minimum=None):
        value = cls._get(doc, key, int, source, prefix)
        if minimum is not None and value < minimum:
            raise _fail(source, prefix + key, "%d is below %d" % (value, minimum))
        return value

    def _sizes(self, doc, source):
        sizes = self._get(doc, "sizes", dict, source)
        for key in SIZE_KEYS:
            self._int(sizes, key, source, prefix="sizes.", minimum=1)
        for key, value in sizes.items():
            if not _is_int(value) or value < 1:
                raise _fail(source, "sizes." + key, "expected a positive integer, found %s"
                            % json.dumps(value)[:40])
        dense = sizes["tp"] * sizes["cp"] * sizes["dp"] * sizes["pp"]
        if dense != self.world:
            raise _fail(source, "sizes", "tp*cp*dp*pp = %d, but world is %d" % (dense, self.world))
        return dict(sizes)

    def _groups(self, doc, source):
        raw = self._get(doc, "groups", dict, source)
        groups = {}
        for kind in GROUP_KINDS:
            if kind not in raw:
                raise _fail(source, "groups." + kind, "missing")
        for kind, lists in raw.items():
            key = "groups." + kind
            if not isinstance(lists, list):
                raise _fail(source, key, "expected an array of groups")
            parsed = []
            for i, members in enumerate(lists):
                where = "%s[%d]" % (key, i)
                if not isinstance(members, list) or not members:
                    raise _fail(source, where, "expected a non-empty array of ranks")
                for r in members:
                    if not _is_int(r) or not 0 <= r < self.world:
                        raise _fail(source, where, "rank %s is not in 0..%d"
                                    % (json.dumps(r)[:20], self.world - 1))
                if len(set(members)) != len(members):
                    raise _fail(source, where, "a rank appears twice in %s" % members)
                parsed.append(tuple(members))
            groups[kind] = tuple(parsed)
        return groups

    # ------------------------------------------------------------ queries
    def kinds(self):
        """The group kinds of the file: llmp's in GROUP_KINDS order, then any
        a newer llmp added, sorted."""
        extra = sorted(k for k in self.groups if k not in GROUP_KINDS)
        return tuple(GROUP_KINDS) + tuple(extra)

    def _need_rank(self, rank):
        if rank is None:
            rank = self.rank
        if rank is None:
            raise LayoutError("llmp: layout %s: no rank given and this task's is unknown "
                              "(LLMP_RANK and RANK are unset)" % self._source)
        if not _is_int(rank) or not 0 <= rank < self.world:
            raise LayoutError("llmp: layout %s: rank %r is not in 0..%d"
                              % (self._source, rank, self.world - 1))
        if self.single_rank_view and rank != self.rank:
            raise LayoutError("llmp: layout %s is the view of rank %d alone; it cannot tell rank %d's"
                              % (self._source, self.rank, rank))
        return rank

    def group(self, kind, rank=None):
        """The group of this kind holding `rank` (default: this task's), as a
        tuple of ranks, or None when the rank is in none (a middle pipeline
        stage has no embedding group)."""
        if kind not in self.groups:
            raise KeyError("llmp: layout %s has no group kind '%s' (kinds: %s)"
                           % (self._source, kind, " ".join(self.kinds())))
        rank = self._need_rank(rank)
        for members in self.groups[kind]:
            if rank in members:
                return members
        return None

    def coords(self, rank=None):
        """The rank's coordinate along each of COORD_DIMS: its position in its
        group of that dimension."""
        rank = self._need_rank(rank)
        if self.single_rank_view:
            return dict(self._coords)
        coords = {}
        for dim in COORD_DIMS:
            members = self.group(dim, rank)
            if members is None:
                raise LayoutError("llmp: layout %s: rank %d is in no '%s' group"
                                  % (self._source, rank, dim))
            coords[dim] = members.index(rank)
        return coords

    def size(self, kind):
        """The size of a dimension (sizes) or of the groups of a kind."""
        if kind in self.sizes:
            return self.sizes[kind]
        if kind in self.groups and self.groups[kind]:
            return len(self.groups[kind][0])
        raise KeyError("llmp: layout %s has no size or group kind '%s'" % (self._source, kind))

    def __repr__(self):
        return "Layout(%s, world=%d, order=%s, rank=%s)" % (
            self.path or "<document>", self.world, "-".join(self.order), self.rank)


def load(path, rank=None):
    """The layout in the JSON file at `path`; `rank` is the task's (default:
    LLMP_RANK, else RANK, else unknown)."""
    path = os.fspath(path)
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise LayoutError("llmp: layout file %s: cannot read it: %s" % (path, e.strerror or e)) from None
    except UnicodeDecodeError as e:
        raise LayoutError("llmp: layout file %s: not UTF-8 text (%s)" % (path, e.reason)) from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise LayoutError("llmp: layout file %s: not JSON: %s" % (path, e)) from None
    if rank is None and not (isinstance(doc, dict) and "rank" in doc):
        rank = _rank_from_env(path, doc)
    return Layout(doc, path=path, rank=rank)


def _rank_from_env(path, doc):
    rank = _env_int("LLMP_RANK")
    env_rank = _env_int("RANK")
    if rank is not None and env_rank is not None and rank != env_rank:
        raise LayoutError("llmp: LLMP_RANK=%d but RANK=%d: one task, two ranks" % (rank, env_rank))
    rank = rank if rank is not None else env_rank
    world = _env_int("WORLD_SIZE")
    if world is not None and isinstance(doc, dict) and _is_int(doc.get("world")) and world != doc["world"]:
        raise LayoutError("llmp: layout file %s: key 'world': %d, but WORLD_SIZE=%d"
                          % (path, doc["world"], world))
    return rank


def layout(path=None, rank=None):
    """This task's layout: the file named by LLMP_LAYOUT_FILE (or `path`),
    with the task's rank from LLMP_RANK/RANK (or `rank`)."""
    if path is None:
        path = os.environ.get("LLMP_LAYOUT_FILE")
        if not path:
            raise LayoutError("llmp: LLMP_LAYOUT_FILE is not set: run under srun --llm-parallel=... "
                              "(the llm_parallel plugin sets it), or pass the path of a layout file "
                              "(llmp plan --format json writes one)")
    return load(path, rank=rank)

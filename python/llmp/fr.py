# SPDX-License-Identifier: BSD-3-Clause
"""llmp.fr - PyTorch's flight recorder dumps read with llmp's layout.

Under the llm_parallel plugin a PyTorch task has its flight recorder on, its
dump going to DIR/fr/rank_<RANK> (TORCH_FR_DUMP_TEMP_FILE; DIR is LLMP_METRICS's
directory, else the checkpoint root). Each dump lists the rank's last
collectives under torch's process group names ("0" the world, "1", "2", ...
in the order new_group was called). This module says which of llmp's groups
(tp, dp, ...) each process group is, and where each rank sits on the grid:

    python3 -m llmp.fr DIR/fr --layout LAYOUT.json [--format text|json|html] [--last N]

`llmp report DIR` runs it when DIR/fr holds dumps, with the layout of the
job's metrics records, and puts its HTML in the page.

A process group is matched by its members: the ranks a dump's pg_config
lists for it (ProcessGroupNCCL fills it), else the ranks whose dumps hold
calls on it (ProcessGroupGloo's pg_config does not list its groups' ranks in
torch 2.15), compared with every group of the layout file. Kinds with the
same members (dp and dp-cp when cp=1) are all named, torch's group_desc first
when it is one of them (llmp.torch sets it to the kind).

A dump is a pickle of plain containers, strings and numbers; it is read with
an unpickler that refuses every class, so a dump cannot run code in the
reader (llmp report may run as another user than the job). A file holding
JSON (torch's _dump_fr_trace_json) is read as JSON.

dump() writes this process's trace on demand. ProcessGroupNCCL writes it by
itself on a timeout (TORCH_FR_DUMP_ON_TIMEOUT); ProcessGroupGloo records
every call but writes nothing when one fails: torch's only automatic writer is
NCCL's watchdog, and gloo, which records by itself, gets no flight recorder
hook either (distributed_c10d.py, _FR_SELF_RECORDING_BACKENDS). A gloo
program calls llmp.fr.dump() where it catches the failure.
"""

import argparse
import html
import io
import json
import os
import pickle
import re
import sys

from .layout import GROUP_KINDS, LayoutError
from .layout import load as _load_layout

#: How torch names the world's process group in a dump.
WORLD_PG = "0"
_DUMP_NAME = re.compile(r"^rank_(\d+)$")


class DumpError(ValueError):
    """A dump that cannot be read; the message names the file."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("the dump names a class (%s.%s); a flight recorder dump has none"
                                     % (module, name))


def dump(rank=None):
    """Write this process's flight recorder trace where torch writes it
    (TORCH_FR_DUMP_TEMP_FILE followed by the rank) and return that path.
    The rank is torch.distributed's unless given."""
    import torch.distributed as dist
    from torch._C import _distributed_c10d as c10d

    if rank is None:
        rank = dist.get_rank()
    writer = getattr(c10d, "_dump_fr_trace_file", None)
    if writer is None:
        raise RuntimeError("llmp.fr: this torch (%s) has no _dump_fr_trace_file"
                           % getattr(sys.modules.get("torch"), "__version__", "?"))
    writer(rank, includeStackTraces=False)
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE") or os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
    return "%s%d" % (prefix, rank) if prefix else None


def load_dump(path):
    """One rank's dump as a dict (keys entries, pg_config, pg_status, version, ...)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DumpError("llmp.fr: %s: %s" % (path, e.strerror)) from None
    try:
        if data[:1] == b"{":
            doc = json.loads(data)
        else:
            doc = _PlainUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, ValueError, EOFError) as e:
        raise DumpError("llmp.fr: %s: not a flight recorder dump (%s)" % (path, e)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries", []), list):
        raise DumpError("llmp.fr: %s: not a flight recorder dump (no list of entries)" % path)
    return doc


def load_dir(fr_dir):
    """{rank: dump} of fr_dir/rank_N; files of other names are not dumps."""
    try:
        names = os.listdir(fr_dir)
    except OSError as e:
        raise DumpError("llmp.fr: %s: %s" % (fr_dir, e.strerror)) from None
    dumps = {}
    for name in names:
        m = _DUMP_NAME.match(name)
        if m:
            dumps[int(m.group(1))] = load_dump(os.path.join(fr_dir, name))
    return dumps


def _pg_name(entry):
    pg = entry.get("process_group")
    return str(pg[0]) if isinstance(pg, (list, tuple)) and pg else str(pg)


def _pg_desc(entry):
    pg = entry.get("process_group")
    return str(pg[1]) if isinstance(pg, (list, tuple)) and len(pg) > 1 else ""


def _listed_ranks(text):
    try:
        ranks = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return None
    if isinstance(ranks, list) and ranks and all(isinstance(r, int) for r in ranks):
        return frozenset(ranks)
    return None


def group_members(dumps, world):
    """{pg name: frozenset of global ranks}: pg_config's list where a dump
    has one under that name, else the ranks whose dumps call on it."""
    members, seen = {WORLD_PG: frozenset(range(world))}, {}
    for rank, doc in dumps.items():
        for entry in doc.get("entries", []):
            seen.setdefault(_pg_name(entry), set()).add(rank)
    for name, ranks in seen.items():
        listed = None
        for doc in dumps.values():
            cfg = doc.get("pg_config", {}).get(name)
            if isinstance(cfg, dict):
                listed = listed or _listed_ranks(cfg.get("ranks"))
        members.setdefault(name, listed or frozenset(ranks))
    return members


def kinds_of(members, lay, desc=""):
    """The layout's kinds whose groups include exactly these ranks, the
    group_desc first when it is one of them."""
    if members == frozenset(range(lay.world)):
        found = ["world"]
    else:
        found = []
    for kind in GROUP_KINDS:
        if any(frozenset(g) == members for g in lay.groups.get(kind, ())):
            found.append(kind)
    if desc in found:
        found.remove(desc)
        found.insert(0, desc)
    return found


def annotate(dumps, lay, last=8):
    """What report shows, as plain data (the JSON format)."""
    members = group_members(dumps, lay.world)
    descs = {}
    for doc in dumps.values():
        for e in doc.get("entries", []):
            descs.setdefault(_pg_name(e), _pg_desc(e))
    groups = {}
    for name, ranks in sorted(members.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 1 << 30):
        kinds = kinds_of(ranks, lay, descs.get(name, ""))
        seqs = {}
        for r in sorted(ranks):
            calls = [e.get("collective_seq_id", 0) for e in dumps.get(r, {}).get("entries", [])
                     if _pg_name(e) == name and not e.get("is_p2p")]
            seqs[r] = max(calls) if calls else (None if r not in dumps else 0)
        known = [s for s in seqs.values() if s is not None]
        ahead = max(known) if known else 0
        groups[name] = {
            "torch_name": name, "desc": descs.get(name, ""), "kinds": kinds,
            "kind": kinds[0] if kinds else None, "ranks": sorted(ranks),
            "last_seq": {str(r): s for r, s in seqs.items()},
            "behind": [r for r, s in seqs.items() if s is not None and s < ahead],
        }
    ranks = []
    for rank in sorted(dumps):
        entries = sorted(dumps[rank].get("entries", []), key=lambda e: e.get("record_id", 0))
        calls = []
        for e in entries[-last:] if last > 0 else []:
            g = groups.get(_pg_name(e), {})
            calls.append({
                "record_id": e.get("record_id"), "group": g.get("kind"), "torch_name": _pg_name(e),
                "seq": e.get("p2p_seq_id") if e.get("is_p2p") else e.get("collective_seq_id"),
                "op": e.get("profiling_name"), "sizes": e.get("input_sizes"),
                "dtypes": e.get("input_dtypes"), "state": e.get("state"),
                "time_created_ns": e.get("time_created_ns"),
            })
        coords = lay.coords(rank) if 0 <= rank < lay.world else None
        ranks.append({"rank": rank, "coords": coords, "entries": len(entries), "last": calls})
    return {"world": lay.world, "dumps": len(dumps), "groups": list(groups.values()), "ranks": ranks}


def _coords_text(coords):
    dims = ("tp", "cp", "ep", "dp", "pp")
    return " ".join("%s %d" % (d, coords[d]) for d in dims) if coords else "(not in the layout)"


def _behind_text(g):
    ahead = max(s for s in g["last_seq"].values() if s is not None)
    return "%s group %s: rank%s %s did not reach call #%d" % (
        g["kind"] or "torch group " + g["torch_name"], g["ranks"], "s" if len(g["behind"]) > 1 else "",
        " ".join(str(r) for r in g["behind"]), ahead)


def write_text(a, out):
    out.write("flight recorder: %d dumps of a world of %d\n" % (a["dumps"], a["world"]))
    for g in a["groups"]:
        if g["behind"]:
            out.write("  behind: %s\n" % _behind_text(g))
    for r in a["ranks"]:
        out.write("rank %d (%s): %d calls recorded, the last %d:\n"
                  % (r["rank"], _coords_text(r["coords"]), r["entries"], len(r["last"])))
        for c in r["last"]:
            out.write("  #%-4s %-10s %-22s %-12s %s\n" % (
                c["seq"], c["group"] or "pg " + c["torch_name"], c["op"], c["state"],
                " ".join("x".join(str(n) for n in s) for s in c["sizes"] or [])))


def write_html(a, out):
    """A fragment of llmp report's page: a heading, who is behind, a table per rank."""
    e = html.escape
    out.write("<h2>Flight recorder</h2>\n<p>PyTorch's flight recorder: %d dumps of a world of %d; "
              "each process group named by llmp's group with the same ranks.</p>\n"
              % (a["dumps"], a["world"]))
    behind = [g for g in a["groups"] if g["behind"]]
    if behind:
        out.write("<ul class=\"fr-behind\">\n")
        for g in behind:
            out.write("<li>%s</li>\n" % e(_behind_text(g)))
        out.write("</ul>\n")
    for r in a["ranks"]:
        out.write("<h3>rank %d: %s</h3>\n<table class=\"fr\"><tr><th>call</th><th>group</th>"
                  "<th>torch group</th><th>operation</th><th>sizes</th><th>state</th></tr>\n"
                  % (r["rank"], e(_coords_text(r["coords"]))))
        for c in r["last"]:
            sizes = " ".join("x".join(str(n) for n in s) for s in c["sizes"] or [])
            out.write("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n"
                      % (e(str(c["seq"])), e(c["group"] or "?"), e(c["torch_name"]), e(str(c["op"])),
                         e(sizes), e(str(c["state"]))))
        out.write("</table>\n")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m llmp.fr",
                                description="PyTorch flight recorder dumps (FRDIR/rank_N) named with "
                                            "llmp's groups and coordinates")
    p.add_argument("fr_dir", metavar="FRDIR")
    p.add_argument("--layout", required=True, help="the job's layout file (llmp plan --format json)")
    p.add_argument("--format", choices=("text", "json", "html"), default="text")
    p.add_argument("--last", type=int, default=8, help="calls shown per rank (default 8)")
    args = p.parse_args(argv)
    try:
        lay = _load_layout(args.layout)
        dumps = load_dir(args.fr_dir)
    except (DumpError, LayoutError) as e:
        print(e, file=sys.stderr)
        return 1
    if not dumps:
        print("llmp.fr: %s: no dumps (rank_N files)" % args.fr_dir, file=sys.stderr)
        return 1
    a = annotate(dumps, lay, args.last)
    if args.format == "json":
        json.dump(a, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif args.format == "html":
        write_html(a, sys.stdout)
    else:
        write_text(a, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: BSD-3-Clause
"""Check an NCCL_TOPO_FILE written by `llmp topo --nccl-topo` on its own,
without llmp's code:

    nccl_xml_check.py FIXTURE TYPE XMLFILE

1. The grammar NCCL 2.28.9's parser accepts (NVIDIA/nccl src/graph/xml.cc,
   xml.h): no declaration, no tab, each tag on one line, <system
   version="1">, at most 256 nodes, 128 children, 16 attributes,
   255-character values, and no gdr/dev/rank/sm (NCCL would trust them).
2. The tree: parsed back, it must be the one NCCL builds from the
   fixture's sysfs chains: a device's parent is the bridge two levels up
   its chain (the one right above it is a switch's downstream port, which
   NCCL skips), and so on up; the top under <cpu numaid=its NUMA node>.
Exit 1 with the first difference.
"""
import json
import re
import sys

TAG = re.compile(r'<(/?)([A-Za-z0-9_-]+)((?: +[A-Za-z0-9_-]+="[^"\n<]*")*) *(/?)>')
ATTR = re.compile(r'([A-Za-z0-9_-]+)="([^"]*)"')


def fail(what):
    sys.exit(f"nccl_xml_check: {what}")


def parse(text):
    if "\t" in text:
        fail("a tab")
    nodes, stack = [], []
    for lineno, line in enumerate(text.split("\n"), 1):
        rest = line.strip(" ")
        while rest:
            if rest.startswith("<!--"):
                end = rest.find("-->")
                if end < 0:
                    fail(f"line {lineno}: comment over lines")
                rest = rest[end + 3:].lstrip(" ")
                continue
            m = TAG.match(rest)
            if not m:
                fail(f"line {lineno}: not one whole tag: {rest!r}")
            closing, name, attrs, empty = m.groups()
            rest = rest[m.end():].lstrip(" ")
            if closing:
                if not stack or nodes[stack[-1]]["name"] != name:
                    fail(f"line {lineno}: </{name}> closes nothing")
                stack.pop()
                continue
            a = ATTR.findall(attrs)
            if len(a) > 16:
                fail(f"line {lineno}: {len(a)} attributes")
            for k, v in a:
                if len(k) > 255 or len(v) > 255:
                    fail(f"line {lineno}: a name or value over 255 characters")
                if k in ("gdr", "dev", "rank", "sm"):
                    fail(f"line {lineno}: attribute {k} NCCL must detect")
            parent = stack[-1] if stack else -1
            if parent < 0 and nodes:
                fail(f"line {lineno}: a second root")
            nodes.append({"name": name, "attrs": dict(a), "parent": parent})
            if sum(1 for n in nodes if n["parent"] == parent) > 128 and parent >= 0:
                fail(f"line {lineno}: over 128 children")
            if not empty:
                stack.append(len(nodes) - 1)
    if stack:
        fail("an element left open")
    if len(nodes) > 256:
        fail(f"{len(nodes)} nodes")
    if not nodes or nodes[0]["name"] != "system" or nodes[0]["attrs"].get("version") != "1":
        fail('the root is not <system version="1">')
    return nodes


def expected(t):
    """bus -> parent ("cpuN" or a bridge bus) from the fixture, NCCL's way."""
    want = {}
    for d in t.get("gpus", []) + t.get("hcas", []):
        chain, numa = d.get("pcie", []), d.get("numa", -1)
        numa = -1 if numa is None or numa < 0 else numa
        ups = [chain[i] for i in range(len(chain) - 2, -1, -2)]
        below = d["bus"]
        for up in ups + [f"cpu{numa}"]:
            if want.setdefault(below, up) != up:
                fail(f"{below} under {want[below]} and {up}")
            below = up
    return want


def main():
    fixture, tname, xml = sys.argv[1:4]
    with open(fixture) as f:
        t = json.load(f)["node_types"][tname]
    with open(xml) as f:
        nodes = parse(f.read())
    got = {}
    for n in nodes:
        if n["name"] != "pci":
            continue
        p = nodes[n["parent"]]
        got[n["attrs"]["busid"]] = p["attrs"]["busid"] if p["name"] == "pci" else f"cpu{p['attrs']['numaid']}"
    want = expected(t)
    if got != want:
        for k in sorted(set(got) | set(want)):
            if got.get(k) != want.get(k):
                fail(f"{k}: written under {got.get(k)}, NCCL would put it under {want.get(k)}")


main()

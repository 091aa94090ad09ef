# SPDX-License-Identifier: BSD-3-Clause
"""A topology file read the way doc/topology-json.md describes it, written
independently of llmp's C reader, for tests/topo.bats to compare against:

    topo_model.py hosts FILE            one line per host: HOST TYPE DOMAIN LEAF
    topo_model.py same FILE_A FILE_B    exit 0 if both describe the same cluster
    topo_model.py node FIXTURE TYPE OUT HOST [ADDR]
                                        OUT is what `llmp topo --format json` must
                                        print for a node of TYPE (discovery sees
                                        no NVML: model, uuid, nvlink, nvlinks and
                                        domain are left out)
    topo_model.py nvml FIXTURE TYPE OUT HOST [DOMAIN]
                                        the same with what tests/topology/fake_nvml.c
                                        answers (fake_sysfs.py wrote it): every GPU's
                                        model, UUID, NVLink and domain too
"""
import hashlib
import json
import re
import sys


def expand(hostlist):
    """Slurm host list expansion: one bracket per name, width of the lower bound."""
    names, depth, item = [], 0, ""
    items = []
    for ch in hostlist:
        if ch == "," and depth == 0:
            items.append(item)
            item = ""
            continue
        depth += {"[": 1, "]": -1}.get(ch, 0)
        item += ch
    items.append(item)
    for it in items:
        m = re.fullmatch(r"([^\[\]]*)\[([^\]]*)\]([^\[\]]*)", it)
        if not m:
            names.append(it)
            continue
        pre, ranges, post = m.groups()
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            hi = hi or lo
            width = len(lo) if lo.startswith("0") else 1
            for v in range(int(lo), int(hi) + 1):
                names.append(f"{pre}{v:0{width}d}{post}")
    return names


def load(path):
    with open(path) as f:
        return json.load(f)


def hosts(doc):
    """host -> (type name, domain, leaf switch, [switches up to the root])"""
    out = {}
    for entry in doc["nodes"]:
        for h in expand(entry["hosts"]):
            out[h] = [entry["type"], entry.get("domain", ""), "", []]
    parent = {}
    for sw in doc.get("switches", []):
        if "switches" in sw:
            for child in expand(sw["switches"]):
                parent[child] = sw["name"]
    for sw in doc.get("switches", []):
        if "nodes" in sw:
            for h in expand(sw["nodes"]):
                out[h][2] = sw["name"]
                up, at = [], sw["name"]
                while at in parent:
                    at = parent[at]
                    up.append(at)
                out[h][3] = up
    return out


def canonical_type(t, nvml=True):
    gpus = []
    for g in sorted(t.get("gpus", []), key=lambda g: g["bus"]):
        c = {"bus": g["bus"], "numa": g.get("numa", -1), "pcie": g.get("pcie", [])}
        if nvml:
            for k in ("model", "uuid", "nvlink", "nvlinks", "domain"):
                if k in g and not (k == "nvlinks" and g[k] == 0):
                    c[k] = g[k]
        gpus.append(c)
    hcas = []
    for h in t.get("hcas", []):
        ports = [{"port": p["port"], "state": p["state"], "gbps": p.get("gbps", 0),
                  "link": p.get("link", ""), "netdev": p.get("netdev", ""),
                  "subnet": p.get("subnet", "")} for p in h["ports"]]
        hcas.append({"name": h["name"], "bus": h.get("bus", ""), "numa": h.get("numa", -1),
                     "pcie": h.get("pcie", []), "ports": ports})
    return {"numa_nodes": t["numa_nodes"], "gpu": t.get("gpu", ""), "gpus": gpus, "hcas": hcas}


def same(a, b):
    ha, hb = hosts(a), hosts(b)
    if ha != hb:
        diff = sorted(h for h in set(ha) | set(hb) if ha.get(h) != hb.get(h))
        return "hosts differ: " + ", ".join(f"{h}: {ha.get(h)} vs {hb.get(h)}" for h in diff[:3])
    for h in ha:
        ta = canonical_type(a["node_types"][ha[h][0]])
        tb = canonical_type(b["node_types"][hb[h][0]])
        if ta != tb:
            return f"host {h}: node types differ"
    return None


def expected_nvml_gpu(g, domain):
    nv = g.get("nvlink", "none")
    c = {"bus": g["bus"], "numa": g.get("numa", -1), "pcie": g.get("pcie", []),
         "model": g.get("model", "NVIDIA GPU"),
         "uuid": g.get("uuid") or "GPU-fake-" + g["bus"].replace(":", "-").replace(".", "-"),
         "nvlink": nv}
    links = (g.get("nvlinks", 1) or 1) if nv == "nvswitch" else len(nv) if isinstance(nv, list) else 0
    if links:
        c["nvlinks"] = links
    if domain:
        c["domain"] = hashlib.md5(domain.encode()).hexdigest() + "-0"
    return c


def main():
    cmd = sys.argv[1]
    if cmd == "hosts":
        for h, (t, d, leaf, up) in hosts(load(sys.argv[2])).items():
            print(h, t, d or "-", leaf or "-", ",".join(up) or "-")
    elif cmd == "same":
        why = same(load(sys.argv[2]), load(sys.argv[3]))
        if why:
            print(why)
            sys.exit(1)
    elif cmd == "nvml":
        fixture, tname, out, host = sys.argv[2:6]
        domain = sys.argv[6] if len(sys.argv) > 6 else ""
        t = load(fixture)["node_types"][tname]
        want = [expected_nvml_gpu(g, domain) for g in sorted(t["gpus"], key=lambda g: g["bus"])]
        got = canonical_type(load(out)["node_types"][host])["gpus"]
        if want != got:
            print(json.dumps(want, indent=1))
            print(json.dumps(got, indent=1))
            sys.exit(1)
    elif cmd == "node":
        fixture, tname, out, host = sys.argv[2:6]
        addr = sys.argv[6] if len(sys.argv) > 6 else ""
        t = canonical_type(load(fixture)["node_types"][tname], nvml=False)
        got = canonical_type(load(out)["node_types"][host], nvml=False)
        if t != got:
            print(json.dumps(t, indent=1))
            print(json.dumps(got, indent=1))
            sys.exit(1)
        doc = load(out)
        expect_up = addr.split(".")[:-1] if addr else []
        h = hosts(doc)
        if list(h) != [host]:
            print("hosts:", list(h))
            sys.exit(1)
        leaf, up = h[host][2], h[host][3]
        chain = ([leaf] + up) if leaf else []
        if chain != list(reversed(expect_up)):
            print("switches:", chain, "expected", list(reversed(expect_up)))
            sys.exit(1)


main()

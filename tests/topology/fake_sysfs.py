# SPDX-License-Identifier: BSD-3-Clause
"""Build a copy of the sysfs files `llmp topo` reads for a node of a fixture's
node type, laid out as Linux lays them out (relative symlinks into
/sys/devices), so discovery can be tested without the hardware:

    fake_sysfs.py FIXTURE TYPE DIR [DOMAIN]

and DIR/nvml.tsv for tests/topology/fake_nvml.c: each GPU's name, UUID
(the fixture's, else one made from its bus), the bus ids its active NVLink
links reach (for "nvswitch", that many links to switch functions that are no
GPU), and its fabric cluster: md5(DOMAIN) when a DOMAIN is given, else zeros
(an HGX node: a completed fabric with no cluster). GPUs are listed in
reverse bus order: NVML's index is not CUDA's.

DIR/sys/devices/pci0000:BB/ROOT/SWITCH/DEV/{vendor,class,numa_node}
DIR/sys/bus/pci/devices/DEV -> ../../../devices/...
DIR/sys/class/infiniband/HCA -> ../../devices/.../DEV/infiniband/HCA
    .../HCA/device -> ../../../DEV, ports/P/{state,rate,link_layer},
    ports/P/gid_attrs/ndevs/0, ports/P/gids/0 (a port's "subnet", then a GUID)
DIR/sys/devices/system/node/nodeN
Also a CPU-side device that is not a GPU (vendor 0x8086) and an NVIDIA audio
function (class 0x0403), which discovery must pass over.
"""
import hashlib
import json
import os
import sys

STATES = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4, "ACTIVE_DEFER": 5}


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def link(target, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(os.path.relpath(target, os.path.dirname(path)), path)


def device_dir(sysfs, dev):
    chain = dev.get("pcie", [])
    top = chain[0] if chain else dev["bus"]
    root_bus = "pci" + top[:7]  # pciDDDD:BB
    return os.path.join(sysfs, "devices", root_bus, *chain, dev["bus"])


def pci_device(sysfs, dev, vendor, cls):
    d = device_dir(sysfs, dev)
    write(os.path.join(d, "vendor"), vendor)
    write(os.path.join(d, "class"), cls)
    write(os.path.join(d, "numa_node"), str(dev.get("numa", -1)))
    link(d, os.path.join(sysfs, "bus", "pci", "devices", dev["bus"]))
    return d


def nvml_bus(bus):
    dom, rest = bus.split(":", 1)
    return f"{int(dom, 16):08X}:{rest.upper()}"


def gpu_uuid(g):
    return g.get("uuid") or "GPU-fake-" + g["bus"].replace(":", "-").replace(".", "-")


def write_nvml(t, path, domain):
    cluster = hashlib.md5(domain.encode()).hexdigest() if domain else "0" * 32
    lines = []
    for g in sorted(t.get("gpus", []), key=lambda g: g["bus"], reverse=True):
        nv = g.get("nvlink", "none")
        if nv == "nvswitch":
            targets = [f"00000000:{0xe0 + k:02X}:00.0" for k in range(g.get("nvlinks", 1) or 1)]
        elif isinstance(nv, list):
            targets = [nvml_bus(b) for b in nv]
        else:
            targets = []
        lines.append("\t".join([nvml_bus(g["bus"]), g.get("model", "NVIDIA GPU"), gpu_uuid(g), cluster,
                                "0", ",".join(targets) or "-"]))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    fixture, tname, out = sys.argv[1:4]
    domain = sys.argv[4] if len(sys.argv) > 4 else ""
    with open(fixture) as f:
        t = json.load(f)["node_types"][tname]
    sysfs = os.path.join(out, "sys")
    for n in range(t["numa_nodes"]):
        os.makedirs(os.path.join(sysfs, "devices", "system", "node", f"node{n}"))
    os.makedirs(os.path.join(sysfs, "devices", "system", "node", "possible_not_a_node"), exist_ok=True)
    for g in t.get("gpus", []):
        pci_device(sysfs, g, "0x10de", "0x030200")
        # The GPU's audio function: NVIDIA, but not a display controller.
        audio = dict(g, bus=g["bus"][:-1] + "1")
        pci_device(sysfs, audio, "0x10de", "0x040300")
    pci_device(sysfs, {"bus": "0000:00:1f.0", "numa": 0}, "0x8086", "0x060100")
    for h in t.get("hcas", []):
        d = pci_device(sysfs, h, "0x15b3", "0x020700")
        ib = os.path.join(d, "infiniband", h["name"])
        link(d, os.path.join(ib, "device"))
        link(ib, os.path.join(sysfs, "class", "infiniband", h["name"]))
        for p in h["ports"]:
            pd = os.path.join(ib, "ports", str(p["port"]))
            state = p["state"]
            write(os.path.join(pd, "state"), f"{STATES.get(state, 0)}: {state}")
            if p.get("gbps"):
                write(os.path.join(pd, "rate"), f"{p['gbps']} Gb/sec (4X NDR)")
            if p.get("link"):
                write(os.path.join(pd, "link_layer"), p["link"])
            if p.get("netdev"):
                write(os.path.join(pd, "gid_attrs", "ndevs", "0"), p["netdev"])
            if p.get("subnet"):  # the prefix, then a port GUID of this port's own
                guid = hashlib.sha256(f"{h['name']}/{p['port']}".encode()).hexdigest()[:16]
                write(os.path.join(pd, "gids", "0"),
                      p["subnet"] + ":" + ":".join(guid[i:i + 4] for i in range(0, 16, 4)))
    write_nvml(t, os.path.join(out, "nvml.tsv"), domain)


main()

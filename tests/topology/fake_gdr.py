# SPDX-License-Identifier: BSD-3-Clause
"""Add to a tree of tests/topology/fake_sysfs.py what `llmp topo --gdr`
reads (topology/discover/gdr_read.c), as Linux lays it out:

    fake_gdr.py DIR FACT...

    peermem            sys/module/nvidia_peermem/version
    nv_peer_mem        sys/kernel/mm/memory_peers/nv_mem/version
    kernel=REL         proc/sys/kernel/osrelease
    driver=open|proprietary
                       proc/driver/nvidia/version, with the banner of each
    uverbs             dev/infiniband/uverbs0
    iommu=BUS:TYPE     sys/kernel/iommu_groups/N/type, BUS's iommu_group link
    acs=BUS:CTRL       BUS's 4096-byte config: an AER capability at 0x100,
                       ACS (id 0x0d) at 0x148 with control CTRL (hex)
    config64=BUS       BUS's config as an unprivileged reader sees it: 64 bytes
    ids=BUS:V:D:SV:SD  BUS's vendor, device, subsystem_vendor, subsystem_device (hex)

Every bridge of the tree is linked into sys/bus/pci/devices as Linux does.
"""
import os
import struct
import sys


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def device_dirs(sysfs):
    found = {}
    for dirpath, dirnames, _ in os.walk(os.path.join(sysfs, "devices")):
        for d in dirnames:
            if len(d) == 12 and d[4] == ":" and d[7] == ":":
                found[d] = os.path.join(dirpath, d)
    return found


def main():
    out = sys.argv[1]
    sysfs = os.path.join(out, "sys")
    devs = device_dirs(sysfs)
    bus_dir = os.path.join(sysfs, "bus", "pci", "devices")
    for bus, d in devs.items():
        link = os.path.join(bus_dir, bus)
        if not os.path.lexists(link):
            os.symlink(os.path.relpath(d, bus_dir), link)
    group = 0
    for fact in sys.argv[2:]:
        key, _, value = fact.partition("=")
        if key == "peermem":
            write(os.path.join(sysfs, "module", "nvidia_peermem", "version"), "1.0\n")
        elif key == "nv_peer_mem":
            write(os.path.join(sysfs, "kernel", "mm", "memory_peers", "nv_mem", "version"), "1.3-0\n")
        elif key == "kernel":
            write(os.path.join(out, "proc", "sys", "kernel", "osrelease"), value + "\n")
        elif key == "driver":
            kind = "NVIDIA UNIX Open Kernel Module for x86_64" if value == "open" else \
                "NVIDIA UNIX x86_64 Kernel Module"
            write(os.path.join(out, "proc", "driver", "nvidia", "version"),
                  f"NVRM version: {kind}  570.124.06  Release Build\nGCC version:  gcc 12\n")
        elif key == "uverbs":
            write(os.path.join(out, "dev", "infiniband", "uverbs0"), "")
        elif key == "iommu":
            bus, _, kind = value.rpartition(":")
            g = os.path.join(sysfs, "kernel", "iommu_groups", str(group))
            write(os.path.join(g, "type"), kind + "\n")
            os.symlink(os.path.relpath(g, devs[bus]), os.path.join(devs[bus], "iommu_group"))
            group += 1
        elif key == "acs":
            bus, _, ctrl = value.rpartition(":")
            cfg = bytearray(4096)
            cfg[0:4] = struct.pack("<HH", 0x10b5, 0x8747)
            cfg[0x100:0x104] = struct.pack("<I", 0x0001 | 1 << 16 | 0x148 << 20)  # AER, next 0x148
            cfg[0x148:0x14c] = struct.pack("<I", 0x000d | 1 << 16)  # ACS, last
            cfg[0x14e:0x150] = struct.pack("<H", int(ctrl, 16))
            write(os.path.join(devs[bus], "config"), bytes(cfg))
        elif key == "ids":
            bus, v, dev, sv, sd = value[:12], *value[13:].split(":")
            for name, x in (("vendor", v), ("device", dev), ("subsystem_vendor", sv), ("subsystem_device", sd)):
                write(os.path.join(devs[bus], name), f"0x{x}\n")
        elif key == "config64":
            write(os.path.join(devs[value], "config"), bytes(64))
        else:
            sys.exit(f"fake_gdr.py: unknown fact {fact!r}")


main()

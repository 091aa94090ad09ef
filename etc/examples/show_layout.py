#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Print where this task sits in the 4D layout, as a training script sees it.

Reads only what the llm_parallel plugin gives every task: the LLMP_*
variables, PyTorch's env:// variables and the JSON layout file.
"""
import json
import os

env = os.environ
rank = int(env["RANK"])
with open(env["LLMP_LAYOUT_FILE"]) as f:
    layout = json.load(f)


def group_of(kind):
    """The group of this kind that holds this rank, from the layout file."""
    for group in layout["groups"][kind]:
        if rank in group:
            return group
    return []


coords = " ".join(f"{d}={env['LLMP_' + d.upper() + '_RANK']}" for d in ("tp", "cp", "dp", "pp"))
groups = " ".join(f"{k}={group_of(k)}".replace(" ", "") for k in ("tp", "dp", "pp"))
print(f"rank {rank:2d} on {env['SLURMD_NODENAME']} gpu {env.get('CUDA_VISIBLE_DEVICES', '-')}"
      f" | {coords} | {groups} | master {env['MASTER_ADDR']}:{env['MASTER_PORT']}")
